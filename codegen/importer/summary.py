"""The per-page summary `aclnngen import` prints: what was read, what is TODO, what was not parsed."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .facts import PageFacts

MAX_LISTED = 50  # entries of one list the summary prints; the rest are counted


def _listed(items: list[str]) -> str:
    shown = "".join(f"\n    - {item}" for item in items[:MAX_LISTED])
    return shown + (f"\n    - ... and {len(items) - MAX_LISTED} more" if len(items) > MAX_LISTED else "")


def summary_lines(facts: PageFacts, draft: dict[str, Any], target: Path) -> list[str]:
    supported = [f for f, ok in facts.products.items() if ok]
    unsupported = [f for f, ok in facts.products.items() if not ok]
    read = (
        f"{len(facts.products)} products ({len(supported)} supported{', ' + str(len(unsupported)) + ' not' if unsupported else ''}"
        f"{', ' + facts.product_format if facts.product_format else ''}), "
        f"{len(facts.prototypes)} prototypes, {len(facts.params)} table parameters, "
        f"{len(facts.dtype_notes)} per-product notes, {len(facts.return_codes)} return codes, "
        f"{len(facts.latex)} formula blocks"
    )
    todo = draft.get("todo", [])
    lines = [f"{facts.path} ({facts.form}) -> {target}", f"  read: {read}"]
    lines.append(f"  TODO: {len(todo)}" + _listed([f"{t['at']}: {t['note']}" for t in todo]))
    if facts.defects:
        lines.append(f"  defects: {len(facts.defects)}" + _listed([f"{k}: {n}" for k, n in facts.defects]))
    if facts.unparsed:
        lines.append(f"  not parsed: {len(facts.unparsed)}" + _listed(facts.unparsed))
    if facts.unsupported_types:
        lines.append(f"  unsupported: {len(facts.unsupported_types)}" + _listed(facts.unsupported_types))
    return lines


def summary_dict(facts: PageFacts, draft: dict[str, Any], target: Path) -> dict[str, Any]:
    """The same summary for `--json` (docs/cli.md)."""
    return {
        "page": str(facts.path),
        "form": facts.form,
        "draft": str(target),
        "products": {family: bool(ok) for family, ok in facts.products.items()},
        "prototypes": len(facts.prototypes),
        "parameters": len(facts.params),
        "return_codes": len(facts.return_codes),
        "todo": [{"at": t["at"], "note": t["note"]} for t in draft.get("todo", [])],
        "defects": [{"kind": k, "note": n} for k, n in facts.defects],
        "not_parsed": list(facts.unparsed),
        "unsupported": list(facts.unsupported_types),
        "tier": draft.get("tier", "full"),
    }
