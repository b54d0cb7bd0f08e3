"""Shapes and dtypes of op arguments as NumPy sees them; the rules themselves are `aclnngen.core`.

- `NUMPY_DTYPES`: the NumPy dtype of every dtype name a spec may use (`core.dtypes.ALL_DTYPES`).
- `promote_dtypes(*dtypes)`: `core.dtypes` promotion over NumPy dtypes, dtype names or arrays.
- `infer_outputs(meta, values, version)`: the shape and NumPy dtype of every output tensor, from the
  rules that hold at `version` (`core.rules.infer_output_names`; see its docstring).
- `dtype_name(x)`, `is_contiguous(x)`, `shape_of(x)`: what the validator and the case builders
  read from array-likes (NumPy arrays, or anything with `.shape` and `.dtype`).

META is plain data (codegen/metadata.py); nothing here knows an op by name.
"""

from __future__ import annotations

import operator
from typing import Any, Mapping

import ml_dtypes
import numpy as np

from aclnngen.core.dtypes import ALL_DTYPES, BITS_ONLY, PromotionError, promote_names
from aclnngen.core.releases import CannVersion
from aclnngen.core.rules import infer_output_names, output_inputs

#: The dtype of an aclScalar whose spec names none (as the binding creates it).
DEFAULT_SCALAR_DTYPE = "float32"


def storage_dtype(name: str) -> np.dtype:
    """The NumPy dtype that holds a spec dtype: NumPy's own, else ml_dtypes' (bfloat16, float8_*,
    float4_e2m1fn, int4: one byte per element), else (`BITS_ONLY`) a one-field record of raw bytes
    named after the dtype, distinct from uint8 so the binding still passes the right aclDataType."""
    if name in BITS_ONLY:
        return np.dtype([(name, "u1")])
    if hasattr(ml_dtypes, name):
        return np.dtype(getattr(ml_dtypes, name))
    return np.dtype(name)


# The NumPy dtype of every dtype name a spec may use (core.dtypes.ALL_DTYPES).
NUMPY_DTYPES: dict[str, np.dtype] = {name: storage_dtype(name) for name in ALL_DTYPES}


# native-byte-order dtype objects -> their name (np.dtype.name is slow to compute)
_DTYPE_NAMES: dict[Any, str] = {dt: name for name, dt in NUMPY_DTYPES.items()}


def strided_elements(raw: np.ndarray, dtype: np.dtype, shape, strides, *, writeable: bool = True) -> np.ndarray:
    """A view of `raw` (bytes, as uint8) as elements of `dtype` with `shape` and element `strides`.
    Strided over plain words of the element's size, then seen as the dtype: `as_strided` rebuilds
    an array from its interface, which cannot name every dtype (ml_dtypes' float8_e5m2 reads as an
    unknown '<f1')."""
    words = raw.view(np.dtype(f"V{dtype.itemsize}"))
    view = np.lib.stride_tricks.as_strided(
        words, shape=shape, strides=[s * dtype.itemsize for s in strides], writeable=writeable
    )
    return view.view(dtype)


def promote_dtypes(*dtypes: Any) -> np.dtype:
    """The dtype `dtypes` (NumPy dtypes, dtype names or arrays' `.dtype`) promote to, like
    torch.result_type: float16 + bfloat16 -> float32, int + float -> the float, bool + x -> x.
    Raises PromotionError if they have no common dtype."""
    if not dtypes:
        raise PromotionError("promote_dtypes needs at least one dtype")
    names = [dtype_name_of(d) for d in dtypes]
    result = promote_names(names)
    if result is None:
        raise PromotionError(f"dtypes {', '.join(map(str, names))} have no common dtype")
    return NUMPY_DTYPES[result]


# --- reading array-likes ------------------------------------------------------------------------


def dtype_name_of(dtype: Any) -> str:
    """The spec's name for a dtype object (NumPy dtype, scalar type, name, or e.g. torch.float32).

    A non-native byte order is reported as such, so it never passes for the native dtype."""
    try:
        known = _DTYPE_NAMES.get(dtype)  # fast path: a native dtype of the table
    except TypeError:  # unhashable
        known = None
    if known is not None:
        return known
    if dtype is None:  # np.dtype(None) would mean float64
        return "None"
    try:
        dt = np.dtype(dtype)
    except Exception:
        text = str(dtype)
        return text.rsplit(".", 1)[-1] if text.startswith("torch.") else text
    name = dt.name
    if not dt.isnative:
        return f"{name} (non-native byte order)"
    return name


def dtype_name(x: Any) -> str:
    """The dtype name of an array-like's `.dtype`."""
    return dtype_name_of(x.dtype)


