"""Evaluate a generated reference: map an op's arguments onto its rendered formula and run it.

Generated reference modules hold only the formula bodies; this is the one place that fills NULL
optional scalars with their documented defaults, decides the output shapes and dtypes from the
op's rules, and hands everything to `numerics.evaluate` in the requested precision mode.
"""

from __future__ import annotations

from typing import Callable, Mapping

import numpy as np

from . import chunking, numerics
from aclnngen.core import arithmetic as arithmetic_facts
from aclnngen.core.dtypes import PromotionError
from aclnngen.core.meta import op_meta
from aclnngen.runtime.shapes import NUMPY_DTYPES, dtype_name_of, infer_outputs, promote_dtypes


def _promote_non_float(arrays: dict) -> dict:
    """Integer or bool inputs that promote with float ones (an op with a promote rule accepts
    int32 beside float32) are computed as the promoted float dtype, as the library does."""
    odd = [name for name, a in arrays.items() if a.dtype.kind in "biu"]
    if not odd or len(odd) == len(arrays):
        return arrays
    try:
        target = promote_dtypes(*(a.dtype for a in arrays.values()))
    except PromotionError:
        return arrays
    return {name: a.astype(target) if name in odd else a for name, a in arrays.items()}


class Reference:
    writes_out = True  # takes `out=` (the simulator's kernels pass device memory)

    def __init__(self, meta: dict, formulas: Mapping[str, Callable], forwards: Mapping[str, Callable] = {}):
        self.meta = meta
        self.op = op = op_meta(meta)
        self.formulas = dict(formulas)
        self.forwards = dict(forwards)
        # a formula reads no tensor or scalar list (codegen/consistency.py): they are left out
        self._inputs = [(p.name, p.py) for p in op.by_role("input") if not p.is_list]
        self._scalars = [(p.name, p.py, p.default) for p in op.by_role("scalar", "optional_scalar") if not p.is_list]
        # opmath sees a scalar as the aclScalar the binding creates holds it: in its scalar_dtype
        self._scalar_dtypes = {
            p.name: NUMPY_DTYPES[p.scalar_dtype]
            for p in op.by_role("scalar", "optional_scalar")
            if p.scalar_dtype in NUMPY_DTYPES
        }
        self._attributes = [(p.name, p.py, p.default) for p in op.by_role("attribute")]
        # every tensor the op writes, as the formula returns them: outputs, then in-place inputs
        self._outputs = [(name, op.param(name).py) for name in op.written]
        # each output element depends on the same element of each input only: evaluable in pieces
        kinds = op.formula.outputs.values()
        self._elementwise = bool(kinds) and "reduction" not in kinds

    def __call__(
        self,
        values: Mapping[str, object],
        *,
        out_dtypes: Mapping[str, object] | None = None,
        mode: str = "opmath",
        formula: str = "spec",
        version: str | None = None,
        out: Mapping[str, np.ndarray] | None = None,
        family: str | None = None,
    ):
        """`values` maps C parameter names to arrays, scalars and attributes (outputs not needed).
        `family`: the product family whose arithmetic (the spec's `arithmetic` rows) applies.
        `out`: C-contiguous arrays (by output C name) an elementwise formula on many elements may
        write its results into directly (as a kernel writes device memory); the results are those
        arrays then. Where it cannot, the results are new arrays as without `out`."""
        try:
            body = self.formulas[formula]
        except KeyError:
            raise ValueError(f"{self.op.name} has no formula {formula!r}; known: {', '.join(self.formulas)}") from None
        arrays = {name: np.asarray(values[name]) for name, _ in self._inputs if values.get(name) is not None}
        missing = [name for name, _ in self._inputs if name not in arrays]
        if missing:
            raise ValueError(f"{self.op.name} reference needs the input tensors {missing}")
        arrays = _promote_non_float(arrays)
        arithmetic, scalar_to = self._arithmetic(arrays, family)
        scalars = self._scalar_values(values, mode, scalar_to)
        attributes = {py: values.get(name, default) for name, py, default in self._attributes}
        # the output dtypes by the rules of the family the call runs on (they may differ per family)
        inferred = infer_outputs(self.meta, {**values, **arrays}, version or self.op.cann_version, family=family)
        # an in-place input keeps its own shape and dtype
        inferred.update({name: (np.shape(values[name]), np.asarray(values[name]).dtype) for name in self.op.inplace})
        dtypes = {py: (out_dtypes or {}).get(name, inferred[name][1]) for name, py in self._outputs}
        inputs = {py: arrays[name] for name, py in self._inputs}
        shapes = {tuple(inferred[name][0]) for name, _ in self._outputs} | {a.shape for a in inputs.values()}
        if self._elementwise and len(shapes) == 1 and chunking.worth_it(next(iter(shapes))):
            targets = [(out or {}).get(name) for name, _ in self._outputs]
            results = chunking.evaluate_in_chunks(
                body,
                inputs,
                scalars,
                attributes,
                dtypes,
                mode,
                targets=targets if all(t is not None for t in targets) else None,
                arithmetic=arithmetic,
            )
        else:
            results = numerics.evaluate(
                body,
                inputs=inputs,
                scalars=scalars,
                attributes=attributes,
                output_dtypes=dtypes,
                mode=mode,
                arithmetic=arithmetic,
            )
        # A formula may produce a smaller (broadcastable) result, e.g. a constant; outputs have the
        # shape the rules give them.
        shaped = tuple(_to_shape(r, tuple(inferred[name][0])) for r, (name, _) in zip(results, self._outputs))
        return shaped[0] if len(shaped) == 1 else shaped

    def _scalar_values(self, values: Mapping[str, object], mode: str, scalar_to) -> dict:
        """Each scalar by Python name: the value given (a NULL optional one: its default), held in
        opmath as its aclScalar holds it (or as the spec's arithmetic rounds scalars)."""
        scalars = {}
        for name, py, default in self._scalars:
            value = values.get(name)
            if value is None:
                if default is None:
                    raise ValueError(f"{self.op.name} reference needs the scalar {name!r}")
                value = default
            if (
                mode == "opmath"
                and isinstance(value, (bool, int, float))
                and (scalar_to or name in self._scalar_dtypes)
            ):
                value = _as_scalar_dtype(value, scalar_to or self._scalar_dtypes[name])
            scalars[py] = value
        return scalars

    def kernel_inputs(self, values: Mapping[str, object], storage: np.dtype, family: str | None):
        """What a compiled kernel (runtime/sim/compiled.py) computes with, for tensors all stored as
        `storage`: (the opmath compute dtype, each scalar by Python name as this reference holds
        it in that compute dtype)."""
        probe = {name: np.empty(0, storage) for name, _ in self._inputs}
        arithmetic, scalar_to = self._arithmetic(probe, family)
        compute = arithmetic.compute or numerics.compute_dtype("opmath", [storage])
        m = numerics.Numerics("opmath", compute=compute)
        with np.errstate(all="ignore"):
            scalars = {py: m.scalar(v, py) for py, v in self._scalar_values(values, "opmath", scalar_to).items()}
        return np.dtype(compute), scalars

    def _arithmetic(self, arrays: Mapping[str, np.ndarray], family: str | None):
        """The spec's arithmetic for inputs `arrays` on `family`: the evaluation's compute dtype and
        integer rounding, and the dtype scalars are rounded to (None: their aclScalar's dtype)."""
        facts = self.op.arithmetic
        if not facts or not arrays:
            return numerics.DEFAULT_ARITHMETIC, None
        try:
            storage = dtype_name_of(promote_dtypes(*(a.dtype for a in arrays.values())))
        except PromotionError:
            return numerics.DEFAULT_ARITHMETIC, None
        compute = arithmetic_facts.compute_dtype(facts, storage, family)
        scalar_to = arithmetic_facts.scalar_precision(facts, storage, family)
        return (
            numerics.Arithmetic(
                compute=NUMPY_DTYPES[compute] if compute else None, to_integer=arithmetic_facts.to_integer(facts)
            ),
            NUMPY_DTYPES[scalar_to] if scalar_to else None,
        )

    def oracle_argument(self, body: Callable, values: Mapping[str, object]):
        """An oracle argument `{expr: ...}` (its rendered `body`) for the scalar and attribute
        `values` (Python names; a missing or None optional scalar takes its default), computed in
        float64: a Python number, or the attribute's own value where the expression is one."""
        scalars = {}
        for _, py, default in self._scalars:
            value = values.get(py)
            scalars[py] = default if value is None else value
        attributes = {py: values.get(py, default) for _, py, default in self._attributes}
        m = numerics.Numerics("golden")
        with np.errstate(all="ignore"):
            (result,) = body(m, **{py: m.scalar(v, py) for py, v in scalars.items() if v is not None}, **attributes)
        return result.item() if isinstance(result, (np.ndarray, np.generic)) else result

    def forward(self, name: str, x, values: Mapping[str, object], *, mode: str = "opmath") -> np.ndarray:
        """The forward function of input `name` (a py name) at `x`: a value that input can hold.
        `values` maps C names to scalars and attributes (missing ones take their defaults)."""
        try:
            body = self.forwards[name]
        except KeyError:
            raise ValueError(
                f"{self.op.name}: {name!r} has no forward function; known: {', '.join(self.forwards) or 'none'}"
            ) from None
        x = np.asarray(x)
        scalars = {py: values.get(c, default) for c, py, default in self._scalars}
        attributes = {py: values.get(c, default) for c, py, default in self._attributes}
        (result,) = numerics.evaluate(
            lambda m, **kw: body(m, **kw),
            inputs={"x": x},
            scalars=scalars,
            attributes=attributes,
            output_dtypes={name: x.dtype},
            mode=mode,
            arithmetic=self._arithmetic({"x": x}, None)[0],  # integer data computes as the op's would
        )
        return result


def _as_scalar_dtype(value, dtype: np.dtype):
    """`value` stored in `dtype` (an integer scalar of a value outside its range stays as given:
    the binding refuses it before any kernel sees it)."""
    if dtype.kind in "iub" and isinstance(value, float) and not float(value).is_integer():
        return value
    with np.errstate(all="ignore"):
        try:
            return dtype.type(value)
        except (OverflowError, ValueError):
            return value


def _to_shape(result: np.ndarray, shape: tuple) -> np.ndarray:
    if result.shape == shape:
        return result
    if result.size == int(np.prod(shape)) and result.ndim != len(shape):
        return result.reshape(shape)  # the same elements on other axes (a (C,) gradient of a (1, C) weight)
    return np.ascontiguousarray(np.broadcast_to(result, shape))
