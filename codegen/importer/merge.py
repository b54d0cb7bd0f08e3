"""`import --into SPEC --release R PAGE`: merge what a newer page says into a curated spec.

Every product, dtype, return-code or scalar-range fact that changed at R becomes a versioned fact:
the old one gets `until: R`, the new one `since: R`. Everything else stays as a person wrote it:
the file is edited with ruamel.yaml's round-trip mode, so comments, key order and flow style are
kept. A change the spec language cannot version (a parameter added, removed, renamed or retyped, a
default changed: the C prototype or the binding's signature itself) is never merged blindly: it
becomes a `todo:` entry at the parameter, which `validate` reports until a person decides (such a
change usually ships as a new op version, e.g. aclnnXxxV2). The result is printed as a unified diff
and as classified changes, for review."""

from __future__ import annotations

import difflib
import io
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap, CommentedSeq
from ruamel.yaml.emitter import Emitter

from aclnngen.files import locked, write_atomic

from ..errors import Problem, SpecError
from ..yamlio import check_events, read_text
from ..products import ProductTable
from ..specdiff import diff, holds, view
from .draft import TODO, build_draft
from .pages import read_page


class _BracedEmitter(Emitter):
    """ruamel.yaml writes a one-key flow mapping inside a flow list as a bare pair
    (`[self, const: 0.0]`); a spec keeps its braces (`[self, {const: 0.0}]`), as written."""

    def expect_flow_mapping(self, single: bool = False, force_flow_indent: bool = False) -> None:
        super().expect_flow_mapping(single=False, force_flow_indent=force_flow_indent)


def _yaml() -> YAML:
    yaml = YAML(typ="rt")
    yaml.Emitter = _BracedEmitter
    yaml.preserve_quotes = True
    yaml.width = 4096
    yaml.indent(mapping=2, sequence=4, offset=2)
    yaml.representer.ignore_aliases = lambda data: True  # specs forbid anchors, even for shared lists
    return yaml


def load_round_trip(path: Path, text: str | None = None) -> Any:
    """The spec at `path` (or its `text`, already read) with comments and key order, for a rewrite.
    Read as specs are (a bounded regular file) and guarded as they are (no anchors or aliases, a
    bounded depth) before ruamel builds anything, so a small file never expands into a huge one."""
    if text is None:
        text = read_text(path)
    check_events(text, path)
    return _yaml().load(text)


def dump_round_trip(data: Any) -> str:
    out = io.StringIO()
    _yaml().dump(data, out)
    return out.getvalue()


def _flow(mapping: dict) -> CommentedMap:
    out = CommentedMap()
    for key, value in mapping.items():
        out[key] = _flow_list(value) if isinstance(value, list) else value
    out.fa.set_flow_style()
    return out


def _holding(entry: Any, release: str) -> bool:
    return holds(entry, release)


def merge(spec: Any, draft: dict, release: str) -> list[str]:
    """Merge `draft` (a page of `release`) into the round-trip `spec` in place; returns notes for
    a person (what was not merged)."""
    notes: list[str] = []
    before, page = view(spec, release), view(draft, None)
    _merge_products(spec, before.products, page.products, release, notes)
    after_products = view(spec, release).products
    page_params = {p[0]: p for p in page.params}
    todo: list[tuple[str, str]] = []

    def person(at: str, note: str) -> None:
        notes.append(note)
        todo.append((at, f"at {release}: {note}"))

    where = {p.get("name"): f"parameters.{i}" for i, p in enumerate(spec["parameters"]) if isinstance(p, dict)}
    for name, role, c_type in before.params:
        if name not in page_params:
            person(where[name], f"parameter {name} is not on the page (removed or renamed: breaking); not merged")
            continue
        if page_params[name][1:] != (role, c_type) and "?" not in (c_type, page_params[name][2]):
            person(
                where[name],
                f"parameter {name}: the page has {page_params[name][1:]}, the spec {(role, c_type)} (breaking); not merged",
            )
        if (
            name in before.defaults
            and name in page.defaults
            and page.defaults[name] is not None
            and before.defaults[name] != page.defaults[name]
        ):
            person(
                f"{where[name]}.default",
                f"parameter {name}: the page's default is {page.defaults[name]!r}, the spec's {before.defaults[name]!r} (breaking); not merged",
            )
        if role in ("scalar", "optional_scalar"):
            _merge_constraints(spec, draft, name, release, notes)
        if role not in ("input", "output"):
            continue
        entry = next(p for p in spec["parameters"] if p.get("name") == name)
        for family, supported in after_products.items():
            if not supported or not page.products.get(family):
                continue
            old = before.dtypes.get((name, family))
            new = page.dtypes.get((name, family))
            if new is None or old == new:
                continue
            if _defect_names(spec, family, release):
                notes.append(
                    f"{name} on {family}: the page says {sorted(new)}, but the spec records a page defect there: kept"
                )
                continue
            _split(entry["dtypes"], family, sorted(new, key=list(page_order(draft, name)).index), release)
    for name in page_params:
        if name not in {p[0] for p in before.params}:
            person("parameters", f"parameter {name} is only on the page (added: breaking); not merged, add it by hand")
    _combine_new_groups(spec, release)
    _merge_return_codes(spec, draft, release, notes)
    _note_rule_hints(spec, draft, release, notes)
    if todo:
        entries = spec.get("todo")
        if not isinstance(entries, list):
            spec["todo"] = entries = CommentedSeq()
        for at, note in todo:
            if not any(isinstance(e, dict) and e.get("note") == note for e in entries):
                entries.append(_flow({"at": at, "note": note}))
    return notes


