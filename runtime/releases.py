"""Which CANN releases an op's spec describes, and the one warning per op when the installed
release precedes all of them (the op, or the facts its binding checks, may not exist there yet).
An installed release newer than every release a spec describes is the ordinary case (a spec
records a page at a release; later releases keep its facts until a spec says otherwise): the
spec's newest facts are used, without a warning."""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from typing import Any

from .versions import CannVersion, as_release, is_version, vendor_tag


class CannReleaseWarning(UserWarning):
    """The installed CANN release precedes every release a spec's facts cover."""


_warned: set[str] = set()


def known_releases(meta: Mapping[str, Any]) -> list[CannVersion]:
    """The page's release and every release a versioned fact starts or ends at, oldest first."""
    found = {meta.get("cann_version")}

    def visit(node: Any) -> None:
        if isinstance(node, Mapping):
            for key in ("since", "until"):
                value = node.get(key)
                if isinstance(value, str):
                    found.add(value)
            for value in node.values():
                visit(value)
        elif isinstance(node, (list, tuple)):
            for value in node:
                visit(value)

    visit(meta)
    return sorted({CannVersion(v) for v in found if is_version(v)})


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
