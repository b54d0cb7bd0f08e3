"""What promote and castable share: the inputs' dtypes promoted together give the output's."""

from __future__ import annotations

from typing import Mapping

from ..dtypes import PromotionError, promote_names
from .base import Violation, listed


def promoted_output(rule: Mapping, name: str, known: Mapping[str, str], strict: bool):
    if rule["output"] != name:
        return None
    present = [known[i] for i in rule["inputs"] if i in known]
    if not present:
        return None
    promoted = promote_names(present)
    if promoted is None:
        if strict:
            raise PromotionError(f"dtypes {', '.join(present)} have no common dtype")
        return present[0]
    return promoted


def described(present) -> str:
    return listed(f"{n} ({d})" for n, d in present)


def no_common_dtype(status: int, present, to: str = "promote to") -> Violation:
    return Violation(
        status,
        present[-1][0],
        f"{described(present)} have no common dtype to {to}",
        found=tuple(d for _, d in present),
        allowed="dtypes with a common promoted dtype",
    )
