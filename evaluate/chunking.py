"""An elementwise formula evaluated in cache-sized pieces, on every core.

NumPy evaluates `a * b + c` over whole arrays: every intermediate is a full-size temporary that
goes through main memory. Evaluated in pieces of CHUNK elements, the temporaries stay in the CPU's
cache, and the pieces run on a pool of threads (NumPy's ufuncs release the GIL). Each output
element is computed by the same operations on the same input elements as in one piece, so the
result is bit-for-bit the one whole-array evaluation gives (tested).

Threads: `ACLNNGEN_REFERENCE_THREADS` (default: every core; 1 evaluates the pieces in turn).
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Callable, Mapping

import numpy as np

from . import numerics

if TYPE_CHECKING:
    from concurrent.futures import ThreadPoolExecutor

CHUNK = 1 << 16  # elements per piece: a dozen float32 temporaries of 256 KiB fit in L2
MIN_ELEMENTS = 1 << 20  # below this, one piece: the pieces' own cost would show

_POOL: ThreadPoolExecutor | None = None
_POOL_SIZE = 0


def threads() -> int:
    value = os.environ.get("ACLNNGEN_REFERENCE_THREADS", "")
    try:
        return max(1, int(value)) if value else (os.cpu_count() or 1)
    except ValueError:
        return os.cpu_count() or 1


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
    """numerics.evaluate of an elementwise `body` on inputs of one shape, piece by piece. `targets`
    (one per output): arrays of that shape to write into, used where C-contiguous and of the
    result's dtype (no full-size copy of the result); the others are allocated."""
    shape = next(iter(inputs.values())).shape
    flat = {name: np.ascontiguousarray(a).reshape(-1) for name, a in inputs.items()}
    size = int(np.prod(shape, dtype=np.int64))
    starts = range(0, size, CHUNK)
    outputs: list[np.ndarray] | None = None

    def piece(start: int) -> tuple[np.ndarray, ...]:
        part = {name: a[start : start + CHUNK] for name, a in flat.items()}
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
    usable = [
        t is not None and t.shape == shape and t.dtype == r.dtype and t.flags.c_contiguous and t.flags.writeable
        for t, r in zip(targets, first)
    ]
    outputs = [t.reshape(-1) if ok else np.empty(size, dtype=r.dtype) for t, r, ok in zip(targets, first, usable)]
    for out, r in zip(outputs, first):
        out[: r.size] = r

    def fill(start: int) -> None:
        for out, r in zip(outputs, piece(start)):
            out[start : start + r.size] = r

    count = threads()
    rest = list(starts)[1:]
    if count <= 1:
        for start in rest:
            fill(start)
    else:
        for future in [_pool(count).submit(fill, start) for start in rest]:
            future.result()
    return tuple(t if ok else out.reshape(shape) for t, out, ok in zip(targets, outputs, usable))
