"""An elementwise formula evaluated in cache-sized pieces, on every core.

NumPy evaluates `a * b + c` over whole arrays: every intermediate is a full-size temporary that
goes through main memory. Evaluated in pieces of CHUNK elements, the temporaries stay in the CPU's
cache, and the pieces run on a pool of threads (NumPy's ufuncs release the GIL). Each output
element is computed by the same operations on the same input elements as in one piece, so the
result is bit-for-bit the one whole-array evaluation gives (tested).

A formula is traced once per call into a program of ufunc steps (evaluate/fused.py: each piece
then costs its ufunc calls, into buffers its thread keeps, reading inputs of the compute dtype in
place); one the tracer refuses runs through numerics.evaluate piece by piece.

Threads: `ACLNNGEN_REFERENCE_THREADS` (default: every core; 1 evaluates the pieces in turn).
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Callable, Mapping

import numpy as np

from . import fused, numerics

if TYPE_CHECKING:
    from concurrent.futures import ThreadPoolExecutor

CHUNK = 1 << 15  # elements per piece: the buffers of a formula's steps, 128 KiB each, stay in L2
# elements per piece on several threads: each NumPy call hands the GIL over and takes it back, and
# two threads that do so for every step of a 32K piece wait on each other more than they compute
# (GeluBackward at 16M, 2 threads: 137 ms at 32K, 88 at 256K, 105 on one thread at 32K)
THREADED_CHUNK = 1 << 18
MIN_ELEMENTS = 1 << 20  # below this, one piece: the pieces' own cost would show

_POOL: ThreadPoolExecutor | None = None
_POOL_SIZE = 0


def threads() -> int:
    value = os.environ.get("ACLNNGEN_REFERENCE_THREADS", "")
    try:
        return max(1, int(value)) if value else (os.cpu_count() or 1)
    except ValueError:
        return os.cpu_count() or 1


def _chunk(threads: int) -> int:
    return CHUNK if threads <= 1 else THREADED_CHUNK


def worth_it(shape: tuple) -> bool:
    return int(np.prod(shape, dtype=np.int64)) >= MIN_ELEMENTS


def _pool(size: int) -> ThreadPoolExecutor:
    # imported with the first pool: a call served by the compiled kernels never needs one
    from concurrent.futures import ThreadPoolExecutor

    global _POOL, _POOL_SIZE
    if _POOL is None or _POOL_SIZE != size:
        if _POOL is not None:
            _POOL.shutdown(wait=False)
        _POOL, _POOL_SIZE = ThreadPoolExecutor(max_workers=size, thread_name_prefix="aclnngen-reference"), size
    return _POOL


def evaluate_in_chunks(
    body: Callable,
    inputs: Mapping[str, np.ndarray],
    scalars: Mapping,
    attributes: Mapping,
    output_dtypes: Mapping,
    mode: str,
    targets: list | None = None,
    arithmetic: numerics.Arithmetic = numerics.DEFAULT_ARITHMETIC,
) -> tuple[np.ndarray, ...]:
    """numerics.evaluate of an elementwise `body` on inputs of one shape, piece by piece (fused
    where it traces). `targets`
    (one per output): arrays of that shape to write into, used where C-contiguous and of the
    result's dtype (no full-size copy of the result); the others are allocated."""
    shape = next(iter(inputs.values())).shape
    flat = {name: np.ascontiguousarray(a).reshape(-1) for name, a in inputs.items()}
    size = int(np.prod(shape, dtype=np.int64))
    program = fused_plan(
        body, {n: a.dtype for n, a in flat.items()}, scalars, attributes, output_dtypes, mode, arithmetic
    )
    if program is not None:  # one pass over memory: the formula's steps on each piece, in buffers
        targets = targets or [None] * len(program.dtypes)
        # a target over an input's memory (an in-place op) is not written while steps still read it
        usable = [
            _usable(t, shape, dtype) and not any(np.may_share_memory(t, a) for a in flat.values())
            for t, dtype in zip(targets, program.dtypes)
        ]
        outputs = [
            t.reshape(-1) if ok else np.empty(size, dtype) for t, dtype, ok in zip(targets, program.dtypes, usable)
        ]
        count = threads()
        fused.run(program, flat, outputs, _chunk(count), count, _pool(count) if count > 1 else None)
        return tuple(t if ok else out.reshape(shape) for t, out, ok in zip(targets, outputs, usable))
    count = threads()
    chunk = _chunk(count)
    starts = range(0, size, chunk)
    outputs: list[np.ndarray] | None = None

    def piece(start: int) -> tuple[np.ndarray, ...]:
        part = {name: a[start : start + chunk] for name, a in flat.items()}
        return numerics.evaluate(
            body,
            inputs=part,
            scalars=scalars,
            attributes=attributes,
            output_dtypes=output_dtypes,
            mode=mode,
            arithmetic=arithmetic,
        )

    first = piece(0)  # its dtypes size the outputs
    targets = targets or [None] * len(first)
    usable = [_usable(t, shape, r.dtype) for t, r in zip(targets, first)]
    outputs = [t.reshape(-1) if ok else np.empty(size, dtype=r.dtype) for t, r, ok in zip(targets, first, usable)]
    for out, r in zip(outputs, first):
        out[: r.size] = r

    def fill(start: int) -> None:
        for out, r in zip(outputs, piece(start)):
            out[start : start + r.size] = r

    rest = list(starts)[1:]
    if count <= 1:
        for start in rest:
            fill(start)
    else:
        for future in [_pool(count).submit(fill, start) for start in rest]:
            future.result()
    return tuple(t if ok else out.reshape(shape) for t, out, ok in zip(targets, outputs, usable))


