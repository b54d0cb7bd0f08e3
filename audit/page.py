"""The page itself (`aclnngen audit --page PAGE`): the page read through the importer and set
against the spec and the header's prototypes.

- every contradiction the importer finds inside the page (its parameter table against its own
  prototype, its dtype notes against its product list) is a page defect;
- every fact the page states that the spec, at the page's release, does not hold (op name,
  parameters, roles, C types, products, dtypes and tensor formats per family) is a mismatch, unless the spec records
  it as a page defect (then it is reported as that defect, seen);
- the page's prototypes against the header's (the spec's `prototypes`), parsed;
- the rules the page hints and the boundaries its formula draws, against the spec's
  (audit/page_hints.py).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from aclnngen.codegen.cdecl import PrototypeError, diff_prototypes, parse_prototype
from aclnngen.codegen.importer.agree import disagreements
from aclnngen.codegen.importer.draft import build_draft
from aclnngen.codegen.importer.pages import read_page
from aclnngen.codegen.products import ProductTable

from . import page_hints
from .findings import Finding


def page_findings(page: Path, spec: dict[str, Any], release: str, products: ProductTable) -> tuple[list[Finding], int]:
    """(findings, claims checked) of one page against its op's spec (a plain dict, as in YAML)."""
    facts = read_page(page, products, release)
    draft = build_draft(facts, products)
    op = spec["name"]
    findings = [
        Finding(op, "page", f"{kind}: {note}", "page_defect", "page", None, "the page agrees with itself", note)
        for kind, note in facts.defects
    ]
    unexcused, excused = disagreements(spec, draft, release)
    for change in unexcused:
        findings.append(
            Finding(
                op,
                "page",
                f"{change.what} {change.where}: {change.message}",
                "mismatch",
                "page",
                change.family,
                "the spec's fact at " + release,
                change.message,
            )
        )
    for change in excused:
        findings.append(
            Finding(
                op,
                "page",
                f"{change.what} {change.where}: {change.message}",
                "page_defect",
                "page",
                change.family,
                "a defect the spec records",
                change.message,
            )
        )
    hinted = page_hints.rule_findings(spec, draft, release)
    boundaries, compared = page_hints.boundary_findings(spec, facts.latex, release)
    findings += hinted + boundaries
    checked = (
        len(facts.params) + len(facts.products) + len(facts.return_codes) + len(draft.get("rules") or ()) + compared
    )
    for which, header_text in (spec.get("prototypes") or {}).items():
        page_text = (draft.get("prototypes") or {}).get(which)
        if not isinstance(page_text, str) or not page_text.startswith("aclnnStatus"):
            continue
        checked += 1
        try:
            differences = diff_prototypes(parse_prototype(header_text), parse_prototype(page_text))
        except PrototypeError as exc:
            differences = [f"the page's prototype does not parse: {exc}"]
        for difference in differences:
            findings.append(
                Finding(
                    op, "page", f"{which} prototype: {difference}", "page_defect", "page", None, header_text, page_text
                )
            )
    return findings, checked
