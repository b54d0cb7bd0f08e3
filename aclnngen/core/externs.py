"""The hand-written code a spec may name, which the generator checks names against.

- `EXTERN_KERNELS`: kernels for formulas the language cannot express. `extern("name", a, b)` in a
  spec calls `EXTERN_KERNELS["name"](m, a, b)` (m: the verdict's Numerics object; arguments
  already in the compute dtype). Register one with `@register_extern("name")` in a module imported
  before the specs are generated; the formula parser checks the name and the argument count.
- `ORACLE_RECIPES`: the names of the PyTorch oracle recipes (`oracle: {kind: recipe}` in a spec).
  Their code is in `verify/oracle.py`, which registers exactly these names (its `recipe` refuses
  any other), so the generator knows them without importing torch or the verdict.
"""

from __future__ import annotations

from typing import Any, Callable

EXTERN_KERNELS: dict[str, Callable[..., Any]] = {}


def register_extern(name: str):
    """Decorator registering `kernel(m, *args)` under `name` for extern(...) in formulas."""

    def register(kernel):
        if name in EXTERN_KERNELS:
            raise ValueError(f"extern kernel {name!r} is already registered")
        EXTERN_KERNELS[name] = kernel
        return kernel

    return register


ORACLE_RECIPES: tuple[str, ...] = ("prelu_kernel", "swish_autograd")


def oracle_domain_source(where: str) -> str:
    """An oracle domain's condition as the number the evaluator computes (1 inside, 0 outside):
    the key of its rendered body among the generated reference's ORACLE_EXPRESSIONS."""
    return f"where({where}, 1, 0)"
