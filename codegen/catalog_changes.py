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


def _abi(text: str):
    """A prototype as the ABI and a keyword binding see it: names and types, top-level const on a
    by-value parameter dropped (ABI-neutral); the text's words when unparsable."""
    try:
        fn = cdecl.parse_prototype(text)
    except cdecl.PrototypeError:
        return " ".join(text.split())
    return tuple((str(p.type.without_top_const()), p.name) for p in fn.params)


def prototype_change(old: str, new: str) -> str | None:
    """What changed between two first-phase prototypes, briefly, or None when they are the same
    function (spacing, star placement and top-level const aside)."""
    before, after = _abi(old), _abi(new)
    if before == after:
        return None
    if isinstance(before, str) or isinstance(after, str):
        return "prototype rewritten"
    parts = []
    if len(before) != len(after):
        gone = [n for _, n in before if n not in {m for _, m in after}]
        came = [n for _, n in after if n not in {m for _, m in before}]
        parts += [f"{n} removed" for n in gone] + [f"{n} added" for n in came]
        return "; ".join(parts) or f"{len(before)} -> {len(after)} parameters"
    for (old_type, old_name), (new_type, new_name) in zip(before, after):
        if old_name != new_name:
            parts.append(f"{old_name} renamed {new_name}")
        if old_type != new_type:
            parts.append(f"{new_name}: `{old_type}` -> `{new_type}`")
    return "; ".join(parts)


@dataclass
class ApiChange:
    api: str
    repo: str
    prototype: tuple[str, str] | None = None  # (old, new) when the first-phase prototype changed
    prototype_note: str = ""  # what changed in it, briefly
    changes: list[specdiff.Change] = field(default_factory=list)

    @property
    def breaking(self) -> bool:
        return self.prototype is not None or any(c.kind == specdiff.BREAKING for c in self.changes)

    def of_kind(self, kind: str) -> list[specdiff.Change]:
        return [c for c in self.changes if c.kind == kind]


@dataclass
class CatalogChanges:
    old: str
    new: str
    added: list[tuple[str, str]] = field(default_factory=list)  # (repo, api)
    removed: list[tuple[str, str]] = field(default_factory=list)
    changed: list[ApiChange] = field(default_factory=list)
    compared: int = 0  # APIs imported at both tags


# What a draft reads as a hint for a person (merge.py notes them, never merges them): a change
# between two drafts' rules says how the page is written as much as what the op checks, and so
# does a return-code row the draft keeps because a rule of its kind was read.
HINT = "hint"
_FACT_CHECKS = ("null_pointer", "dtype")


def _hint(change: specdiff.Change) -> bool:
    return change.what == "rule" or (change.what == "return_code" and change.where not in _FACT_CHECKS)


def _in_prototype(change: specdiff.Change) -> bool:
    """A parameter renamed or retyped: the prototype comparison says it, ABI-neutral const aside."""
    return change.what == "parameter" and (" retyped " in change.message or " renamed " in change.message)


def _unread(data: dict) -> set[tuple[str, str]]:
    """(`dtype` or `format`, parameter) for each tensor whose dtypes or formats the page's reader
    could not read (a TODO): what the other page says of it is no change."""
    out = set()
    for p in data.get("parameters") or []:
        if isinstance(p, dict) and p.get("role") in ("input", "output"):
            for what, key in (("dtype", "dtypes"), ("format", "formats")):
                if key in p and not isinstance(p[key], list):
                    out.add((what, p.get("name")))
    return out


def comparable(old_data: dict, new_data: dict) -> list[specdiff.Change]:
    """The changes between two drafts of one API that are facts of the pages, not of their format:
    a return-code table or a tensor's dtypes or formats either page's reader could not read (TODO)
    are not compared, and a rule
    change (or a row that tests a rule) is a hint, never breaking."""
    unread = any(not isinstance(d.get("return_codes"), list) for d in (old_data, new_data))
    unread_params = _unread(old_data) | _unread(new_data)
    out = []
    for c in specdiff.diff(specdiff.view(old_data), specdiff.view(new_data)):
        if c.what == "doc" or (c.what == "return_code" and unread) or _in_prototype(c):
            continue
        if (c.what, c.where) in unread_params:
            continue
        out.append(replace(c, kind=HINT) if _hint(c) else c)
    return out


def _by_api(report: CatalogReport) -> dict[str, object]:
    return {r.api: r for r in report.results if r.api}


def _page_side(a, b, old_tag: str, new_tag: str) -> str:
    """Where a side's prototype is its page's (no header declared the API at that tag: the build
    wrote it), said, so a page-against-header difference is not read as the ABI's change."""
    pages = [tag for r, tag in ((a, old_tag), (b, new_tag)) if r.header != "equal"]
    if not pages:
        return ""
    return f" (the page's prototype at {' and '.join(pages)}: no header there to take it from)"


