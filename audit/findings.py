"""A finding: one claim of a page checked against one source's behaviour, and the way to see it."""

from __future__ import annotations

import hashlib
from dataclasses import asdict, dataclass, field

# How a finding is grouped in the report.
GROUPS = ("mismatch", "undocumented", "page_defect")


@dataclass(frozen=True)
class Finding:
    op: str
    check: str  # "dtype", "shape", "return_code", "numerics", "formula", "defect"
    subject: str  # what was checked: "float64 on a2", "row 2 (same_shape: gradOutput)", ...
    group: str  # one of GROUPS
    source: str  # "sim", "torch", "cann" or "spec" (a defect the spec records)
    family: str | None
    claimed: str
    observed: str
    repro: str = field(default="", compare=False)

    @property
    def id(self) -> str:
        """Stable across runs: the op, check, subject, family and source, hashed."""
        key = "|".join((self.op, self.check, self.subject, self.family or "-", self.source))
        return f"{self.op}-{self.check}-{hashlib.sha1(key.encode()).hexdigest()[:8]}"

    def as_dict(self) -> dict:
        return {"id": self.id, **asdict(self)}
