"""NumPy numerics that rendered formulas call as `m.<function>(...)`, and the driver `evaluate`.

Two precision modes:
- "opmath" models the device: fp16/bf16/fp32 tensors are computed in float32 and fp64 in float64;
  inputs and scalars are cast to that compute dtype, and each output is rounded once
  (round-to-nearest-even) to its storage dtype. Complex tensors compute in complex64 (complex128
  when any storage is complex128 or float64); integer and bool tensors alone compute exactly in
  int64 (a float or complex tensor among them decides instead).
- "golden" computes in float64 (complex128 with a complex tensor; int64 for integer-only ops) and
  returns outputs in that dtype.
Literals and constants of a formula come through `m.lit`/`m.pi`/... so they take the compute dtype
instead of promoting float32 work to float64.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Mapping

import ml_dtypes
import numpy as np

from aclnngen.core import arithmetic as arithmetic_facts
from aclnngen.core import externs
from aclnngen.core.dtypes import category
from aclnngen.core.kinds.per_channel import weight_layout
from aclnngen.runtime.shapes import NUMPY_DTYPES, dtype_name_of

from . import fused

MODES = ("opmath", "golden")
FLOAT_DTYPES = tuple(np.dtype(t) for t in (np.float16, ml_dtypes.bfloat16, np.float32, np.float64))
# Every dtype a spec may name: floats, integers, bool and complex.
STORAGE_DTYPES = tuple(NUMPY_DTYPES.values())


def storage_dtype(dtype, what: str = "tensor") -> np.dtype:
    """`dtype` as a supported storage dtype (any dtype a spec may name), else TypeError naming it."""
    try:
        resolved = np.dtype(dtype)
    except TypeError:
        raise TypeError(f"{what}: {dtype!r} is not a dtype") from None
    if resolved not in STORAGE_DTYPES:
        raise TypeError(
            f"{what}: dtype {resolved} is not supported; the numerics support "
            f"{', '.join(d.name for d in STORAGE_DTYPES)}"
        )
    return resolved


def compute_dtype(mode: str, storage_dtypes) -> np.dtype:
    """The dtype a formula computes in: the widest category present decides (complex over float
    over integer and bool), then the mode and whether a 64-bit float or complex is stored."""
    if mode not in MODES:
        raise ValueError(f"mode {mode!r} is not one of {', '.join(MODES)}")
    names = [dtype_name_of(np.dtype(d)) for d in storage_dtypes]
    kinds = {category(n) for n in names}
    wide = mode == "golden" or any(n in ("float64", "complex128") for n in names)
    if "complex" in kinds:
        return np.dtype(np.complex128 if wide else np.complex64)
    if "float" in kinds or not kinds:
        return np.dtype(np.float64 if wide else np.float32)
    return np.dtype(np.int64)  # integers and bools only: exact arithmetic


def golden_dtype(compute: np.dtype) -> np.dtype:
    """The dtype golden outputs are returned in, for a golden compute dtype."""
    return np.dtype(compute)


@dataclass(frozen=True)
class Arithmetic:
    """What a spec's `arithmetic` section decides for one evaluation (aclnngen/core/arithmetic.py):
    the dtype opmath computes in (None: the default model above) and how a float result becomes an
    integer output."""

    compute: np.dtype | None = None
    to_integer: str = arithmetic_facts.DEFAULT_TO_INTEGER


DEFAULT_ARITHMETIC = Arithmetic()
_TO_INTEGER = {"truncate": np.trunc, "nearest_even": np.rint, "floor": np.floor}
assert set(_TO_INTEGER) == set(arithmetic_facts.TO_INTEGER), "every rounding the spec language names"


class Numerics:
    """The functions of the formula language (codegen/formula.py FUNCTIONS) for one evaluation."""

    def __init__(
        self, mode: str = "opmath", storage_dtypes: Mapping[str, object] = {}, compute: np.dtype | None = None
    ):
        self.storage = {name: storage_dtype(dt, name) for name, dt in storage_dtypes.items()}
        self.mode = mode
        self.dtype = compute_dtype(mode, self.storage.values())
        if compute is not None:  # the spec states the compute dtype; golden still computes in float64
            self.dtype = np.dtype(compute) if mode == "opmath" else np.dtype(np.float64)

    # --- values --------------------------------------------------------------------------------
    @staticmethod
    def truth(condition) -> bool:
        """A condition on scalars and attributes (`where` with no tensor in its condition) as a
        Python bool: the rendered formula computes only the branch taken."""
        if np.ndim(condition) != 0:
            raise ValueError(f"a condition on scalars and attributes gave an array of shape {np.shape(condition)}")
        return bool(condition)

    @staticmethod
    def lazy(compute):
        """A let computed when first read, once (a let only a branch not taken needs never is)."""
        cell: list = []

        def value():
            if not cell:
                cell.append(compute())
            return cell[0]

        return value

    def lit(self, value) -> np.generic:
        return self.dtype.type(value)

    @property
    def pi(self) -> np.generic:
        return self.dtype.type(np.pi)

    @property
    def inf(self) -> np.generic:
        return self.dtype.type(np.inf)

    @property
    def nan(self) -> np.generic:
        return self.dtype.type(np.nan)

    def tensor(self, value, name: str = "tensor") -> np.ndarray:
        array = np.asarray(value)
        storage_dtype(array.dtype, name)
        if array.dtype == self.dtype and array.dtype.kind == "f" and array.flags.c_contiguous and array.flags.aligned:
            # already what a copy would be: read in place (read-only, so no output is the input)
            view = array.view()
            view.flags.writeable = False
            return view
        # A fresh, aligned, C-ordered copy otherwise: NumPy picks its loops (SIMD with fused
        # multiply-adds for complex products, or scalar ones) by layout and alignment, and the
        # result must not depend on where the data lives (device views vs host arrays)
        return np.array(array, dtype=self.dtype, order="C", copy=True)  # keeps 0-d arrays 0-d

    def scalar(self, value, name: str = "scalar") -> np.generic:
        if value is None:
            raise TypeError(f"scalar {name!r} is None; substitute the optional scalar's default first")
        if isinstance(value, (complex, np.complexfloating)) and self.dtype.kind != "c":
            raise TypeError(f"scalar {name!r} is complex ({value!r}) but the formula computes in {self.dtype.name}")
        if not isinstance(value, (bool, int, float, complex, np.bool_, np.integer, np.floating, np.complexfloating)):
            raise TypeError(f"scalar {name!r} must be a number, found {type(value).__name__}")
        if self.dtype.kind == "i" and isinstance(value, (float, np.floating)) and not np.isfinite(value):
            return np.float64(value)  # no integer holds it: comparisons with it stay well defined
        return self.dtype.type(value)

    def _num(self, x):
        """Python numbers, booleans and integer arrays as the compute dtype; floats unchanged."""
        if isinstance(x, (bool, int, float, complex)):
            return self.dtype.type(x)
        if isinstance(x, (np.ndarray, np.generic)) and x.dtype.kind in "biu":
            return x.astype(self.dtype)
        return x

    # --- elementwise ---------------------------------------------------------------------------
    def where(self, cond, a, b):
        return fused.where(cond, self._num(a), self._num(b))  # np.where's bits, branch-free

    def exp(self, x):
        return np.exp(self._num(x))

    def log(self, x):
        return np.log(self._num(x))

    def log1p(self, x):
        return np.log1p(self._num(x))

    def expm1(self, x):
        return np.expm1(self._num(x))

    def sqrt(self, x):
        return np.sqrt(self._num(x))

    def abs(self, x):
        return np.abs(self._num(x))

    def sign(self, x):
        return np.sign(self._num(x))

    def erf(self, x):
        x = self._num(x)
        if dtype_of(x) == np.float32:  # opmath float32: vectorised, within fastmath.MAX_ULPS
            from .fastmath import erf_float32  # deferred: only formulas with erf need it

            result = erf_float32(x)
            return result[()] if isinstance(x, np.generic) else result
        from scipy import special  # deferred: scipy costs ~0.5 s to import; float64 (golden) needs it

        return special.erf(x)

    def tanh(self, x):
        return np.tanh(self._num(x))

    def conj(self, x):
        return np.conj(self._num(x))

    def sigmoid(self, x):
        # exp of -|x| never overflows; the negative side uses e / (1 + e) to keep tiny results
        x = self._num(x)
        if dtype_of(x).kind == "c":  # no order on complex numbers: the plain form
            one = self.dtype.type(1)
            return one / (one + np.exp(-x))
        e = np.exp(-np.abs(x))
        one = self.dtype.type(1)
        return np.where(x >= 0, one, e) / (one + e)  # one division: the numerator is selected

    def minimum(self, a, b):
        return np.minimum(self._num(a), self._num(b))

    def maximum(self, a, b):
        return np.maximum(self._num(a), self._num(b))

    def isnan(self, x):
        return np.isnan(self._num(x))

    def round_to(self, x, tensor: str):
        if tensor not in self.storage:
            raise ValueError(
                f"round_to: no storage dtype for tensor {tensor!r}; known: {', '.join(self.storage) or 'none'}"
            )
        rounded = np.asarray(self._num(x)).astype(self.storage[tensor]).astype(self.dtype)
        return rounded[()] if rounded.ndim == 0 else rounded

    # --- channels and reductions ---------------------------------------------------------------
    def per_channel(self, w, x):
        w, x = np.asarray(self._num(w)), np.asarray(x)
        layout = weight_layout(w.shape, x.shape)  # the rule's own definition: validator and kernel agree
        if layout is None:
            raise ValueError(
                f"per_channel: a weight of {w.size} elements needs a tensor with "
                f"{w.size} channels in dim 1, found shape {x.shape}"
            )
        return w.reshape(layout)

    def sum_per_channel(self, e, w):
        # Summation order follows memory order: a C-ordered copy makes the result independent of
        # the inputs' layouts (a strided view on the device and a contiguous array on the host).
        e, w = np.asarray(self._num(e), order="C"), np.asarray(w)
        if w.size == 1:
            return np.asarray(np.sum(e, dtype=self.dtype)).reshape(w.shape)
        if weight_layout(w.shape, e.shape) is None:
            raise ValueError(
                f"sum_per_channel: a weight of {w.size} elements needs {w.size} "
                f"channels in dim 1, found shape {e.shape}"
            )
        axes = (0,) + tuple(range(2, e.ndim))
        return np.sum(e, axis=axes, dtype=self.dtype)  # (C,), whatever axes the weight's C lie on

    def sum(self, e, dims):
        e = np.asarray(self._num(e), order="C")
        return np.sum(e, axis=_axes("sum", dims, e.ndim), dtype=self.dtype)

    def sum_keepdim(self, e, dims):
        e = np.asarray(self._num(e), order="C")
        return np.sum(e, axis=_axes("sum_keepdim", dims, e.ndim), dtype=self.dtype, keepdims=True)

    def softmax(self, x, dims):
        # exp of (x - max) never overflows; the max is taken along the same dims as the sum
        x = np.asarray(self._num(x), order="C")
        axes = _axes("softmax", dims, x.ndim)
        shifted = x - np.max(x, axis=axes, keepdims=True) if x.size else x
        e = np.exp(shifted)
        return e / np.sum(e, axis=axes, dtype=self.dtype, keepdims=True)

    def extern(self, kernel: str, *args):
        if kernel not in externs.EXTERN_KERNELS:
            raise ValueError(
                f"no extern kernel {kernel!r} is registered; registered: "
                f"{', '.join(sorted(externs.EXTERN_KERNELS)) or 'none'}"
            )
        return externs.EXTERN_KERNELS[kernel](self, *args)


def _axes(function: str, dims, ndim: int) -> tuple[int, ...]:
    """`dims` (an int or a tuple of ints, negative ones counting from the end) as axes of an
    `ndim`-dimensional array. A 0-d array has one dim as torch sees it: 0 and -1 name it, and
    reducing over it reduces over nothing."""
    dims = (dims,) if isinstance(dims, (int, np.integer)) and not isinstance(dims, bool) else dims
    if not isinstance(dims, tuple) or not all(
        isinstance(d, (int, np.integer)) and not isinstance(d, bool) for d in dims
    ):
        raise TypeError(f"{function}: dims must be integers, found {dims!r}")
    span = max(ndim, 1)
    for d in dims:
        if not -span <= d < span:
            raise ValueError(
                f"{function}: dim {d} is out of range for a tensor of rank {ndim} (allowed {-span}..{span - 1})"
            )
    if ndim == 0:
        return ()
    return tuple(sorted({int(d) % ndim for d in dims}))


def dtype_of(x) -> np.dtype:
    """The dtype of an array, a NumPy scalar or a traced value (evaluate/fused.py)."""
    return x.dtype if hasattr(x, "dtype") else np.asarray(x).dtype


def check_names(inputs: Mapping, scalars: Mapping, attributes: Mapping) -> None:
    clash = (set(inputs) & set(scalars)) | (set(inputs) & set(attributes)) | (set(scalars) & set(attributes))
    if clash:
        raise ValueError(f"names given twice among inputs, scalars and attributes: {sorted(clash)}")


def evaluate(
    body: Callable[..., tuple],
    *,
    inputs: Mapping[str, np.ndarray],
    scalars: Mapping[str, object],
    attributes: Mapping[str, object],
    output_dtypes: Mapping[str, object],
    mode: str = "opmath",
    arithmetic: Arithmetic = DEFAULT_ARITHMETIC,
) -> tuple[np.ndarray, ...]:
    """Run a rendered formula `body(m, **values)` and return its outputs, in the order of
    `output_dtypes`: rounded once to their storage dtypes (opmath) or as float64 (golden).
    `arithmetic`: the spec's compute dtype and integer rounding for this call."""
    arrays = {name: np.asarray(value) for name, value in inputs.items()}
    outputs = {name: storage_dtype(dt, name) for name, dt in output_dtypes.items()}
    check_names(arrays, scalars, attributes)
    m = Numerics(mode, {**{n: a.dtype for n, a in arrays.items()}, **outputs}, compute=arithmetic.compute)
    with np.errstate(all="ignore"):  # inf/NaN are legitimate results of these formulas
        values = {name: m.tensor(a, name) for name, a in arrays.items()}
        values.update({name: m.scalar(v, name) for name, v in scalars.items()})
        values.update(attributes)
        results = body(m, **values)
        if not isinstance(results, tuple) or len(results) != len(outputs):
            raise ValueError(
                f"the formula returned {type(results).__name__} "
                f"{len(results) if isinstance(results, tuple) else ''}; expected a tuple "
                f"of {len(outputs)} output(s) ({', '.join(outputs)})"
            )
        return tuple(
            _as_output(r, golden_dtype(m.dtype) if mode == "golden" else dt, arithmetic.to_integer)
            for r, dt in zip(results, outputs.values())
        )


def _as_output(result, dtype, to_integer: str = arithmetic_facts.DEFAULT_TO_INTEGER) -> np.ndarray:
    """A result in its output dtype: a fresh, writeable array of the formula's already in that
    dtype is returned as is (no second full-size copy), anything else is converted (a copy). A
    float result becomes an integer output by the spec's rounding (truncation is the C cast)."""
    if isinstance(result, np.ndarray) and result.dtype == dtype and result.flags.owndata and result.flags.writeable:
        return result
    return stored(np.asarray(result), np.dtype(dtype), to_integer)


def stored(result: np.ndarray, dtype: np.dtype, to_integer: str = arithmetic_facts.DEFAULT_TO_INTEGER) -> np.ndarray:
    """`result` converted to the storage `dtype`, a float result rounded to an integer one by
    `to_integer` (aclnngen/core/arithmetic.py)."""
    if dtype.kind in "iu" and result.dtype.kind == "f" and to_integer != "truncate":
        result = _TO_INTEGER[to_integer](result)
    return result.astype(dtype)