def compare(old: CatalogReport, new: CatalogReport) -> CatalogChanges:
    before, after = _by_api(old), _by_api(new)
    out = CatalogChanges(old.tag, new.tag)
    out.added = sorted((after[a].repo, a) for a in set(after) - set(before))
    out.removed = sorted((before[a].repo, a) for a in set(before) - set(after))
    for api in sorted(set(before) & set(after)):
        a, b = before[api], after[api]
        change = ApiChange(api, b.repo)
        note = prototype_change(a.prototype, b.prototype) if a.prototype and b.prototype else None
        if note:
            note += _page_side(a, b, old.tag, new.tag)
            change.prototype, change.prototype_note = (a.prototype, b.prototype), note
        if a.spec_text and b.spec_text:
            out.compared += 1
            old_data, new_data = yaml.safe_load(a.spec_text), yaml.safe_load(b.spec_text)
            change.changes = comparable(old_data, new_data)
        if change.prototype or change.changes:
            out.changed.append(change)
    return out


COMMAND = "aclnngen diff --since OLD_TAG --tag NEW_TAG --write docs/catalog-changes.md"


def _cell(items: list[str], limit: int = 4) -> str:
    """Items joined for one table cell, the rest counted (a row stays one line)."""
    text = "; ".join(items[:limit]) + (f"; and {len(items) - limit} more" if len(items) > limit else "")
    return text.replace("|", "/")


def _grouped(changes: list[specdiff.Change]) -> list[str]:
    """`x on a2: bf16 removed` and `x on a3: bf16 removed` read as `x on a2, a3: bf16 removed`."""
    families: dict[tuple[str, str], list[str]] = {}
    for c in changes:
        head, sep, tail = c.message.partition(": ")
        if c.family and sep and head.endswith(f" on {c.family}"):
            families.setdefault((head.removesuffix(f" on {c.family}"), tail), []).append(c.family)
        else:
            families.setdefault((c.message, ""), [])
    return [f"{what} on {', '.join(fams)}: {tail}" if fams else what for (what, tail), fams in families.items()]


def _losses(c: ApiChange) -> list[str]:
    out = [f"prototype: {c.prototype_note}"] if c.prototype else []
    return out + _grouped(c.of_kind(specdiff.BREAKING))


def markdown(changes: CatalogChanges) -> str:
    """docs/catalog-changes.md: counts, then what breaks (one row per API), then what is gained; deterministic."""
    breaking = [c for c in changes.changed if c.breaking]
    gains = [c for c in changes.changed if c.of_kind(specdiff.COMPATIBLE)]
    hints = [c for c in changes.changed if c.of_kind(HINT)]
    lost = {
        what: sum(1 for c in breaking if any(d.what == what for d in c.of_kind(specdiff.BREAKING)))
        for what in ("product", "dtype", "format", "parameter", "default", "return_code")
    }
    lines = [
        f"# aclnn APIs from {changes.old} to {changes.new}",
        "",
        f"<!-- Written by `{COMMAND}`; do not edit by hand. -->",
        "",
        "Every aclnn API the vendor's pages document at both tags (codegen/catalog_changes.py): what a",
        "binding user must act on first, then what an upgrade gains. Rule and rule-check differences are",
        "only counted: a page's rules are hints the importer drafts for a person to confirm.",
        "",
        "| | APIs |",
        "|---|---|",
        f"| removed | {len(changes.removed)} |",
        f"| prototype changed | {sum(1 for c in changes.changed if c.prototype)} |",
        f"| products lost | {lost['product']} |",
        f"| dtypes lost | {lost['dtype']} |",
        f"| formats lost | {lost['format']} |",
        f"| parameters or defaults changed | {max(lost['parameter'], lost['default'])} |",
        f"| return codes added (a new check) | {lost['return_code']} |",
        f"| **with a breaking change** | **{len(breaking) + len(changes.removed)}** |",
        f"| added | {len(changes.added)} |",
        f"| with gains (products, dtypes, formats) | {len(gains)} |",
        f"| with rule hints that differ (not listed) | {len(hints)} |",
        f"| imported at both tags and compared | {changes.compared} |",
        "",
        "## Breaking",
        "",
        "| API | repository | what breaks |",
        "|---|---|---|",
    ]
    rows = [(api, repo, "removed") for repo, api in changes.removed]
    rows += [(c.api, c.repo, _cell(_losses(c))) for c in breaking]
    lines += [f"| `aclnn{api}` | {repo} | {what} |" for api, repo, what in sorted(rows)]
    lines += ["", "## Gained", "", "| API | repository | what is gained |", "|---|---|---|"]
    lines += [
        f"| `aclnn{c.api}` | {c.repo} | {_cell([d.message for d in c.of_kind(specdiff.COMPATIBLE)])} |" for c in gains
    ]
    lines += ["", f"## Added ({len(changes.added)})", ""]
    for repo in sorted({r for r, _ in changes.added}):
        lines.append(f"- {repo}: " + ", ".join(f"`aclnn{api}`" for r, api in changes.added if r == repo))
    return "\n".join(lines) + "\n"


def summary(changes: CatalogChanges) -> str:
    """One line for a terminal."""
    breaking = sum(1 for c in changes.changed if c.breaking)
    return (
        f"from {changes.old} to {changes.new}: {len(changes.added)} APIs added, {len(changes.removed)} removed, "
        f"{sum(1 for c in changes.changed if c.prototype)} prototypes changed, {breaking} APIs with a breaking "
        f"change, {sum(1 for c in changes.changed if c.of_kind(specdiff.COMPATIBLE))} with gains "
        f"({changes.compared} compared)"
    )