def _usable(target, shape: tuple, dtype: np.dtype) -> bool:
    """A given output array the pieces can write into directly."""
    return (
        target is not None
        and target.shape == shape
        and target.dtype == dtype
        and target.flags.c_contiguous
        and target.flags.writeable
    )


class _Tracing(numerics.Numerics):
    """The formula language over traced values (evaluate/fused.py): what is not elementwise, or
    branches on a tensor's values, says so and the formula is evaluated piece by piece instead."""

    def _num(self, x):
        if isinstance(x, fused.Node):
            return x.astype(self.dtype) if x.dtype.kind in "biu" else x
        return super()._num(x)

    def truth(self, condition) -> bool:
        if isinstance(condition, fused.Node):
            raise fused.NotFusable("a condition on tensor values decides a branch")
        return super().truth(condition)

    def round_to(self, x, tensor: str):
        if not isinstance(x, fused.Node):
            return super().round_to(x, tensor)
        super().round_to(self.dtype.type(0), tensor)  # the same check of the tensor's name
        return self._num(x).astype(self.storage[tensor]).astype(self.dtype)

    def _not_elementwise(self, *args, **kwargs):
        raise fused.NotFusable("a function that is not elementwise")

    per_channel = sum_per_channel = sum = sum_keepdim = softmax = extern = _not_elementwise


def fused_plan(
    body: Callable,
    input_dtypes: Mapping[str, np.dtype],
    scalars: Mapping,
    attributes: Mapping,
    output_dtypes: Mapping,
    mode: str,
    arithmetic: numerics.Arithmetic = numerics.DEFAULT_ARITHMETIC,
) -> fused.Plan | None:
    """The formula `body` traced as numerics.evaluate would run it on whole arrays (inputs cast to
    the compute dtype, outputs stored once), laid out to run in pieces; None when it cannot be."""
    numerics.check_names(input_dtypes, scalars, attributes)
    outputs = {name: numerics.storage_dtype(dt, name) for name, dt in output_dtypes.items()}
    m = _Tracing(mode, {**input_dtypes, **outputs}, compute=arithmetic.compute)
    final = [numerics.golden_dtype(m.dtype) if mode == "golden" else dt for dt in outputs.values()]

    def formula(**nodes):
        values: dict = {name: node.astype(m.dtype) for name, node in nodes.items()}  # Numerics.tensor's cast
        values.update({name: m.scalar(v, name) for name, v in scalars.items()})
        values.update(attributes)
        results = body(m, **values)
        if not isinstance(results, tuple) or len(results) != len(outputs):
            raise fused.NotFusable("a result count numerics.evaluate reports")
        return tuple(
            numerics.stored(r, dt, arithmetic.to_integer)
            if isinstance(r, fused.Node)
            else numerics._as_output(r, dt, arithmetic.to_integer)
            for r, dt in zip(results, final)
        )

    with np.errstate(all="ignore"):
        try:
            return fused.plan(fused.trace(formula, input_dtypes), final)
        except fused.NotFusable:
            return None