def shape_of(x: Any) -> tuple[int, ...]:
    """`x.shape` as a tuple of non-negative ints; ValueError/TypeError if it is not one."""
    shape = x.shape
    if type(shape) is tuple and all(type(d) is int and d >= 0 for d in shape):
        return shape  # fast path: NumPy arrays
    shape = tuple(operator.index(d) for d in shape)
    for d in shape:
        if d < 0:
            raise ValueError(f"negative dimension {d} in shape {shape}")
    return shape


def _itemsize(x: Any) -> int | None:
    size = getattr(x, "itemsize", None)
    if isinstance(size, int):
        return size
    try:
        return np.dtype(x.dtype).itemsize
    except Exception:
        return None


def c_contiguous(shape, strides) -> bool:
    """Whether `strides` (in elements) lay `shape` out C-contiguously; sizes of 1 ignore their
    stride and an empty tensor is contiguous."""
    if 0 in tuple(shape):
        return True
    expected = 1
    for d, s in zip(reversed(tuple(shape)), reversed(tuple(strides))):
        if d != 1 and s != expected:
            return False
        expected *= d
    return True


def is_contiguous(x: Any) -> bool:
    """Whether an array-like is C-contiguous: from a boolean `contiguous` attribute, NumPy
    `.flags`, an `is_contiguous()` method, or `.strides` (in bytes, NumPy-style, or in elements).
    Sizes of 1 ignore their stride; an empty tensor is contiguous. Without any of these, True."""
    attr = getattr(x, "contiguous", None)
    if isinstance(attr, (bool, np.bool_)):
        return bool(attr)
    flags = getattr(x, "flags", None)
    if flags is not None:
        try:
            return bool(flags["C_CONTIGUOUS"])
        except Exception:
            value = getattr(flags, "c_contiguous", None)
            if value is not None:
                return bool(value)
    method = getattr(x, "is_contiguous", None)
    if callable(method):
        return bool(method())
    strides = getattr(x, "strides", None)
    if strides is None:
        return True
    shape = shape_of(x)
    strides = tuple(int(s) for s in strides)
    if len(strides) != len(shape):
        return False
    if 0 in shape:
        return True
    units = [1]
    itemsize = _itemsize(x)
    if itemsize and itemsize != 1:
        units.append(itemsize)
    for unit in units:
        expected, ok = unit, True
        for d, s in zip(reversed(shape), reversed(strides)):
            if d != 1 and s != expected:
                ok = False
                break
            expected *= d
        if ok:
            return True
    return False


def infer_outputs(
    meta: Mapping,
    values: Mapping[str, Any],
    version: str | CannVersion,
    *,
    strict: bool = False,
    family: str | None = None,
) -> dict[str, tuple[tuple[int, ...], np.dtype]]:
    """Shape and dtype of every output tensor, from the rules that hold at `version` (on `family`,
    when given: rules limited to other families are left out).

    Shape: an output a `broadcast` rule names gets the broadcast shape of its inputs; one in a
    `same_shape` rule gets the shape of another member (inputs first, then outputs already
    inferred); the `grad` of a `per_channel` rule gets the weight's shape when the weight has one
    element, else `(C,)` with C = the input's dim 1 (1 for rank <= 1); a `broadcast_to` param or
    target gets the other's shape; otherwise the shape of the first input tensor.
    Dtype: an output a `promote` rule names gets the promoted dtype of its inputs; one in a
    `same_dtype` rule gets another member's dtype; otherwise the first input tensor's dtype (for a
    binding-tier op with `family`: where the output's dtype list there has it, else the first of it).

    `values` maps C names to array-likes (`.shape`, `.dtype`); inputs that are None, absent or
    not array-likes are left out. An output nothing can be derived for (no input present) is left out of the result.
    With `strict=False` (the default) inputs that do not broadcast or promote give a best guess
    (the first input's shape or dtype), so the validator, or the library, reports the error with
    its status; `strict=True` raises BroadcastError / PromotionError instead.
    """
    shapes: dict[str, tuple[int, ...]] = {}
    dtypes: dict[str, str] = {}
    for name in output_inputs(meta, version, family):
        value = values.get(name)
        if value is None:
            continue
        try:
            shape, dtype = shape_of(value), dtype_name(value)
        except Exception:
            if strict:
                raise TypeError(f"{name} is not a tensor: {type(value).__name__} has no valid .shape/.dtype") from None
            continue  # not a tensor: the validator reports it with its status
        shapes[name] = shape
        dtypes[name] = dtype

    result = {}
    for name, (shape, dtype) in infer_output_names(meta, shapes, dtypes, version, strict=strict, family=family).items():
        np_dtype = NUMPY_DTYPES.get(dtype)
        if np_dtype is None:
            try:
                np_dtype = np.dtype(dtype)
            except Exception:
                if strict:
                    raise PromotionError(f"{dtype!r} is not a NumPy dtype") from None
                continue
        result[name] = (shape, np_dtype)
    return result
