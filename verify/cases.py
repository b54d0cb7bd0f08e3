"""Concrete NumPy arguments for the generated tests, built from an op's META by the plan of each
case kind (`aclnngen.core.planning`, which lists the kinds, which apply, and their statuses).

`make_values(meta, case, dtype, version=...)` fills every input with deterministic data of the
planned shape and layout (a strided or offset view of a larger buffer whose gaps hold junk) and
every output with zeros of the inferred shape and dtype.
"""

from __future__ import annotations

from typing import Any, Mapping

import numpy as np

from aclnngen.core import planning
from aclnngen.core.dtypes import ALL_DTYPES
from aclnngen.core.meta import op_meta
from aclnngen.core.planning import BASE_SHAPE, SHAPE_CASES
from aclnngen.core.releases import CannVersion
from aclnngen.runtime.shapes import NUMPY_DTYPES, dtype_name_of, infer_outputs

__all__ = ["make_values", "OFFSET"]

OFFSET = 3  # elements before an "offset" view in its buffer
LIST_LENGTH = 2  # tensors in each tensor list (aclTensorList*) of a case


# --- values -------------------------------------------------------------------------------------


def _junk(dtype: np.dtype):
    """A value to fill the parts of a buffer a view does not cover (a binding that ignores strides
    or the offset reads it)."""
    if dtype.names:  # raw bytes of a dtype NumPy has no type for
        return np.full((), 0x5A, dtype=np.uint8).view(dtype)[()]
    if dtype.kind == "V" and dtype.itemsize == 1:  # ml_dtypes' narrow types: 1 is in every range
        return 1
    if dtype.kind == "b":
        return True
    if dtype.kind in "iu":
        return 77
    return 1000


def _data(rng: np.random.Generator, shape, dtype: np.dtype, weight: bool) -> np.ndarray:
    kind = dtype.kind
    if dtype.names:  # raw bytes of a dtype NumPy has no type for: any bit pattern
        return rng.integers(0, 256, size=shape, dtype=np.uint8).view(dtype)
    if kind == "b":
        return rng.random(shape) < 0.5
    if kind == "i":
        return rng.integers(-8, 9, size=shape).astype(dtype)
    if kind == "u":
        return rng.integers(0, 17, size=shape).astype(dtype)
    if weight:  # PReLU-like slopes: small and positive
        real = rng.uniform(0.05, 0.5, size=shape)
    else:
        real = rng.standard_normal(size=shape) * 2.0
    if kind == "c":
        return (real + 1j * rng.standard_normal(size=shape)).astype(dtype)
    return np.asarray(real, dtype=np.float64).astype(dtype)


def _contiguous(data: np.ndarray) -> np.ndarray:
    # np.ascontiguousarray would turn a 0-d array into a 1-d one
    return data if data.flags.c_contiguous else data.copy(order="C")


def _place(data: np.ndarray, layout: str, variant: int, fill) -> np.ndarray:
    """`data` in a fresh buffer laid out as `layout`; `fill` fills what the view does not cover."""
    if layout == "contiguous":
        return _contiguous(data)
    shape, dtype = data.shape, data.dtype
    if layout == "offset":
        flat = np.full(data.size + 2 * OFFSET, fill, dtype=dtype)
        view = flat[OFFSET : OFFSET + data.size].reshape(shape)
        view[...] = data
        return view
    # strided
    wide = [i for i, d in enumerate(shape) if d > 1]
    if not wide:
        return _contiguous(data)  # 0 or 1 element: every layout is contiguous
    if variant % 2 == 1 and len(wide) >= 2:
        buf = np.empty(shape[::-1], dtype=dtype)
        view = buf.transpose()
    else:
        axis = wide[-1]
        big = list(shape)
        big[axis] *= 2
        buf = np.full(big, fill, dtype=dtype)
        index = [slice(None)] * len(shape)
        index[axis] = slice(None, None, 2)
        view = buf[tuple(index)]
    view[...] = data
    return view


