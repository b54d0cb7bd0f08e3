"""The anchor each op is measured against, called as a PyTorch user calls it: the aten operator on
CPU tensors that share the NumPy arrays' memory (`torch.from_numpy`, no copy), with its arguments
prepared once, outside the timed call. Not the project's oracle wrapper (verify/oracle.py), which
copies every input and output and, for some ops, runs an autograd recipe.

An op whose oracle is an aten call is anchored on that call. An op whose oracle is a recipe is
anchored on the aten operator PyTorch itself runs for it (RECIPE_ANCHORS), with the same data.
"""

from __future__ import annotations

from typing import Any, Callable, Mapping

import ml_dtypes
import numpy as np

from aclnngen.core.meta import op_meta

# oracle recipe -> (aten operator, how its arguments come from the op's Python-named values)
RECIPE_ANCHORS: dict[str, tuple[str, Callable[[Mapping[str, Any]], list]]] = {
    # torch.nn.functional.silu's backward (Swish with beta = 1, the default)
    "swish_autograd": ("silu_backward", lambda v: [v["grad_output"], v["self"]]),
    # torch.nn.functional.prelu's backward kernel (its weight reduction is a separate sum)
    "prelu_kernel": ("_prelu_kernel_backward", lambda v: [v["grad_output"], v["self"], v["weight"]]),
}


def zero_copy(torch, array: np.ndarray):
    """A CPU tensor over the array's own memory."""
    if array.dtype == ml_dtypes.bfloat16:
        return torch.from_numpy(array.view(np.uint16)).view(torch.bfloat16)
    return torch.from_numpy(array)


def anchor(torch, meta: Mapping, by_py: Mapping[str, Any]) -> tuple[str, Callable[[], object]]:
    """(what is called, a function making the call) for the op `meta` on the values `by_py`."""
    oracle = op_meta(meta).oracle
    values = {k: zero_copy(torch, v) if isinstance(v, np.ndarray) else v for k, v in by_py.items()}
    if oracle.get("kind") == "aten":
        fn = getattr(torch.ops.aten, oracle["op"])
        args = [_arg(a, values, positional=True) for a in oracle.get("args") or ()]
        kwargs = {k: _arg(a, values, positional=False) for k, a in (oracle.get("kwargs") or {}).items()}
        name = oracle["op"]
    elif oracle.get("kind") == "recipe" and oracle.get("recipe") in RECIPE_ANCHORS:
        name, build = RECIPE_ANCHORS[oracle["recipe"]]
        fn, args, kwargs = getattr(torch.ops.aten, name), build(values), {}
    else:
        raise LookupError(f"no anchor for an oracle of kind {oracle.get('kind')!r}")

    def call():
        return fn(*args, **kwargs)

    return f"torch.ops.aten.{name}", call


def _arg(arg, values: Mapping[str, Any], *, positional: bool):
    if isinstance(arg, Mapping):
        if "const" in arg:
            return arg["const"]
        if "param" in arg:
            return values.get(arg["param"])
        if "dtype_of" in arg:
            return values[arg["dtype_of"]].dtype
        raise LookupError(f"an anchor cannot pass {dict(arg)!r}")
    return values.get(arg) if positional else arg
