"""Vendor repository tags (`v8.5.0`, `v9.2.0-beta.1`, `v9.0.0-rc.1`, `v9.1.0.pre`) -> CANN release
spellings the spec language accepts, in the vendor's order: a beta precedes the first release
candidate, as an `alpha` build does in the spec language, so `v9.2.0-beta.1` becomes
`9.2.RC1.alpha001` (before `v9.2.0-rc.1`, `9.2.RC1`). The mapping
itself lives in the runtime (runtime/releases.py), which meets the same spellings at run time."""

from __future__ import annotations

from aclnngen.runtime.releases import as_release


class ReleaseError(ValueError):
    user_facing = True


def release_of(text: str) -> str:
    """A release spelling, or a vendor tag turned into one; ReleaseError when it is neither."""
    release = as_release(text)
    if release is None:
        raise ReleaseError(f"{text!r} is neither a CANN release (8.5.0, 8.0.RC1) nor a vendor tag (v9.2.0-beta.1)")
    return release
