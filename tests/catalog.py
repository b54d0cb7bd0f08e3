"""The op catalog as the tests see it, as PyTorch's OpInfo `op_db` is: every op the generator made
(`aclnngen.generated.OPS`), and picks by property. A test that needs "an op with two plain tensor
inputs" asks for one here instead of naming a built-in op, so a changed or removed spec moves the
test to another op that has the property, and fails with a clear message when none has it."""

from __future__ import annotations

import importlib
from collections.abc import Callable

from aclnngen.core.rules import supported_families
from aclnngen.generated import OPS


def meta(snake: str) -> dict:
    return importlib.import_module(f"aclnngen.generated.meta.{snake}").META


def binding(snake: str):
    return getattr(importlib.import_module(f"aclnngen.generated.ops.{snake}"), snake)


def an_op(what: str, has: Callable[[dict], bool]) -> str:
    """The first op of the catalog whose META `has` the property `what` describes."""
    for snake in OPS:
        if has(meta(snake)):
            return snake
    raise LookupError(f"no op of the catalog is {what}: add a spec that is, or a made-up one under tests/data")


def is_plain(m: dict) -> bool:
    """Two tensors in, named gradOutput and self, one tensor out, no scalar or attribute: the shape
    of a backward of an elementwise function of x (the call `binding(g, x)`)."""
    roles = [(p["name"], p["role"]) for p in m["params"]]
    return len(roles) == 3 and roles[:2] == [("gradOutput", "input"), ("self", "input")] and roles[2][1] == "output"


#: the op the tests call as "any plain op" (see is_plain)
PLAIN = an_op("a plain backward: binding(grad_output, self), one output", is_plain)


def names(m: dict, *roles: str) -> list[str]:
    """The C names of a META's parameters of the given roles, in order."""
    return [p["name"] for p in m["params"] if p["role"] in roles]


def has_rule(kind: str) -> Callable[[dict], bool]:
    return lambda m: any(r["kind"] == kind for r in m["rules"])


#: an op with an optional scalar (a NULL aclScalar* means its default)
WITH_OPTIONAL_SCALAR = an_op("an op with an optional scalar", lambda m: bool(names(m, "optional_scalar")))
#: an op with at least two required scalars, documented since 8.0.0 (tests of facts per release)
WITH_TWO_SCALARS = an_op(
    "an op with two required scalars, documented at 8.0.0",
    lambda m: len(names(m, "scalar")) >= 2 and bool(supported_families(m, "8.0.0")),
)
#: an op whose rules hold every tensor to one dtype
WITH_SAME_DTYPE = an_op("an op with a same_dtype rule", has_rule("same_dtype"))
#: an op whose rules bound the rank
WITH_MAX_RANK = an_op("an op with a max_rank rule", has_rule("max_rank"))
