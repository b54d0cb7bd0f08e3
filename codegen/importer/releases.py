"""Vendor repository tags (`v8.5.0`, `v9.2.0-beta.1`, `v9.0.0-rc.1`, `v9.1.0.pre`) -> CANN release
spellings the spec language accepts. A beta or pre-release build precedes its release, as an
`alpha` build does in the spec language, so `v9.2.0-beta.1` becomes `9.2.0.alpha001`."""

from __future__ import annotations

import re

from aclnngen.runtime.versions import is_version

_TAG = re.compile(r"^v?(\d+)\.(\d+)\.(\d+)(?:-(beta|rc)\.(\d+))?(\.pre)?$")


class ReleaseError(ValueError):
    user_facing = True


def release_of(text: str) -> str:
    """A release spelling, or a vendor tag turned into one; ReleaseError when it is neither."""
    if is_version(text):
        return text
    match = _TAG.match(text)
    if not match:
        raise ReleaseError(f"{text!r} is neither a CANN release (8.5.0, 8.0.RC1) nor a vendor tag (v9.2.0-beta.1)")
    major, minor, patch, stage, number, pre = match.groups()
    if stage == "rc":
        return f"{major}.{minor}.RC{number}" + (".alpha000" if pre else "")
    if stage == "beta":
        return f"{major}.{minor}.{patch}.alpha{int(number):03d}"
    return f"{major}.{minor}.{patch}" + (".alpha999" if pre else "")
