"""The release view of the catalog: every API between two tags of the vendor's repositories.

From two surveys (codegen/catalog.py, one per tag): the APIs added and removed, the first-phase
prototypes that changed (a breaking change: a release maintainer's first question), and for an API
imported at both tags what `aclnngen diff` finds between its two specs (products and dtypes gained
or lost, rules, return codes), each classed breaking or compatible (codegen/specdiff.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import yaml

from . import cdecl, specdiff
from .catalog import CatalogReport


def _canonical(text: str) -> str:
    """A prototype as cdecl prints it (spacing and `T *x` / `T* x` alike); the text when unparsable."""
    try:
        return str(cdecl.parse_prototype(text))
    except cdecl.PrototypeError:
        return " ".join(text.split())


@dataclass
class ApiChange:
    api: str
    repo: str
    prototype: tuple[str, str] | None = None  # (old, new) when the first-phase prototype changed
    changes: list[specdiff.Change] = field(default_factory=list)

    @property
    def breaking(self) -> bool:
        return self.prototype is not None or any(c.kind == specdiff.BREAKING for c in self.changes)


@dataclass
class CatalogChanges:
    old: str
    new: str
    added: list[tuple[str, str]] = field(default_factory=list)  # (repo, api)
    removed: list[tuple[str, str]] = field(default_factory=list)
    changed: list[ApiChange] = field(default_factory=list)
    compared: int = 0  # APIs imported at both tags


# What a draft reads as a hint for a person (merge.py notes them, never merges them): a change
# between two drafts' rules says how the page is written as much as what the op checks.
HINTS = ("rule",)


def comparable(old_data: dict, new_data: dict) -> list[specdiff.Change]:
    """The changes between two drafts of one API that are facts of the pages, not of their format:
    a return-code table either page's reader could not read (TODO) is not compared, and a rule
    change is a hint, never breaking."""
    unread = any(not isinstance(d.get("return_codes"), list) for d in (old_data, new_data))
    out = []
    for c in specdiff.diff(specdiff.view(old_data), specdiff.view(new_data)):
        if c.what == "doc" or (c.what == "return_code" and unread):
            continue
        out.append(replace(c, kind=HINT) if c.what in HINTS else c)
    return out


HINT = "hint"


def _by_api(report: CatalogReport) -> dict[str, object]:
    return {r.api: r for r in report.results if r.api}


def compare(old: CatalogReport, new: CatalogReport) -> CatalogChanges:
    before, after = _by_api(old), _by_api(new)
    out = CatalogChanges(old.tag, new.tag)
    out.added = sorted((after[a].repo, a) for a in set(after) - set(before))
    out.removed = sorted((before[a].repo, a) for a in set(before) - set(after))
    for api in sorted(set(before) & set(after)):
        a, b = before[api], after[api]
        change = ApiChange(api, b.repo)
        if a.prototype and b.prototype and _canonical(a.prototype) != _canonical(b.prototype):
            change.prototype = (a.prototype, b.prototype)
        if a.spec_text and b.spec_text:
            out.compared += 1
            old_data, new_data = yaml.safe_load(a.spec_text), yaml.safe_load(b.spec_text)
            change.changes = comparable(old_data, new_data)
        if change.prototype or change.changes:
            out.changed.append(change)
    return out


def markdown(changes: CatalogChanges) -> str:
    """docs/catalog-changes.md: deterministic, breaking changes first."""
    breaking = [c for c in changes.changed if c.breaking]
    lines = [
        f"# The vendor catalog from {changes.old} to {changes.new}",
        "",
        "<!-- Written by `aclnngen catalog --since OLD --tag NEW --write-changes FILE`; do not edit by hand. -->",
        "",
        "| | APIs |",
        "|---|---|",
        f"| added | {len(changes.added)} |",
        f"| removed | {len(changes.removed)} |",
        f"| imported at both tags and compared | {changes.compared} |",
        f"| with a breaking change (a prototype changed, a product, dtype or default lost, a check added) | {len(breaking)} |",
        f"| with compatible changes only | {len(changes.changed) - len(breaking)} |",
        "",
    ]
    if changes.removed:
        lines += ["## Removed", ""] + [f"- `aclnn{api}` ({repo})" for repo, api in changes.removed] + [""]
    prototypes = [c for c in changes.changed if c.prototype]
    if prototypes:
        lines += ["## Prototypes changed", ""]
        for c in prototypes:
            lines += [
                f"- `aclnn{c.api}` ({c.repo})",
                f"  - before: `{c.prototype[0]}`",
                f"  - after: `{c.prototype[1]}`",
            ]
        lines.append("")
    for title, kind in (("Breaking changes", specdiff.BREAKING), ("Compatible changes", specdiff.COMPATIBLE)):
        rows = [(c, d) for c in changes.changed for d in c.changes if d.kind == kind]
        if rows:
            lines += [f"## {title}", "", "| API | what | change |", "|---|---|---|"]
            lines += [f"| `aclnn{c.api}` | {d.what} | {d.message} |" for c, d in rows]
            lines.append("")
    if changes.added:
        lines += ["## Added", ""] + [f"- `aclnn{api}` ({repo})" for repo, api in changes.added] + [""]
    return "\n".join(lines)
