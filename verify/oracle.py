"""PyTorch on the CPU as the independent oracle: run a spec's oracle recipe on NumPy data.

A spec names either an aten operator with an argument mapping, or a recipe registered here (for ops
that need autograd, reshapes or sums). torch is imported only when an oracle runs, so the runtime
works without it.
"""

from __future__ import annotations

import contextlib
from typing import Callable, Mapping

import ml_dtypes
import numpy as np

RECIPES: dict[str, Callable] = {}


def recipe(name: str):
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
    summed = grad_weight.to(torch.float64 if self.dtype == torch.float64 else torch.float32).sum(dims) if dims else grad_weight
    return grad_input.reshape(self.shape), summed.to(self.dtype).reshape(weight.shape)


def run(oracle: Mapping, values: Mapping[str, object]) -> tuple[np.ndarray, ...]:
    """Run `oracle` (a spec's oracle as data) on `values` (py names -> arrays or scalars)."""
    torch = _torch()
    args = [to_torch(v) if isinstance(v, np.ndarray) else v for v in (values.get(name) for name in oracle["args"])]
    if oracle["kind"] == "aten":
        fn = getattr(torch.ops.aten, oracle["op"])
        flags = torch.backends.mkldnn.flags(enabled=False) if oracle.get("disable_mkldnn") else contextlib.nullcontext()
        with flags:
            result = fn(*args, **dict(oracle.get("kwargs") or {}))
    else:
        try:
            fn = RECIPES[oracle["recipe"]]
        except KeyError:
            raise KeyError(f"unknown oracle recipe {oracle['recipe']!r}; known: {', '.join(sorted(RECIPES))}") from None
        result = fn(*args)
    results = result if isinstance(result, tuple) else (result,)
    return tuple(to_numpy(r) for r in results)
