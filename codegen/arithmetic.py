"""The cross-field checks of a spec's `arithmetic` section, and the rule that a formula which
cannot be computed exactly in integers never meets integer inputs silently: where every tensor input
accepts an integer or bool dtype and the formula holds a non-integer constant, a division or a
transcendental function, `validate` refuses the spec unless `arithmetic.compute` says in which
dtype those integers are computed."""

from __future__ import annotations

from typing import TYPE_CHECKING, Iterator

from aclnngen.core.dtypes import category

from . import formula
from .errors import FieldProblem

if TYPE_CHECKING:
    from .formula import FormulaProgram
    from .model import OpSpec

INTEGRAL = ("integer", "bool")


def check(spec: "OpSpec", program: "FormulaProgram") -> None:
    families = {p.family for p in spec.products}
    arithmetic = spec.arithmetic
    if arithmetic is not None:
        for field in ("compute", "scalars"):
            for i, row in enumerate(getattr(arithmetic, field)):
                for j, family in enumerate(row.families):
                    if family not in families:
                        raise FieldProblem(
                            ("arithmetic", field, i, "families", j),
                            f"family {family!r} is not among the spec's products ({', '.join(sorted(families))})",
                        )
        for i, row in enumerate(arithmetic.compute):
            if category(row.compute) != "float":
                raise FieldProblem(
                    ("arithmetic", "compute", i, "compute"),
                    f"a compute dtype is a float dtype, not {row.compute!r} ({category(row.compute)})",
                )
    inexact = next(_inexact(program), None)
    if inexact is None:
        return
    covered = {d for row in (arithmetic.compute if arithmetic else ()) for d in row.storage}
    for dtype in integer_only_dtypes(spec):
        if dtype not in covered:
            raise FieldProblem(
                ("arithmetic",) if arithmetic else ("formula",),
                f"every tensor input accepts {dtype} and the formula holds {inexact}, which integer "
                f"arithmetic cannot compute: state the dtype {dtype} inputs are computed in "
                "(arithmetic.compute, e.g. {storage: [" + dtype + "], compute: float32}) and how the result "
                "becomes an integer (arithmetic.to_integer)",
            )


def integer_only_dtypes(spec: "OpSpec") -> list[str]:
    """The integer and bool dtypes of the op's tensor inputs, where every tensor input accepts one
    (so a call may hold integers only); empty otherwise."""
    per_input = [{d for row in p.dtypes for d in row.dtypes if category(d) in INTEGRAL} for p in spec.by_role("input")]
    if not per_input or not all(per_input):
        return []
    return sorted(set().union(*per_input))


def _inexact(program: "FormulaProgram") -> Iterator[str]:
    """What in the formula leaves the integers: a non-integer literal, pi, a division or a
    transcendental function, each described for the message."""
    for _, expr in program.lets + program.outputs:
        for node in formula.walk(expr.tree):
            if isinstance(node, formula.Literal) and node.type == "float" and not float(node.value).is_integer():
                yield f"the non-integer constant {node.value!r} (in `{expr.source}`)"
            elif isinstance(node, formula.Name) and node.kind == "constant" and node.id == "pi":
                yield f"the constant pi (in `{expr.source}`)"
            elif isinstance(node, formula.Binary) and node.op == "/":
                yield f"a division (in `{expr.source}`)"
            elif isinstance(node, formula.Call) and formula.FUNCTIONS[node.function].category == "transcendental":
                yield f"the transcendental function {node.function} (in `{expr.source}`)"
