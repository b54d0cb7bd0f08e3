"""Apply a behaviour profile to an op's metadata: the rules an implementation really checks.

The simulator validates parameters with `validation.validate` on the META this returns, so one
validator serves both the spec's claims (profile "spec", the default) and an implementation's
recorded behaviour (e.g. "vendor"). Select with `ACLNNGEN_SIM_PROFILE` or `session`.
"""

from __future__ import annotations

import copy
import os

from aclnngen.generated import profiles as generated_profiles

from aclnngen.core.meta import op_meta
from aclnngen.core.releases import CannVersion

SPEC = "spec"
NULL_CHECKED = "checked"


def _table() -> dict:
    return generated_profiles.PROFILES


def names() -> tuple[str, ...]:
    return (SPEC,) + tuple(sorted(_table()))


def is_name(name: str) -> bool:
    """Whether `name` is one of `names()`, without listing them (asked on every simulated call)."""
    return name == SPEC or name in _table()


def active() -> str:
    return os.environ.get("ACLNNGEN_SIM_PROFILE", SPEC)


def select(profile: str, op: str, version: str) -> dict | None:
    """The profile entry for `op` that holds at `version`: the newest release not after it."""
    if profile == SPEC:
        return None
    table = _table()
    if profile not in table:
        raise ValueError(f"unknown behaviour profile {profile!r}; known: {', '.join(names())}")
    releases = table[profile].get(op, {})
    holding = [r for r in releases if not CannVersion(version) < CannVersion(r)]
    return releases[max(holding, key=CannVersion)] if holding else None


def null_out_pointers_checked(profile: str, op: str, version: str) -> bool:
    entry = select(profile, op, version)
    return entry is None or entry["null_out_pointers"] == NULL_CHECKED


_PARAM_FIELDS = ("params", "inputs")


#: what a profile states about the checks themselves, carried into the META under the same keys
_CHECK_FACTS = ("unchecked_nulls", "early_returns", "check_order")


def apply(meta: dict, profile: str, version: str) -> dict:
    """META with the profile's changes to its rules and dtypes, and its facts about the checks
    (missing null checks, early returns, the check order); the same object when nothing changes."""
    name = op_meta(meta).name
    entry = select(profile, name, version)
    if entry is None or not (entry["changes"] or entry.get("dtypes") or any(entry.get(k) for k in _CHECK_FACTS)):
        return meta
    key = (name, id(meta), profile, entry["cann_version"])
    cached = _APPLIED.get(key)
    if cached is None or cached[0] is not meta:
        cached = _APPLIED[key] = (meta, _changed(meta, entry))  # keeps `meta` alive, so its id stays unique
    return cached[1]


_APPLIED: dict = {}


def _changed(meta: dict, entry: dict) -> dict:
    changed = copy.deepcopy(meta)
    for change in entry["changes"]:
        kept = []
        for rule in changed["rules"]:
            if rule["kind"] != change["rule"]:
                kept.append(rule)
            elif change["action"] == "drop":
                continue
            elif change["action"] == "allow":
                kept.append({**rule, "allowed": True})
            else:  # exclude_params
                rule = dict(rule)
                for field in _PARAM_FIELDS:
                    if field in rule:
                        rule[field] = [p for p in rule[field] if p not in change["params"]]
                if all(len(rule.get(f, [None, None])) >= 2 for f in _PARAM_FIELDS if f in rule):
                    kept.append(rule)
        changed["rules"] = kept
    for listed in entry.get("dtypes") or ():
        for param in changed["params"]:
            if param["name"] in listed["params"]:
                _replace_dtypes(param, listed)
    if entry.get("unchecked_nulls"):
        changed["unchecked_nulls"] = [n for e in entry["unchecked_nulls"] for n in e["params"]]
    if entry.get("early_returns"):
        changed["early_returns"] = [
            {"params": list(e["params"]), "families": list(e["families"])} for e in entry["early_returns"]
        ]
    if entry.get("check_order"):
        changed["check_order"] = list(entry["check_order"]["steps"])
    return changed


def _replace_dtypes(param: dict, listed: dict) -> None:
    """The implementation's list for `listed["families"]` replaces the page's list there; the rows
    of earlier profile entries (marked `replaced`) stay."""
    kept = []
    for old in param.get("dtypes") or []:
        families = (
            old["families"] if old.get("replaced") else [f for f in old["families"] if f not in listed["families"]]
        )
        if families:
            kept.append({**old, "families": families})
    kept.append(
        {
            "families": list(listed["families"]),
            "dtypes": list(listed["dtypes"]),
            "since": None,
            "until": None,
            "when": dict(listed.get("when") or {}),
            "replaced": True,
        }
    )
    param["dtypes"] = kept
