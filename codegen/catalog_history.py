"""`aclnngen catalog --history`: one spec per API with its facts versioned across release tags.

The newest page is the base: the spec keeps the HEAD draft's parameters, prototypes, rules and
defects (the importer reads the newest page format best). The older tags' pages only contribute
what the spec language versions (products, dtypes per family, scalar bounds, return-code statuses):
the oldest tag's facts seed the spec, and every newer page, the HEAD draft last, is merged in with
the one merge there is (`import --into`, codegen/importer/merge.py), which ends the facts that
changed (`until`) and starts the new ones (`since`).

An older page is folded only where its parameters (names, roles, C types) are the HEAD draft's:
one that differs documents another prototype, whose facts cannot attach to these parameters. And
the result must state at the newest release exactly what the HEAD draft states (the generated tests
check that release), else the API keeps its HEAD draft alone and the report says why.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from aclnngen.core.releases import CannVersion, as_release

from .errors import GenerateError
from .importer.merge import merge, page_order
from .specdiff import diff, holds, view

# An API's identity across tags: repository, category, API name.
Key = tuple[str, str, str]


def released_tags(tags: list[str], newest: str) -> list[str]:
    """The vendor's release tags among `tags` (`v9.1.0`, no beta, rc or .pre) older than the
    release `newest`, oldest first: the releases a team installs."""
    plain = [t for t in tags if t.startswith("v") and t[1:].replace(".", "").isdigit() and t.count(".") == 2]
    older = [t for t in plain if CannVersion(as_release(t)) < CannVersion(as_release(newest))]
    return sorted(older, key=lambda t: CannVersion(as_release(t)))


def ordered(tags: list[str], newest: str) -> list[str]:
    """`tags` (any spelling of a release) oldest first; each must be a release older than `newest`."""
    for tag in tags:
        if as_release(tag) is None:
            raise GenerateError(f"--history {tag}: not a release tag (e.g. v9.0.0)")
        if CannVersion(as_release(tag)) >= CannVersion(as_release(newest)):
            raise GenerateError(f"--history {tag}: not older than the release read at the tip ({newest})")
    return sorted(dict.fromkeys(tags), key=lambda t: CannVersion(as_release(t)))


@dataclass
class History:
    """The older tags' drafts per API, oldest first, and what folding them did."""

    tags: list[str]
    explicit: list[str] = field(default_factory=list)  # the tags given (none: the mirrors' release tags)
    drafts: dict[Key, list[tuple[str, dict]]] = field(default_factory=dict)  # key -> [(release, draft)]
    ambiguous: set = field(default_factory=set)  # (key, release): two pages of one tag document it
    verdicts: dict[Key, str] = field(default_factory=dict)  # key -> "folded N" or why not

    def add(self, key: Key, release: str, draft: dict) -> None:
        at = self.drafts.setdefault(key, [])
        if at and at[-1][0] == release:
            self.ambiguous.add((key, release))
            at.pop()
            return
        if (key, release) not in self.ambiguous:
            at.append((release, draft))

    def fold(self, key: Key, head: dict, release: str) -> dict:
        """The spec of `key` from its HEAD `head` draft (at `release`) and its older drafts."""
        spec, verdict = fold(head, self.drafts.get(key, []), release)
        self.verdicts[key] = verdict
        return spec

    def counts(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for verdict in self.verdicts.values():
            group = "with history" if verdict.startswith("folded") else verdict
            out[group] = out.get(group, 0) + 1
        return out


def _foldable(draft: dict, head: dict) -> bool:
    """Whether an older draft's facts can attach to `head`'s parameters: the same parameters (names,
    roles, C types), and its products and dtype tables read where the HEAD draft's were."""
    if view(draft).params != view(head).params or not isinstance(draft.get("products"), list):
        return False
    tables = {p["name"]: p.get("dtypes") for p in draft.get("parameters") or [] if isinstance(p, dict)}
    return all(
        isinstance(tables.get(p["name"]), list)
        for p in head["parameters"]
        if isinstance(p, dict) and isinstance(p.get("dtypes"), list)
    )


def fold(head: dict, older: list[tuple[str, dict]], release: str) -> tuple[dict, str]:
    """(`head` with the versioned facts of the `older` drafts [(release, draft)], oldest first; a
    verdict). `head` is returned unchanged where nothing can be folded."""
    same = [(r, d) for r, d in older if _foldable(d, head)]
    if not same:
        return head, "no older page with these parameters" if older else "no older page"
    spec = _seed(head, same[0][1])
    for at, draft in [*same[1:], (release, head)]:
        merge(spec, draft, at)
        if spec.get("todo"):
            return head, f"the page at {at} asks for a person"
    if "defects" in head:
        spec["defects"] = copy.deepcopy(head["defects"])
    spec = plain(spec)
    _in_head_order(spec, head)
    _keep_head_rows(spec, head, release)
    if diff(view(head), view(spec, release)) or _entries(spec, release) != _entries(head, release):
        return head, "the merged facts at the newest release are not the newest page's"
    if spec == head:
        return head, "no fact changed across the tags"
    return spec, f"folded {len(same)}"


def _entries(spec: dict, release: str) -> list:
    """The product entries holding at `release` as written (a family ruled out explicitly counts)."""
    return sorted(
        (str(e.get("family")), e.get("supported", True))
        for e in spec["products"]
        if isinstance(e, dict) and holds(e, release)
    )


def _seed(head: dict, oldest: dict) -> dict:
    """The HEAD draft with the oldest page's versioned facts: its products, and per parameter its
    dtypes and bounds; its return codes where both pages' tables were read. No defects while
    folding: a catalog spec's defects are the newest page's, and the merge keeps a fact a defect
    names."""
    spec = copy.deepcopy(head)
    spec.pop("defects", None)
    spec["products"] = copy.deepcopy(oldest["products"])
    # a family the newest page rules out and the oldest does not name was not supported then either
    named = {e.get("family") for e in spec["products"] if isinstance(e, dict)}
    spec["products"] += [
        copy.deepcopy(e)
        for e in head["products"]
        if isinstance(e, dict) and e.get("supported") is False and e.get("family") not in named
    ]
    params = {p["name"]: p for p in oldest.get("parameters") or [] if isinstance(p, dict)}
    for p in spec["parameters"]:
        was = params.get(p.get("name"), {})
        for key in ("dtypes", "constraints"):
            if key in was:
                p[key] = copy.deepcopy(was[key])
            elif key == "constraints":
                p.pop(key, None)
    if isinstance(oldest.get("return_codes"), list) and isinstance(head.get("return_codes"), list):
        spec["return_codes"] = copy.deepcopy(oldest["return_codes"])
    return spec


def _in_head_order(spec: dict, head: dict) -> None:
    """Products, a group's families and its dtypes in the newest page's order (an unchanged fact
    stays as the oldest page listed it): the facts at the newest release read as the HEAD draft's,
    and the generated cases come in the same order."""
    products = [e.get("family") for e in head["products"] if isinstance(e, dict)]
    spec["products"].sort(key=lambda e: _rank(products, e.get("family")))
    heads = {p.get("name"): p for p in head["parameters"] if isinstance(p, dict)}
    for p in spec["parameters"]:
        if not isinstance(p.get("dtypes"), list):
            continue
        orders: dict[str, list] = {}
        for group in heads.get(p.get("name"), {}).get("dtypes") or []:
            for family in group.get("families") or [] if isinstance(group, dict) else []:
                orders.setdefault(family, []).extend(group.get("dtypes") or [])
        families = [*orders, *products]
        fallback = page_order(head, p.get("name"))
        for group in p["dtypes"]:
            if not isinstance(group, dict):
                continue
            if isinstance(group.get("families"), list):
                group["families"].sort(key=lambda f: _rank(families, f))
            if isinstance(group.get("dtypes"), list):
                order = next((orders[f] for f in group.get("families") or [] if f in orders), []) + fallback
                group["dtypes"] = sorted(group["dtypes"], key=lambda d: _rank(order, d))


def _rank(order: list, item: Any) -> int:
    """`item`'s place in `order`; after every listed item where it is not listed (a stable sort
    keeps those as they were)."""
    return order.index(item) if item in order else len(order)


def _keep_head_rows(spec: dict, head: dict, release: str) -> None:
    """The rows of a status both an older page and the newest list stay the older reading (the
    merge leaves a person's reading alone); a catalog spec's rows at the newest release are the
    newest page's, so where they differ the table keeps no history."""
    rows = spec.get("return_codes")
    if not isinstance(rows, list):
        return
    now = [{k: v for k, v in r.items() if k not in ("since", "until")} for r in rows if holds(r, release)]
    if sorted(map(repr, now)) != sorted(map(repr, head.get("return_codes") or [])):
        spec["return_codes"] = copy.deepcopy(head["return_codes"])


def plain(data: Any) -> Any:
    """ruamel's round-trip containers (the merge's new facts) as plain dicts and lists."""
    if isinstance(data, dict):
        return {k: plain(v) for k, v in data.items()}
    if isinstance(data, list):
        return [plain(v) for v in data]
    return data


def mirror_tags(git_dirs: list[Path], run) -> list[str]:
    """The tags every mirror has (`run(git_dir, *args)` runs git)."""
    common: set[str] | None = None
    for git_dir in git_dirs:
        tags = set(run(git_dir, "tag").split())
        common = tags if common is None else common & tags
    return sorted(common or ())
