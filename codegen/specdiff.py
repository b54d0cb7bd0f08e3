"""Comparing two specs (or a spec and a draft, or one spec at two releases) the way a binding user
feels it. Each change is breaking (a parameter added, removed, renamed, retyped or reordered; a
dtype, format or product removed; a rule tightened; a default changed) or compatible (a dtype,
format or product added; a rule relaxed; documentation only).

Works on plain spec data (a draft with TODOs is fine): `view(data, release)` takes the facts that
hold at `release`, `diff(old, new)` lists the changes."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from aclnngen.core.formats import DEFAULT_FORMATS
from aclnngen.core.releases import known_releases
from aclnngen.core.releases import holds_at, is_version, vendor_tag

from .cdecl import PrototypeError, parse_prototype

BREAKING, COMPATIBLE = "breaking", "compatible"
_TRAILING = ("workspaceSize", "executor")


@dataclass(frozen=True)
class Change:
    kind: str  # breaking / compatible
    what: str  # parameter, dtype, format, product, rule, default, return_code, doc
    where: str  # the parameter or family it is about
    message: str
    family: str = ""  # the product family a product or dtype change is about
    at: tuple[str, ...] = ()  # `diff OLD NEW`: the releases (vendor tags) it shows at, when not at all of them

    def __str__(self) -> str:
        return f"{self.kind:10} {self.what:9} {self.message}" + (f" (at {', '.join(self.at)})" if self.at else "")


@dataclass
class View:
    """The facts of one spec at one release that a binding user depends on."""

    name: str
    params: list[tuple[str, str, str]]  # (name, role, C type), in prototype order
    products: dict[str, bool]
    dtypes: dict[tuple[str, str], frozenset]  # (param, family) -> dtypes
    defaults: dict[str, Any]
    rules: set[str]
    docs: dict[str, str]
    return_codes: set = field(default_factory=set)  # (status, check) of each row of the table
    formats: dict = field(default_factory=dict)  # (tensor, family) -> formats, where the spec states them
    tensors: set = field(default_factory=set)  # the tensor parameters' names


def holds(item: Any, release: str | None) -> bool:
    if not isinstance(item, dict) or release is None:
        return True
    since, until = item.get("since"), item.get("until")
    since = since if isinstance(since, str) and is_version(since) else None
    until = until if isinstance(until, str) and is_version(until) else None
    return holds_at(since, until, release)


def _list(value: Any) -> list:
    return value if isinstance(value, list) else []


def _c_types(data: dict) -> dict[str, str]:
    text = (
        (data.get("prototypes") or {}).get("get_workspace_size") if isinstance(data.get("prototypes"), dict) else None
    )
    try:
        return {p.name: str(p.type) for p in parse_prototype(text).params} if isinstance(text, str) else {}
    except PrototypeError:
        return {}


def view(data: dict, release: str | None = None) -> View:
    """The facts of `data` at `release` (all unversioned facts and those whose range holds)."""
    c_types = _c_types(data)
    params, dtypes, defaults, constraints, formats = [], {}, {}, [], {}
    for p in _list(data.get("parameters")):
        if not isinstance(p, dict) or not holds(p, release):
            continue
        name = str(p.get("name"))
        params.append((name, str(p.get("role")), c_types.get(name, "?")))
        for group in _list(p.get("dtypes")):
            if isinstance(group, dict) and holds(group, release):
                for family in _list(group.get("families")):
                    key = (name, family)
                    dtypes[key] = dtypes.get(key, frozenset()) | frozenset(_list(group.get("dtypes")))
        for group in _list(p.get("formats")):
            if isinstance(group, dict) and holds(group, release):
                for family in _list(group.get("families")):
                    key = (name, family)
                    formats[key] = formats.get(key, frozenset()) | frozenset(_list(group.get("formats")))
        if "default" in p:
            defaults[name] = p["default"]
        for bound in _list(p.get("constraints")):
            if isinstance(bound, dict) and holds(bound, release):
                constraints.append(
                    json.dumps(
                        {"kind": "value", "param": name, "op": bound.get("op"), "value": bound.get("value")},
                        sort_keys=True,
                    )
                )
    products = {}
    for entry in _list(data.get("products")):
        if isinstance(entry, dict) and holds(entry, release):
            products[str(entry.get("family"))] = bool(entry.get("supported", True))
    rules = set(constraints)
    for rule in _list(data.get("rules")):
        if isinstance(rule, dict) and holds(rule, release):
            rules.add(json.dumps({k: v for k, v in rule.items() if k not in ("since", "until")}, sort_keys=True))
    formula = data.get("formula") if isinstance(data.get("formula"), dict) else {}
    docs = {"summary": str(data.get("summary")), "formula": str(formula.get("latex"))}
    codes = {
        (r.get("status"), str(r.get("check")))
        for r in _list(data.get("return_codes"))
        if isinstance(r, dict) and holds(r, release)
    }
    tensors = {name for name, role, _ in params if role in ("input", "output")}
    return View(str(data.get("name")), params, products, dtypes, defaults, rules, docs, codes, formats, tensors)


def _format_changes(old: View, new: View, names: set) -> list[Change]:
    """A format a tensor loses on a family supported on both sides breaks; one it gains is
    compatible (a tensor without `formats` takes ND alone)."""
    out = []
    families = sorted(f for f in set(old.products) & set(new.products) if old.products[f] and new.products[f])
    for param in sorted(names & old.tensors & new.tensors):
        for family in families:
            before = old.formats.get((param, family), DEFAULT_FORMATS_SET)
            after = new.formats.get((param, family), DEFAULT_FORMATS_SET)
            if before - after:
                out.append(
                    Change(
                        BREAKING,
                        "format",
                        param,
                        f"{param} on {family}: {', '.join(sorted(before - after))} removed",
                        family,
                    )
                )
            if after - before:
                out.append(
                    Change(
                        COMPATIBLE,
                        "format",
                        param,
                        f"{param} on {family}: {', '.join(sorted(after - before))} added",
                        family,
                    )
                )
    return out


DEFAULT_FORMATS_SET = frozenset(DEFAULT_FORMATS)


def diff(old: View, new: View) -> list[Change]:
    out: list[Change] = []
    if old.name != new.name:
        out.append(Change(BREAKING, "name", old.name, f"op renamed {old.name} -> {new.name}"))
    out += _param_changes(old, new)
    for family in sorted(set(old.products) | set(new.products)):
        before, after = old.products.get(family, False), new.products.get(family, False)
        if before and not after:
            out.append(Change(BREAKING, "product", family, f"{family} no longer supported", family))
        elif after and not before:
            out.append(Change(COMPATIBLE, "product", family, f"{family} supported", family))
    names = {p[0] for p in old.params} & {p[0] for p in new.params}
    for key in sorted(set(old.dtypes) | set(new.dtypes)):
        param, family = key
        if param not in names:
            continue
        # a family that is not supported on either side has no dtypes to lose
        if not (old.products.get(family) and new.products.get(family)):
            continue
        removed = old.dtypes.get(key, frozenset()) - new.dtypes.get(key, frozenset())
        added = new.dtypes.get(key, frozenset()) - old.dtypes.get(key, frozenset())
        if removed:
            out.append(
                Change(BREAKING, "dtype", param, f"{param} on {family}: {', '.join(sorted(removed))} removed", family)
            )
        if added:
            out.append(
                Change(COMPATIBLE, "dtype", param, f"{param} on {family}: {', '.join(sorted(added))} added", family)
            )
    out += _format_changes(old, new, names)
    for name in sorted(names):
        if old.defaults.get(name) != new.defaults.get(name):
            out.append(
                Change(
                    BREAKING,
                    "default",
                    name,
                    f"{name} default {old.defaults.get(name)!r} -> {new.defaults.get(name)!r}",
                )
            )
    for rule in sorted(new.rules - old.rules):
        out.append(Change(_rule_class(rule, old.rules, tightened=True), "rule", "", f"rule added: {rule_text(rule)}"))
    for rule in sorted(old.rules - new.rules):
        out.append(
            Change(_rule_class(rule, new.rules, tightened=False), "rule", "", f"rule removed: {rule_text(rule)}")
        )
    # a row added is a new way to be rejected; a row gone, one less
    for status, check in sorted(new.return_codes - old.return_codes, key=str):
        out.append(Change(BREAKING, "return_code", check, f"return code {status} for {check} added"))
    for status, check in sorted(old.return_codes - new.return_codes, key=str):
        out.append(Change(COMPATIBLE, "return_code", check, f"return code {status} for {check} removed"))
    for key in sorted(old.docs):
        if old.docs[key] != new.docs.get(key):
            out.append(Change(COMPATIBLE, "doc", key, f"{key} text changed"))
    return out


def diff_files(old: dict, new: dict) -> list[Change]:
    """Every change between two specs' data, the versioned facts included: the two are compared at
    each release either describes (its own and every since/until boundary), so a fact that appears
    or ends at a release shows, classified as `diff SPEC --at A --at B` classifies it. A change seen
    at only some of those releases names them (`at`); without any release, the facts as written."""
    releases = sorted(
        set(known_releases({"cann_version": None, **old})) | set(known_releases({"cann_version": None, **new}))
    )
    if not releases:
        return diff(view(old), view(new))
    seen: dict[Change, list[str]] = {}
    for release in releases:
        for change in diff(view(old, release.text), view(new, release.text)):
            seen.setdefault(change, []).append(release.text)
    return [
        change if len(at) == len(releases) else replace(change, at=tuple(vendor_tag(r) for r in at))
        for change, at in seen.items()
    ]


def rule_text(rule: str) -> str:
    """A rule as a person reads it: `same_shape(gradOutput, self)`, `empty(x) allowed=false`."""
    data = json.loads(rule)
    kind = data.pop("kind", "?")
    if kind == "value":
        return f"{data.get('param')} {data.get('op')} {data.get('value')}"
    names = [n for key in ("params", "inputs") for n in data.pop(key, [])]
    names += [
        f"{key}={data.pop(key)}" for key in ("param", "target", "weight", "input", "grad", "output") if key in data
    ]
    rest = " ".join(f"{k}={json.dumps(v)}" for k, v in sorted(data.items()))
    return f"{kind}({', '.join(map(str, names))})" + (f" {rest}" if rest else "")


def _rule_class(rule: str, other: set[str], tightened: bool) -> str:
    """A rule that appears tightens (breaking) unless it allows something (empty/non_contiguous
    allowed: true); a rule that goes away relaxes (compatible), unless it was an allowance."""
    allows = json.loads(rule).get("allowed") is True
    if tightened:
        return COMPATIBLE if allows else BREAKING
    return BREAKING if allows else COMPATIBLE


def _param_changes(old: View, new: View) -> list[Change]:
    out = []
    old_names = [p[0] for p in old.params]
    new_names = [p[0] for p in new.params]
    old_by, new_by = {p[0]: p for p in old.params}, {p[0]: p for p in new.params}
    removed = [n for n in old_names if n not in new_by]
    added = [n for n in new_names if n not in old_by]
    if len(removed) == len(added):  # same position, other name: a rename
        for a, b in zip(removed, added):
            if old_names.index(a) == new_names.index(b):
                out.append(Change(BREAKING, "parameter", a, f"parameter renamed {a} -> {b}"))
                removed.remove(a), added.remove(b)
    out += [Change(BREAKING, "parameter", n, f"parameter {n} removed") for n in removed]
    out += [Change(BREAKING, "parameter", n, f"parameter {n} added") for n in added]
    common = [n for n in old_names if n in new_by]
    if common != [n for n in new_names if n in old_by]:
        out.append(
            Change(
                BREAKING,
                "parameter",
                "",
                f"parameters reordered: {', '.join(common)} -> {', '.join(n for n in new_names if n in old_by)}",
            )
        )
    for n in common:
        (_, role_a, type_a), (_, role_b, type_b) = old_by[n], new_by[n]
        if role_a != role_b:
            out.append(Change(BREAKING, "parameter", n, f"{n} role {role_a} -> {role_b}"))
        if type_a != type_b and "?" not in (type_a, type_b):
            out.append(Change(BREAKING, "parameter", n, f"{n} retyped {type_a} -> {type_b}"))
    return out


def as_dicts(changes: list[Change]) -> list[dict]:
    return [asdict(c) for c in changes]
