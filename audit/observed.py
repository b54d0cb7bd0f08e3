"""A behaviour profile from what an audit observed: `aclnngen audit --save-profile NAME`.

The library checks an audit saw become profile data the simulator checks by (codegen/profiles.py):
the dtypes each family accepted (every tensor of one dtype, as the dtype probes call it), and the
shape cases the spec rejects but the library accepted, where one profile change says exactly that.
What no change can say (a check tighter than the spec's, a broadcast accepted against a rule that
still holds elsewhere) is listed in `notes`, so a person sees what the profile leaves out.

A saved profile lives in `specs/profiles/NAME/<release>/<op>.yaml`. A later run on another family
merges into it (its families replaced, the others kept); a file a person wrote is never touched.
"""

from __future__ import annotations

from aclnngen.core.meta import op_meta

import os
from pathlib import Path
from typing import Any, Mapping

import yaml

from aclnngen.codegen.errors import SpecError
from aclnngen.core.kinds import KINDS, kind_of
from aclnngen.codegen.importer.writer import block_yaml
from aclnngen.codegen.yamlio import check_events
from aclnngen.files import FileError, locked, read_text, write_atomic

from .checks import condition_text

MARK = "# Observed by `aclnngen audit --save-profile`"
HEADER = MARK + " on {source}{where}; rerun it to refresh, or edit and drop this line to keep it as written.\n"

# shape case accepted though the spec rejects it -> the one profile change that accepts it
# (several kinds may decide one case: the first the op has a rule of, in registry order)
_CASE_CHANGES: dict[str, list[dict]] = {}
for _kind in KINDS:
    for _case, _action in _kind.accepted_change.items():
        _CASE_CHANGES.setdefault(_case, []).append({"action": _action, "rule": _kind.name})


class SaveProfileError(ValueError):
    """The observed profile cannot be written (a person's file is in the way, a bad release)."""

    user_facing = True


def observed(audit, meta: Mapping, release: str, *, source: str, null_out_pointers: str) -> dict[str, Any]:
    """The profile of op `meta` at `release` that reproduces `audit`'s library observations."""
    tensors = [p.name for p in op_meta(meta).tensors]
    by_list: dict[tuple[str, ...], list[str]] = {}
    for family, sets in audit.matrix.items():
        works = tuple(d for d, verdict in sets.items() if verdict.endswith("works"))
        if works:
            by_list.setdefault(works, []).append(family)
    dtypes = [
        {
            "params": list(tensors),
            "families": families,
            "dtypes": list(works),
            "reason": f"every tensor of the dtype accepted by the first phase on {source}",
        }
        for works, families in by_list.items()
    ]
    for family, found in sorted(audit.conditions.items()):
        for dtype, when in sorted(found.items()):
            dtypes.append(
                {
                    "params": list(tensors),
                    "families": [family],
                    "dtypes": [dtype],
                    "when": dict(when),
                    "reason": f"accepted on {source} only when {condition_text(when)}",
                }
            )
    changes: list[dict] = []
    left_out: dict[str, list[str]] = {}
    for f in audit.findings:
        if f.check not in ("shape", "return_code", "format"):
            continue  # dtypes: the lists above say it; numerics and defaults are no check of parameters
        subject = f.subject.rsplit(" on ", 1)[0]
        accepted = f.group == "undocumented" or f.observed == "accepted"
        change = _change(meta, f, subject) if accepted and f.check != "format" else None  # formats: a note
        if change is None:
            left_out.setdefault(f"{subject}: {f.observed}, the spec says {f.claimed}", []).append(f.family or "-")
        elif not any(_same_change(c, change) for c in changes):
            changes.append(
                {**change, "reason": f"{subject} accepted on {f.family} ({source}), though the spec rejects it"}
            )
    return {
        "op": op_meta(meta).name,
        "cann_version": release,
        "evidence": f"observed on {source} at {release}",
        "null_out_pointers": null_out_pointers,
        "changes": changes,
        "dtypes": dtypes,
        "notes": [f"{what} (on {', '.join(families)})" for what, families in sorted(left_out.items())],
    }