def _merge_return_codes(spec: Any, draft: dict, release: str, notes: list[str]) -> None:
    """A status the page's table gains at `release` starts there (its rows as the page gives them);
    a status the table no longer has ends there. Within a status the spec's rows are a person's
    reading of the page (checks the importer cannot classify, corrected parameter lists), so a
    difference there is a note for a person, never a release change."""
    rows = spec.get("return_codes")
    page_rows = [
        r for r in draft.get("return_codes") or [] if isinstance(r, dict) and r.get("status") not in (None, TODO)
    ]
    if not isinstance(rows, list) or not page_rows:
        return  # a page whose table could not be read changes nothing
    holding = [r for r in rows if isinstance(r, dict) and _holding(r, release)]
    page_statuses = {r["status"] for r in page_rows}
    spec_statuses = {r.get("status") for r in holding}
    for row in holding:
        if row.get("status") not in page_statuses:
            row["until"] = release
    for row in page_rows:
        if row["status"] in spec_statuses:
            continue
        new = CommentedMap([("status", row["status"]), ("check", row.get("check"))])
        new["params"] = _flow_list(row["params"] if isinstance(row.get("params"), list) else [TODO])
        new["condition"] = row.get("condition") or TODO
        new["since"] = release
        rows.append(new)
        notes.append(f"return code {row['status']} ({row.get('check')}) is new at {release}: check the row")
    for status in sorted(page_statuses & spec_statuses):
        page_checks = sorted({str(r.get("check")) for r in page_rows if r["status"] == status})
        spec_checks = sorted({str(r.get("check")) for r in holding if r.get("status") == status})
        if TODO not in page_checks and set(page_checks) - set(spec_checks):
            notes.append(
                f"return code {status}: the page's rows read as {', '.join(page_checks)}; the spec has "
                f"{', '.join(spec_checks)}: compare by hand"
            )


def _note_rule_hints(spec: Any, draft: dict, release: str, notes: list[str]) -> None:
    """The page's rule hints are hints (a draft marks them for a person to confirm): a kind the
    page hints at that the spec has no rule of at `release` is a note, never a merged rule."""
    have = {r.get("kind") for r in spec.get("rules") or [] if isinstance(r, dict) and _holding(r, release)}
    for kind in sorted(
        {str(r.get("kind")) for r in draft.get("rules") or [] if isinstance(r, dict)} - have - {TODO, "None"}
    ):
        notes.append(f"the page hints at a {kind} rule the spec does not have at {release}: check by hand")


def _flow_list(items: list) -> CommentedSeq:
    out = CommentedSeq(items)
    out.fa.set_flow_style()
    return out


def _constraints(param: Any) -> set:
    return {
        (c.get("op"), float(c.get("value")))
        for c in param.get("constraints") or []
        if isinstance(c, dict) and c.get("value") is not None and not c.get("when")
    }


def _merge_constraints(spec: Any, draft: dict, name: str, release: str, notes: list[str]) -> None:
    """A scalar's documented bounds that changed at `release`: the old ones end, the new start."""
    entry = next(p for p in spec["parameters"] if p.get("name") == name)
    page = next((p for p in draft.get("parameters") or [] if isinstance(p, dict) and p.get("name") == name), None)
    if page is None or not page.get("constraints"):
        return  # the page states no bound: nothing to compare (a spec's bound is not dropped on silence)
    holding = [c for c in entry.get("constraints") or [] if isinstance(c, dict) and _holding(c, release)]
    if _constraints({"constraints": holding}) == _constraints(page):
        return
    for bound in holding:
        if not bound.get("when"):
            bound["until"] = release
    if not isinstance(entry.get("constraints"), list):
        entry["constraints"] = CommentedSeq()
    for bound in page["constraints"]:
        if isinstance(bound, dict) and not bound.get("when"):
            new = _flow({k: v for k, v in bound.items() if k not in ("since", "until")})
            new["since"] = release
            entry["constraints"].append(new)
    notes.append(f"parameter {name}: its bounds changed at {release}")


def _defect_names(spec: Any, family: str, release: str, kinds=("dtype", "product")) -> bool:
    """Whether the spec records a page defect about `family` that holds at `release`."""
    return any(
        isinstance(d, dict) and d.get("kind") in kinds and _holding(d, release) and family in str(d.get("note", ""))
        for d in spec.get("defects") or []
    )


