"""The one warning per op when the installed CANN release precedes every release its spec describes
(`core.releases.known_releases`): the op, or the facts its binding checks, may not exist there yet.
An installed release newer than every release a spec describes is the ordinary case (a spec
records a page at a release; later releases keep its facts until a spec says otherwise): the
spec's newest facts are used, without a warning."""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from typing import Any

from aclnngen.core.releases import CannVersion, as_release, known_releases, vendor_tag


class CannReleaseWarning(UserWarning):
    """The installed CANN release precedes every release a spec's facts cover."""


_warned: set[str] = set()


def check_release(meta: Mapping[str, Any], installed: str | None) -> str | None:
    """Warn once per op when `installed` precedes every release the spec describes; returns the
    message (None when the spec describes it or an older one, when unknown or already warned)."""
    installed = as_release(installed)
    if installed is None or meta["name"] in _warned:
        return None
    oldest = known_releases(meta)[0]
    if oldest <= CannVersion(installed):
        return None
    _warned.add(meta["name"])
    message = (
        f"aclnn{meta['name']}: the installed CANN {vendor_tag(installed)} precedes every release its spec "
        f"describes (the oldest is {vendor_tag(oldest.text)}): the op or the facts it is checked against may "
        f"not exist there; the facts of {vendor_tag(oldest.text)} are used. Install CANN {vendor_tag(oldest.text)} "
        f"or newer (on the simulator: ACLNNGEN_SIM_CANN={vendor_tag(oldest.text)})"
    )
    warnings.warn(CannReleaseWarning(message), stacklevel=3)
    return message