def _change(meta: Mapping, finding, subject: str) -> dict | None:
    """The one profile change that accepts what `finding` saw accepted, or None."""
    rules = [r.data for r in op_meta(meta).rules]
    kinds = {kind_of(r).name for r in rules}
    if finding.check == "shape":
        return next((dict(c) for c in _CASE_CHANGES.get(subject, ()) if c["rule"] in kinds), None)
    # a return-code row "row N (check: param)" of a rule's check that the library did not make on param
    check, _, param = subject.partition("(")[2].rstrip(")").partition(": ")
    # a rule of that kind listing param (in a list field: `params`, `inputs`; loc is (field, index))
    named = [
        r
        for r in rules
        if kind_of(r).name == check and any(n == param and len(loc) == 2 for loc, n in kind_of(r).named(r))
    ]
    if not named:
        return None
    return {"action": "exclude_params", "rule": check, "params": [param]}


def _same_change(a: Mapping, b: Mapping) -> bool:
    return a["action"] == b["action"] and a["rule"] == b["rule"] and a.get("params", []) == b.get("params", [])


def merge(saved: Mapping, new: Mapping) -> dict[str, Any]:
    """`new` over an earlier saved profile of the same op and release: the families `new` observed
    are replaced, the other families' dtype lists and every rule change are kept."""
    seen = {f for entry in new["dtypes"] for f in entry["families"]}
    kept = []
    for entry in saved.get("dtypes") or []:
        families = [f for f in entry["families"] if f not in seen]
        if families:
            kept.append({**entry, "families": families})
    changes = list(new["changes"])
    for change in saved.get("changes") or []:
        if not any(_same_change(c, change) for c in changes):
            changes.append(change)
    evidence = (
        new["evidence"]
        if saved.get("evidence") == new["evidence"]
        else f"{saved.get('evidence')}; then {new['evidence']}"
    )
    notes = list(dict.fromkeys(list(saved.get("notes") or []) + list(new["notes"])))
    # what no probe observes (null checks the code lacks, early returns, the order of the checks)
    # is a person's statement: it carries over
    stated = {key: saved[key] for key in STATED_CHECK_FACTS if saved.get(key) and not new.get(key)}
    return {
        **new,
        "evidence": evidence,
        "changes": changes,
        "dtypes": kept + list(new["dtypes"]),
        "notes": notes,
        **stated,
    }


STATED_CHECK_FACTS = ("unchecked_nulls", "early_returns", "check_order")


def write(profile: Mapping, profiles_dir: Path, name: str, snake: str, *, source: str, where: str = "") -> Path:
    """Write (or merge into) `profiles_dir/name/<release>/<snake>.yaml`; the path written."""
    if not name.replace("_", "").replace("-", "").isalnum() or name == "spec":
        raise SaveProfileError(
            f"--save-profile {name!r}: a profile name is letters, digits, '-' and '_', and not 'spec'"
        )
    target = Path(profiles_dir) / name / str(profile["cann_version"]) / f"{snake}.yaml"
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        # one save at a time per profile file (a read-merge-write), written atomically
        with locked(target, what="profile"):
            data = dict(profile)
            if os.path.lexists(target):
                text = read_text(target, what="profile")
                if not text.startswith(MARK):
                    raise SaveProfileError(
                        f"{target} exists and was not written by --save-profile; save under another name"
                    )
                check_events(text, target, "profiles")
                data = merge(yaml.safe_load(text) or {}, profile)
            write_atomic(target, HEADER.format(source=source, where=where) + block_yaml(data), what="profile")
    except (FileError, OSError) as exc:
        raise SaveProfileError(f"{target}: cannot write the profile ({exc.strerror or exc})") from None
    except SpecError as exc:
        raise SaveProfileError("; ".join(str(p) for p in exc.problems)) from None
    return target
