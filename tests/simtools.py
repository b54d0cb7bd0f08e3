"""Helpers the runtime tests share: the simulator backend, its live-object counters, and exact
comparison of results."""

from __future__ import annotations

import contextlib
import gc

from aclnngen.runtime import session
from aclnngen.verify.opcheck import same_bits

__all__ = ["LEAK_FIELDS", "sim_backend", "leak_counters", "no_leaks_around", "same_bits"]

# Counters that must come back to their start value after any call (streams and contexts may be
# created lazily per thread and live on).
LEAK_FIELDS = (
    "tensors",
    "scalars",
    "int_arrays",
    "float_arrays",
    "bool_arrays",
    "tensor_lists",
    "scalar_lists",
    "executors",
    "allocations",
    "allocated_bytes",
    "queued_launches",
)


def sim_backend():
    b = session.backend()
    assert b.kind == "sim", "these tests run on the simulator (no CANN here)"
    return b


def leak_counters() -> dict:
    c = sim_backend().counters()
    return {k: c[k] for k in LEAK_FIELDS}


@contextlib.contextmanager
def no_leaks_around():
    """Asserts that the block leaves the simulator's live objects where it found them."""
    session.synchronize()
    before = leak_counters()
    yield
    session.synchronize()
    gc.collect()
    assert leak_counters() == before


def reference_args(meta, values) -> tuple[list, dict]:
    """(inputs, keywords) for a generated reference: every input by position, every scalar and
    attribute by its Python name."""
    inputs = [values.get(p["name"]) for p in meta["params"] if p["role"] == "input"]
    keywords = {p["py"]: values.get(p["name"]) for p in meta["params"] if p["role"] not in ("input", "output")}
    return inputs, keywords
