"""PyTorch on the CPU as the independent oracle: run a spec's oracle recipe on NumPy data.

A spec names an aten operator with an argument mapping, a composition of aten calls (`steps`), or a
recipe registered here: only for what data cannot say (autograd, or reshapes that depend on the
data's rank and channel count). torch is imported only when an oracle runs, so the runtime
works without it.
"""

from __future__ import annotations

import contextlib
from typing import Callable, Mapping, Sequence

import ml_dtypes
import numpy as np

from aclnngen.core import arithmetic as arithmetic_facts
from aclnngen.core.externs import ORACLE_RECIPES
from aclnngen.runtime.shapes import NUMPY_DTYPES

RECIPES: dict[str, Callable] = {}


def recipe(name: str):
    """Registers the code of a recipe `core.externs.ORACLE_RECIPES` names (the generator checks a
    spec's recipe against that list); a name it does not list is refused."""
    if name not in ORACLE_RECIPES:
        raise ValueError(f"oracle recipe {name!r} is not in aclnngen.core.externs.ORACLE_RECIPES; add it there")

    def register(fn):
        RECIPES[name] = fn
        return fn

    return register


def _torch():
    try:
        import torch  # deferred: weight (torch is loaded only when the oracle runs)
    except ImportError as exc:  # pragma: no cover - CI installs torch
        raise RuntimeError("the PyTorch oracle needs torch (pip install -e '.[test]')") from exc
    return torch


def to_torch(array: np.ndarray):
    torch = _torch()
    array = np.array(array, order="C", copy=True)  # keeps 0-d arrays 0-d, unlike ascontiguousarray
    if array.dtype == ml_dtypes.bfloat16:
        return torch.from_numpy(array.view(np.uint16)).view(torch.bfloat16)
    return torch.from_numpy(array)


def to_numpy(tensor) -> np.ndarray:
    torch = _torch()
    tensor = tensor.detach().contiguous()
    if tensor.dtype == torch.bfloat16:
        return tensor.view(torch.uint16).numpy().view(ml_dtypes.bfloat16).copy()
    return tensor.numpy().copy()


@recipe("swish_autograd")
def swish_autograd(grad_output, self, beta=None):
    """d/dx of x * sigmoid(beta * x), through autograd on float32-upcast inputs (float64 stays)."""
    torch = _torch()
    beta = 1.0 if beta is None else float(beta)
    compute = torch.float64 if self.dtype == torch.float64 else torch.float32
    x = self.to(compute).requires_grad_()
    (grad,) = torch.autograd.grad(x * torch.sigmoid(beta * x), x, grad_output.to(compute).expand_as(x))
    return grad.to(self.dtype)


@recipe("prelu_kernel")
def prelu_kernel(grad_output, self, weight):
    """aten's PReLU backward kernel with the weight along dim 1, its unreduced gradient summed to the
    weight's shape (every dim but the channel dim)."""
    torch = _torch()
    channels = weight.numel()
    if channels == 1 or self.dim() < 2:
        w = weight.reshape(())
    else:
        w = weight.reshape((1, channels) + (1,) * (self.dim() - 2))
    grad_input, grad_weight = torch.ops.aten._prelu_kernel_backward(grad_output.expand_as(self), self, w)
    dims = [d for d in range(grad_weight.dim()) if not (channels > 1 and d == 1)]
    summed = (
        grad_weight.to(torch.float64 if self.dtype == torch.float64 else torch.float32).sum(dims)
        if dims
        else grad_weight
    )
    return grad_input.reshape(self.shape), summed.to(self.dtype).reshape(weight.shape)


def _torch_dtype(array):
    """The torch dtype of a NumPy array (through the same conversion the tensors take)."""
    return to_torch(np.zeros((), dtype=np.asarray(array).dtype)).dtype


def _argument(arg, values: Mapping[str, object], *, positional: bool, call: "_Call"):
    """One oracle argument as data: a parameter (a py name when positional, `{param: name}` as a
    keyword), `{const: value}` (or a plain keyword value), `{dtype_of: tensor}`, `{dtype: name}`
    or `{expr: source}` (a number from the scalars and attributes)."""
    if isinstance(arg, Mapping):
        if "const" in arg:
            return arg["const"]
        if "dtype_of" in arg:
            return _torch_dtype(values[arg["dtype_of"]])
        if "dtype" in arg:
            return _torch_dtype(np.zeros((), dtype=NUMPY_DTYPES[arg["dtype"]]))
        if "expr" in arg:
            if call.expressions is None:
                raise OracleStepError(f"{call.where}: the argument {{expr: {arg['expr']!r}}} needs the op's reference")
            return call.expressions(arg["expr"], {k: v for k, v in values.items() if not isinstance(v, np.ndarray)})
        if "param" in arg:
            arg = arg["param"]
        else:
            raise ValueError(f"unknown oracle argument {dict(arg)!r}")
    elif not positional:
        return arg  # a plain keyword value is a constant
    value = values.get(arg)
    return call.tensor(value) if isinstance(value, np.ndarray) else value


class _Call:
    """How one oracle run passes its arguments: where it is (for messages), the dtype tensors are
    cast to (`compute`), and the evaluator of `{expr: ...}` arguments."""

    def __init__(self, where: str, compute: str | None, expressions: Callable | None):
        self.where, self.compute, self.expressions = where, compute, expressions

    def tensor(self, value: np.ndarray):
        if self.compute is not None and value.dtype.kind in "fiu":  # complex and bool data keep theirs
            value = value.astype(NUMPY_DTYPES[self.compute])
        return to_torch(value)