def make_values(
    meta: Mapping,
    case: str,
    dtype: Any,
    *,
    version: str | CannVersion,
    seed: int = 0,
    family: str | None = None,
    dtypes: Mapping[str, str] | None = None,
    own_dtypes: bool = False,
) -> dict[str, Any]:
    """Arguments of the op for one case kind (see the module docstring): NumPy arrays for every
    input and output (outputs zero-filled, of the shape and dtype `infer_outputs` gives, except an
    output the case deliberately gets wrong), and values for scalars and attributes. `dtype` is a
    NumPy dtype or name ("bfloat16" via ml_dtypes), every input's; with `own_dtypes`, each input
    takes it where its own dtype list has it, else a dtype of its list (`planning.OpAt.dtypes_for`,
    so a float-only gradient stays float beside an int8 input). `dtypes` (C name -> dtype name)
    sets the dtype of any input or output outright (a mixed combination). Deterministic for a
    given `seed`. With `family`, the case follows the rules and dtype lists of that family only."""
    op = planning.op_at(meta, version, family)
    if case not in SHAPE_CASES:
        raise ValueError(f"unknown case {case!r}; the case kinds are {', '.join(SHAPE_CASES)}")
    name = dtype_name_of(dtype)
    if name not in NUMPY_DTYPES:
        raise ValueError(f"dtype {name!r} is not one of {', '.join(ALL_DTYPES)}")
    plan = planning.case_plan(op, case, name)  # an output's wrong dtype differs from the one `name` gives
    if plan is None:
        raise ValueError(f"case {case!r} does not apply to {op_meta(meta).name} at CANN {op.version}")
    chosen = {**planning.mixed_case_dtypes(op, plan, name, own=own_dtypes), **(dtypes or {})}
    unknown = sorted(set(chosen.values()) - set(NUMPY_DTYPES))
    if unknown:
        raise ValueError(f"dtype {unknown[0]!r} is not one of {', '.join(ALL_DTYPES)}")
    rng = np.random.default_rng(seed)
    values: dict[str, Any] = {}
    variant = 0
    lists = {p.name for p in op_meta(meta).params if p.is_list}
    for tensor in op.inputs:
        dt = NUMPY_DTYPES[chosen[tensor]]
        arrays = []
        for _ in range(LIST_LENGTH if tensor in lists else 1):
            data = _data(rng, plan.shapes[tensor], dt, weight=tensor in op.weights)
            arrays.append(_place(data, plan.layout, variant, _junk(dt)))
            variant += 1
        values[tensor] = arrays if tensor in lists else arrays[0]
    inferred = infer_outputs(meta, values, op.version, family=op.family)
    planned = planning.case_shapes(meta, case, op.version, op.family)
    for tensor in op.outputs:
        # nothing to infer from (no input, or tensor lists only): the planner's shape (it reads a
        # list's too), and with `own_dtypes` a dtype of the output's list
        own = op.own_list(tensor) if own_dtypes else ()
        fallback = NUMPY_DTYPES[name if name in own or not own else own[0]]
        shape, dt = inferred.get(tensor, (planned.get(tensor, BASE_SHAPE), fallback))
        dt = NUMPY_DTYPES[chosen[tensor]] if tensor in chosen else dt
        dt = NUMPY_DTYPES[plan.output_dtypes[tensor]] if tensor in plan.output_dtypes else dt
        shape = plan.outputs.get(tensor, shape)
        # a list output is the caller's: as many arrays as a list input has (binding tier only)
        arrays = []
        for _ in range(LIST_LENGTH if tensor in lists else 1):
            arrays.append(_place(np.zeros(shape, dtype=dt), plan.layout, variant, 0))
            variant += 1
        values[tensor] = arrays if tensor in lists else arrays[0]
    values.update(planning.scalar_values(meta))
    return values