def page_order(draft: dict, name: str) -> list[str]:
    """The page's dtype order for a parameter (so new facts read like the page)."""
    order: list[str] = []
    for p in draft.get("parameters") or []:
        if isinstance(p, dict) and p.get("name") == name and isinstance(p.get("dtypes"), list):
            for group in p["dtypes"]:
                order += [d for d in group.get("dtypes", []) if d not in order]
    return order


def _merge_products(spec: Any, before: dict[str, bool], page: dict[str, bool], release: str, notes: list[str]) -> None:
    entries = spec["products"]
    for family, supported in page.items():
        if before.get(family, False) == supported:
            continue
        if _defect_names(spec, family, release, kinds=("product",)):
            notes.append(f"product {family}: the page differs, but the spec records a page defect there: kept")
            continue
        for entry in entries:
            if entry.get("family") == family and _holding(entry, release):
                entry["until"] = release
        new = CommentedMap([("family", family)])
        if not supported:
            new["supported"] = False
        new["since"] = release
        entries.append(new)
    for family, supported in before.items():
        if supported and family not in page:
            notes.append(f"product {family}: the page does not mention it; left as it is")


def _split(groups: list, family: str, dtypes: list[str], release: str) -> None:
    """End `family`'s dtype facts at `release` and start new ones there."""
    for index in range(len(groups) - 1, -1, -1):
        group = groups[index]
        if family not in group.get("families", []) or not _holding(group, release):
            continue
        if group.get("since") == release:  # a fact of this very release: replace it
            group["families"].remove(family)
        elif len(group["families"]) == 1:
            group["until"] = release
            continue
        else:
            group["families"].remove(family)
            ended = {"families": [family], "dtypes": list(group["dtypes"])}
            if group.get("since"):
                ended["since"] = group["since"]
            ended["until"] = release
            groups.insert(index + 1, _flow(ended))
        if not group["families"]:
            del groups[index]
    groups.append(_flow({"families": [family], "dtypes": dtypes, "since": release}))


def _combine_new_groups(spec: Any, release: str) -> None:
    """Facts starting at one release with equal dtypes become one group (as a person would write),
    and so do facts ending there with equal dtypes and the same start (a split per family)."""
    for param in spec["parameters"]:
        groups = param.get("dtypes")
        if not isinstance(groups, list):
            continue
        seen: dict[tuple, Any] = {}
        for group in list(groups):
            if group.get("since") == release and "until" not in group:
                key: tuple = ("since", tuple(group["dtypes"]))
            elif group.get("until") == release:
                key = ("until", group.get("since"), tuple(group["dtypes"]))
            else:
                continue
            if key in seen:
                seen[key]["families"].extend(group["families"])
                groups.remove(group)
            else:
                seen[key] = group


def merge_command(spec_path: Path, page_path: Path, release: str, products: ProductTable) -> int:
    facts = read_page(page_path, products, release)
    draft = build_draft(facts, products)
    # one merge at a time per spec: a second waits, then merges into the first one's result
    with locked(spec_path, what="spec"):
        old_text = read_text(spec_path)
        spec = load_round_trip(spec_path, old_text)
        if (
            not isinstance(spec, dict)
            or not isinstance(spec.get("parameters"), list)
            or not isinstance(spec.get("products"), list)
        ):
            raise SpecError(Problem(str(spec_path), 1, "not a spec: needs products and parameters"))
        if draft.get("name") != spec.get("name"):
            raise SpecError(
                Problem(str(spec_path), 1, f"the page is about {draft.get('name')}, the spec about {spec.get('name')}")
            )
        old_view = view(load_round_trip(spec_path, old_text), release)
        notes = merge(spec, draft, release)
        new_text = dump_round_trip(spec)
        # atomic (a kill leaves the old spec or the new one), and not rewritten when nothing changed
        write_atomic(spec_path, new_text, what="spec")
    print(
        "".join(
            difflib.unified_diff(old_text.splitlines(True), new_text.splitlines(True), str(spec_path), str(spec_path))
        ),
        end="",
    )
    changes = diff(old_view, view(spec, release))
    print(f"-- at {release}: {len(changes)} change(s), {sum(c.kind == 'breaking' for c in changes)} breaking")
    for change in changes:
        print(f"   {change}")
    for note in notes:
        print(f"   note: {note}")
    return _validate_merged(spec_path, products)


def _validate_merged(spec_path: Path, products: ProductTable) -> int:
    """The merged file must still be a spec; if not, say where (exit 1), so the review starts there."""
    from ..loader import load_spec

    try:
        load_spec(spec_path, products)
    except SpecError as exc:
        print(f"-- the merged spec does not validate ({len(exc.problems)} problem(s)):")
        for problem in exc.problems:
            print(f"   {problem}")
        return 1
    return 0