# aten operators whose answer at a NaN forward input depends on the element's position: the
# vectorised body selects 0, the scalar tail and strided inputs pass the gradient
# (torch-oracle.md, section 2). Only there is a NaN position left out of the comparison; every
# other op is judged at NaN inputs like anywhere else. tests/verify/test_special_values.py checks each
# entry against the torch in use, so an entry a fixed torch no longer needs fails there.
NAN_POSITION_DEPENDENT = frozenset({"hardtanh_backward", "softshrink_backward"})


def nan_position_dependent(oracle: Mapping) -> bool:
    """Whether the oracle's answer at a NaN forward input depends on where the element lies."""
    ops = [oracle.get("op")] if oracle.get("kind") == "aten" else [s.get("op") for s in oracle.get("steps") or ()]
    return any(op in NAN_POSITION_DEPENDENT for op in ops)


class OracleStepError(RuntimeError):
    """A step of a `steps` oracle failed: names the step, its aten op and the reason."""


def _aten(op: str, where: str):
    torch = _torch()
    try:
        return getattr(torch.ops.aten, op)
    except (AttributeError, RuntimeError):
        raise OracleStepError(f"{where}: torch has no aten operator {op!r}") from None


def _call(step: Mapping, values: Mapping[str, object], call: "_Call"):
    fn = _aten(step["op"], call.where)
    args = [_argument(arg, values, positional=True, call=call) for arg in step.get("args") or ()]
    kwargs = {
        key: _argument(arg, values, positional=False, call=call) for key, arg in (step.get("kwargs") or {}).items()
    }
    try:
        return fn(*args, **kwargs)
    except (RuntimeError, TypeError, ValueError) as exc:
        raise OracleStepError(f"{call.where}: aten::{step['op']} failed: {str(exc).splitlines()[0]}") from exc


def _steps(oracle: Mapping, values: Mapping[str, object], expressions: Callable | None) -> tuple:
    """Run each step in order; a step's result (a tensor) is visible to later steps by its name."""
    known: dict[str, object] = dict(values)
    for i, step in enumerate(oracle["steps"]):
        names = [step["name"]] if isinstance(step["name"], str) else list(step["name"])
        where = f"oracle step {i} ({', '.join(names)})"
        result = _call(step, known, _Call(where, oracle.get("compute"), expressions))
        results = result if isinstance(result, tuple) else (result,)
        if len(results) != len(names):
            raise OracleStepError(
                f"oracle step {i}: aten::{step['op']} returned {len(results)} result(s) "
                f"for the {len(names)} name(s) {names}"
            )
        known.update(zip(names, (to_numpy(r) for r in results)))
    return tuple(to_torch(known[name]) for name in oracle["outputs"])


def run(
    oracle: Mapping,
    values: Mapping[str, object],
    *,
    expressions: Callable | None = None,
    output_dtypes: Sequence | None = None,
    to_integer: str = arithmetic_facts.DEFAULT_TO_INTEGER,
) -> tuple[np.ndarray, ...]:
    """Run `oracle` (a spec's oracle as data) on `values` (py names -> arrays or scalars).
    `expressions(source, scalars)`: the value of an `{expr: source}` argument (the generated
    reference's `oracle_argument`). An oracle with `compute` returns its results in
    `output_dtypes` (one per output), rounded to integers by `to_integer`."""
    torch = _torch()
    flags = torch.backends.mkldnn.flags(enabled=False) if oracle.get("disable_mkldnn") else contextlib.nullcontext()
    if oracle["kind"] == "steps":
        with flags:
            result = _steps(oracle, values, expressions)
    elif oracle["kind"] == "aten":
        with flags:
            result = _call(oracle, values, _Call(f"oracle aten::{oracle['op']}", oracle.get("compute"), expressions))
    else:
        call = _Call(f"oracle recipe {oracle['recipe']}", None, expressions)
        args = [_argument(arg, values, positional=True, call=call) for arg in oracle["args"]]
        try:
            fn = RECIPES[oracle["recipe"]]
        except KeyError:
            raise KeyError(f"unknown oracle recipe {oracle['recipe']!r}; known: {', '.join(sorted(RECIPES))}") from None
        result = fn(*args)
    results = result if isinstance(result, tuple) else (result,)
    if oracle.get("compute") is not None and output_dtypes is not None:
        # computed in `compute`, stored once in each output's dtype, by torch's own rounding
        results = tuple(_stored(r, np.dtype(dt), to_integer) for r, dt in zip(results, output_dtypes))
    return tuple(to_numpy(r) for r in results)


_ROUNDINGS = {"truncate": "trunc", "nearest_even": "round", "floor": "floor"}  # torch.round: ties to even
assert set(_ROUNDINGS) == set(arithmetic_facts.TO_INTEGER), "every rounding the spec language names"


def _stored(result, dtype: np.dtype, to_integer: str):
    torch = _torch()
    if dtype.kind in "iu" and result.is_floating_point():
        result = getattr(torch, _ROUNDINGS[to_integer])(result)
    return result.to(_torch_dtype(np.zeros((), dtype=dtype)))


def cast_to(result: np.ndarray, dtype, to_integer: str = arithmetic_facts.DEFAULT_TO_INTEGER) -> np.ndarray:
    """An oracle result stored in `dtype` as the library stores its result in an output of that
    dtype (torch's own rounding; integers by `to_integer`); unchanged when it has the dtype."""
    dtype = np.dtype(dtype)
    if result.dtype == dtype:
        return result
    contiguous = result if result.flags.c_contiguous else result.copy()
    return to_numpy(_stored(to_torch(contiguous), dtype, to_integer))
