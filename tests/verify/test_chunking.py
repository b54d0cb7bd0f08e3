"""An elementwise reference evaluated in pieces, on threads, into given arrays gives the same bits
as one whole-array evaluation (evaluate/chunking.py); so does a binding whose simulated kernel
writes the pieces straight into device memory."""

from __future__ import annotations

import importlib

import numpy as np
import pytest

from aclnngen.evaluate import chunking
from aclnngen.verify import cases
from aclnngen.verify.opcheck import OpUnderTest
import catalog
from catalog import PLAIN

# the call path checked bit for bit: the simulator computes with the reference (conftest.py)
pytestmark = pytest.mark.usefixtures("reference_kernels")


def _op(snake):
    meta = importlib.import_module(f"aclnngen.generated.meta.{snake}").META
    return OpUnderTest(
        meta,
        reference=importlib.import_module(f"aclnngen.generated.reference.{snake}"),
        binding=getattr(importlib.import_module(f"aclnngen.generated.ops.{snake}"), snake),
        version=meta["cann_version"],
    )


def _as_tuple(r):
    return r if isinstance(r, tuple) else (r,)


@pytest.mark.parametrize("snake", catalog.representatives())
@pytest.mark.parametrize("threads", ["1", "2"])
def test_pieces_give_the_bits_of_one_piece(snake, threads, monkeypatch):
    op = _op(snake)
    values = cases.make_values(op.meta, "contiguous", "float32", version=op.version)
    monkeypatch.setattr(chunking, "MIN_ELEMENTS", 1 << 62)
    whole = op.run_reference(values)
    monkeypatch.setattr(chunking, "MIN_ELEMENTS", 1)
    monkeypatch.setattr(chunking, "CHUNK", 5)  # pieces of 5 over (2, 3, 4): uneven, several per thread
    monkeypatch.setattr(chunking, "THREADED_CHUNK", 5)
    monkeypatch.setenv("ACLNNGEN_REFERENCE_THREADS", threads)
    pieces = op.run_reference(values)
    assert len(whole) == len(pieces)
    for a, b in zip(whole, pieces):
        assert a.dtype == b.dtype and a.shape == b.shape and np.array_equal(a, b, equal_nan=True)


def test_results_go_into_the_given_arrays(monkeypatch):
    op = _op(PLAIN)
    values = cases.make_values(op.meta, "contiguous", "float32", version=op.version)
    monkeypatch.setattr(chunking, "MIN_ELEMENTS", 1)
    monkeypatch.setattr(chunking, "CHUNK", 7)
    monkeypatch.setattr(chunking, "THREADED_CHUNK", 7)
    target = np.full(values["self"].shape, -1.0, dtype=np.float32)
    (result,) = _as_tuple(op.reference._REFERENCE(values, out={"gradInput": target}))
    assert result is target and not np.any(target == -1.0)
    strided = np.zeros(values["self"].shape + (2,), np.float32)[..., 0]  # not contiguous: not written
    (other,) = _as_tuple(op.reference._REFERENCE(values, out={"gradInput": strided}))
    assert other is not strided and np.array_equal(other, target) and not strided.any()


def _elementwise(snake) -> bool:
    return "reduction" not in _op(snake).meta["formula"]["outputs"].values()


@pytest.mark.parametrize("snake", [s for s in catalog.representatives() if _elementwise(s)])
def test_a_simulated_kernel_writing_pieces_into_device_memory_matches_the_reference(snake, monkeypatch):
    op = _op(snake)
    values = cases.make_values(op.meta, "contiguous", "float32", version=op.version)
    monkeypatch.setattr(chunking, "MIN_ELEMENTS", 1)
    monkeypatch.setattr(chunking, "CHUNK", 5)
    monkeypatch.setattr(chunking, "THREADED_CHUNK", 5)
    positional, keywords, _ = op.split(values)
    got = _as_tuple(op.binding(*positional, **keywords))
    monkeypatch.setattr(chunking, "MIN_ELEMENTS", 1 << 62)
    want = op.run_reference(values)
    for a, b in zip(got, want):
        assert np.array_equal(np.asarray(a), b, equal_nan=True)


@pytest.mark.parametrize("threads, which", [("1", "CHUNK"), ("2", "THREADED_CHUNK")])
def test_threads_take_larger_pieces_than_one_thread(threads, which, monkeypatch):
    """Every NumPy call of a piece hands the GIL over and back: threads that did so for every step
    of a small piece waited on each other more than they computed (evaluate/chunking.py)."""
    op = _op(PLAIN)
    values = cases.make_values(op.meta, "contiguous", "float32", version=op.version)
    monkeypatch.setattr(chunking, "MIN_ELEMENTS", 1)
    monkeypatch.setattr(chunking, "CHUNK", 5)
    monkeypatch.setattr(chunking, "THREADED_CHUNK", 7)
    monkeypatch.setenv("ACLNNGEN_REFERENCE_THREADS", threads)
    seen, real = [], chunking.fused.run

    def spy(program, inputs, outputs, chunk, *rest):
        seen.append(chunk)
        return real(program, inputs, outputs, chunk, *rest)

    monkeypatch.setattr(chunking.fused, "run", spy)
    op.run_reference(values)
    assert seen == [getattr(chunking, which)]
