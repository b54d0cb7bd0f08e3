"""The op catalog as the tests see it, as PyTorch's OpInfo `op_db` is: every op the generator made
(`aclnngen.generated.OPS`), and picks by property. A test that needs "an op with two plain tensor
inputs" asks for one here instead of naming a built-in op, so a changed or removed spec moves the
test to another op that has the property, and fails with a clear message when none has it."""

from __future__ import annotations

import functools
import importlib
from collections.abc import Callable

from aclnngen.core.rules import supported_families
from aclnngen.generated import OPS


def meta(snake: str) -> dict:
    return importlib.import_module(f"aclnngen.generated.meta.{snake}").META


def binding(snake: str):
    return getattr(importlib.import_module(f"aclnngen.generated.ops.{snake}"), snake)


def under_test(snake: str):
    """The op as the verdict's checks take it (verify/opcheck.OpUnderTest): its META, binding and
    reference, at its own release."""
    from aclnngen.core.meta import op_meta
    from aclnngen.verify import opcheck

    m = meta(snake)
    reference = importlib.import_module(f"aclnngen.generated.reference.{snake}")
    return opcheck.OpUnderTest(m, reference=reference, binding=binding(snake), version=op_meta(m).cann_version)


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
#: an op with a reduction output (the simulator asks it for a workspace)
WITH_REDUCTION = an_op(
    "an op with a reduction output", lambda m: "reduction" in (m.get("formula") or {}).get("outputs", {}).values()
)
#: an op whose rules bound the rank
WITH_MAX_RANK = an_op("an op with a max_rank rule", has_rule("max_rank"))


def call(snake: str, values: dict, **extra):
    """Calls a catalog op's binding with C-named `values` as a user would (leading inputs by
    position, the rest by Python name), plus `extra` keywords (validate=False, an output, ...)."""
    from aclnngen.verify.opcheck import binding_args

    positional, keywords = binding_args(meta(snake), values)
    return binding(snake)(*positional, **keywords, **extra)


def py_name(m: dict, name: str) -> str:
    """A parameter's keyword in the binding, from its C name."""
    return next(p["py"] for p in m["params"] if p["name"] == name)


def dtype_missing_on_a_family(version: str) -> tuple[str, str, str]:
    """(op, family, dtype): a float dtype every tensor of the op takes on one of its families and some
    tensor does not take on `family`, where the op is supported."""
    from aclnngen.core.rules import supported_dtypes

    for snake in OPS:
        m = meta(snake)
        tensors = names(m, "input", "output")
        families = supported_families(m, version)

        def everywhere(family):
            return set.intersection(*(set(supported_dtypes(m, t, family, version)) for t in tensors))

        known = set().union(*(everywhere(f) for f in families)) if families else set()
        for family in families:
            for dtype in sorted(d for d in known - everywhere(family) if d.startswith(("float", "bfloat"))):
                return snake, family, dtype
    raise LookupError("no op of the catalog lacks on one family a float dtype it takes on another")


def unsupported_family(version: str) -> tuple[str, str]:
    """(op, family): a family of the product table an op is not supported on at `version`."""
    from aclnngen.generated.products import FAMILIES

    for snake in OPS:
        missing = [f["id"] for f in FAMILIES if f["id"] not in supported_families(meta(snake), version)]
        if missing:
            return snake, missing[0]
    raise LookupError("every op of the catalog is supported on every family")


def family_gained(version: str) -> tuple[str, str, str]:
    """(op, family, earlier release): a family the op is supported on at `version` but not at an
    earlier release at which the op exists."""
    from aclnngen.core.releases import CannVersion, known_releases

    for snake in OPS:
        now = supported_families(meta(snake), version)
        earlier = [str(r) for r in known_releases(meta(snake)) if r < CannVersion(version)]
        for before in reversed(earlier):
            then = supported_families(meta(snake), before)
            gained = [f for f in now if f not in then]
            if then and gained:
                return snake, gained[0], before
    raise LookupError(f"no op of the catalog gained a family at {version}")


# META keys that name or describe an op without changing what a mechanism reads
_NAMING = {"name", "snake", "symbol", "cdef", "summary", "condition", "note", "reason"}


def structure(m: dict) -> str:
    """The op's META with its names left out and parameter names replaced by their position: two
    ops with equal structures differ only in what they are called."""
    import json

    position = {p["name"]: f"#{i}" for i, p in enumerate(m["params"])}
    position |= {p["py"]: f"#{i}" for i, p in enumerate(m["params"])}

    def strip(node):
        if isinstance(node, dict):
            return {k: strip(v) for k, v in node.items() if k not in _NAMING}
        if isinstance(node, (list, tuple)):
            return [strip(v) for v in node]
        return position.get(node, node) if isinstance(node, str) else node

    return json.dumps(strip(m), sort_keys=True, default=str)


def representatives() -> list[str]:
    """The first op of each distinct structure (computed once). A test that plants a mutation to show that a
    mechanism finds it takes these: an op that differs from another only by its name adds nothing
    to such a test, so it grows with the catalog's variety, not its size (a test of each op's own
    facts takes every op)."""
    return list(_representatives())


@functools.cache
def _representatives() -> tuple[str, ...]:
    seen, chosen = set(), []
    for snake in OPS:
        key = structure(meta(snake))
        if key not in seen:
            seen.add(key)
            chosen.append(snake)
    return tuple(chosen)


def representative_specs() -> list:
    """The spec files (specs/ops/<op>.yaml) of the representatives(), in their order: for tests of
    a mechanism that reads the spec rather than the generated META."""
    from aclnngen.codegen.loader import DEFAULT_SPECS_DIR

    return [DEFAULT_SPECS_DIR / "ops" / f"{snake}.yaml" for snake in representatives()]


def representative_specs_folder(folder):
    """A specs directory FOLDER/ops/ holding copies of representative_specs() (its tables the
    built-in ones): for a command whose subject is how it treats specs, not every op's facts.
    Returns FOLDER."""
    import shutil
    from pathlib import Path

    ops = Path(folder) / "ops"
    ops.mkdir(parents=True, exist_ok=True)
    for path in representative_specs():
        shutil.copy2(path, ops / path.name)
    return Path(folder)


def loaded_specs() -> list:
    """Every built-in spec as `load_all()` gives it (path and frozen spec), loaded once per process:
    each xdist worker collects every test module, and the modules that read the specs at collection
    loaded them again each (nine loads of every spec a worker)."""
    return list(_loaded_specs())


@functools.cache
def _loaded_specs() -> tuple:
    from aclnngen.codegen.loader import load_all

    return tuple(load_all())
