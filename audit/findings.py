"""A finding: one claim of a page checked against one source's behaviour, and the way to see it.

The checks observe per product family; `by_cause` folds the findings of one cause (the same
claim, the same observation) on several families into one finding that lists the families.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import asdict, dataclass, field, replace
from typing import Iterable

# How a finding is grouped in the report.
GROUPS = ("mismatch", "undocumented", "page_defect")


@dataclass(frozen=True)
class Finding:
    op: str
    check: str  # "dtype", "shape", "format", "return_code", "numerics", "formula", "defect"
    subject: str  # what was checked: "float64 on a2", "row 2 (same_shape: gradOutput)", ...
    group: str  # one of GROUPS
    source: str  # "sim", "torch", "cann" or "spec" (a defect the spec records)
    family: str | None  # the family observed on (before `by_cause`)
    claimed: str
    observed: str
    repro: str = field(default="", compare=False)
    # the spec checks the finding is about (rule kinds, "dtype", ...): a `defects` entry naming one
    # of them in its `checks` explains it
    checks: tuple[str, ...] = field(default=(), compare=False)
    # the index of the spec's `defects` entry the finding shows (a recorded defect, a confirmed
    # wrong formula)
    defect: int | None = field(default=None, compare=False)
    families: tuple[str, ...] = ()  # after `by_cause`: every family the cause was observed on

    @property
    def id(self) -> str:
        """Stable across runs: the op, check, subject, family and source, hashed (a finding of
        several families has none: its id does not change with the families audited)."""
        key = "|".join((self.op, self.check, self.subject, self.family or "-", self.source))
        return f"{self.op}-{self.check}-{hashlib.sha1(key.encode()).hexdigest()[:8]}"

    def as_dict(self) -> dict:
        data = {"id": self.id, **asdict(self)}
        data["families"] = list(self.families) or ([self.family] if self.family else [])
        data["checks"] = list(self.checks)
        del data["family"]
        return data


def _without_family(subject: str, family: str) -> str:
    return re.sub(rf" on {re.escape(family)}(?=$|[ ,])", "", subject, count=1)


def by_cause(findings: Iterable[Finding]) -> list[Finding]:
    """One finding per cause: the findings that differ only in their family (same check, subject
    but for the family, claim and observation) become one, listing the families, in the order
    first seen. A finding of no family is kept as it is."""
    groups: dict[tuple, list[Finding]] = {}
    order: list[tuple | Finding] = []
    for f in findings:
        if f.family is None:
            order.append(f)
            continue
        key = (f.op, f.check, _without_family(f.subject, f.family), f.group, f.source, f.claimed, f.observed)
        if key not in groups:
            groups[key] = []
            order.append(key)
        groups[key].append(f)
    subjects: dict[tuple, int] = {}
    for key in groups:
        subjects[key[:3] + key[4:5]] = subjects.get(key[:3] + key[4:5], 0) + 1
    merged: list[Finding] = []
    for item in order:
        if isinstance(item, Finding):
            merged.append(item)
            continue
        first, families = groups[item][0], tuple(dict.fromkeys(f.family for f in groups[item]))
        subject = item[2]
        if subjects[item[:3] + item[4:5]] > 1:  # another observation of the same subject: keep them apart
            subject = f"{subject} on {', '.join(families)}"
        merged.append(replace(first, subject=subject, family=None, families=families))
    return merged
