"""The steps of an op's parameter check, by name, and the order the validator takes them in.

A behaviour profile may state another order (the vendor checks SoftmaxBackward's dim before its
shapes) and where an early return sits among them (an empty tensor answered with success before the
remaining checks). A step is one of `STEPS`, or a rule kind's name: that kind's rules then run at
that place, taken out of the `rules` step (which runs the remaining rules in spec order).
"""

from __future__ import annotations

from typing import Iterable

from .kinds import KIND_NAMES

NULL_POINTER = "null_pointer"
EARLY_RETURN = "early_return"
PRODUCT = "product"
DTYPE = "dtype"
FORMAT = "format"
RULES = "rules"
SCALARS = "scalars"
ATTRIBUTES = "attributes"

#: The validator's steps in their default order (runtime/validation.py documents each).
STEPS: tuple[str, ...] = (NULL_POINTER, EARLY_RETURN, PRODUCT, DTYPE, FORMAT, RULES, SCALARS, ATTRIBUTES)

#: Every name a `check_order` may hold.
ORDER_NAMES: tuple[str, ...] = STEPS + KIND_NAMES


class CheckOrderError(ValueError):
    """A check order naming an unknown step or one step twice."""


def check_order(stated: Iterable[str] = ()) -> tuple[str, ...]:
    """The full order for a stated one: the stated steps first, in their order, then every default
    step not stated, in the default order. Empty: the default order."""
    stated = tuple(stated)
    unknown = [s for s in stated if s not in ORDER_NAMES]
    if unknown:
        raise CheckOrderError(f"unknown check step {unknown[0]!r}; the steps are {', '.join(ORDER_NAMES)}")
    twice = sorted({s for s in stated if stated.count(s) > 1})
    if twice:
        raise CheckOrderError(f"check step {twice[0]!r} is named twice")
    return stated + tuple(s for s in STEPS if s not in stated)
