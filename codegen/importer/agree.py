"""Does a draft agree with a curated spec at the draft's release? In the fields a page states
plainly: op name, parameters (name, role, C type, order), supported products, dtypes and tensor
formats per family. The spec's `page_prototypes` stand for the page where the page and header differ, and a
disagreement is excused when the spec records a defect of that kind that holds at the release and
names the parameter or family (so a known page error is not mistaken for a spec error)."""

from __future__ import annotations

from typing import Any

from ..specdiff import Change, diff, holds, view

COMPARED = ("name", "parameter", "product", "dtype", "format")
_DEFECT_KINDS = {
    "name": ("name",),
    "parameter": ("prototype", "name"),
    "product": ("product",),
    "dtype": ("dtype", "product"),
    "format": ("rule", "other"),  # no kind of its own: a format is a check of the tensor
}


def _as_page(spec: dict[str, Any]) -> dict[str, Any]:
    page = dict(spec)
    prototypes = dict(spec.get("prototypes") or {})
    prototypes.update({k: v for k, v in (spec.get("page_prototypes") or {}).items() if v})
    page["prototypes"] = prototypes
    return page


def _excused(change: Change, spec: dict[str, Any], release: str) -> bool:
    for defect in spec.get("defects") or []:
        if (
            not isinstance(defect, dict)
            or defect.get("kind") not in _DEFECT_KINDS[change.what]
            or not holds(defect, release)
        ):
            continue
        # the defect names the family (product, dtype) or the parameter (name, prototype)
        named = change.family if change.what in ("product", "dtype") else change.where
        if named and named in str(defect.get("note", "")):
            return True
    return False


def disagreements(spec: dict[str, Any], draft: dict[str, Any], release: str) -> tuple[list[Change], list[Change]]:
    """(unexcused, excused) differences between the spec at `release` and the draft."""
    changes = [c for c in diff(view(_as_page(spec), release), view(draft, None)) if c.what in COMPARED]
    excused = [c for c in changes if _excused(c, spec, release)]
    return [c for c in changes if c not in excused], excused
