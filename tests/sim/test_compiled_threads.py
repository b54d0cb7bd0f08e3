"""Compiled launches on threads (runtime/sim/compiled.py): the simulator's C core remembers a
signature's launch and runs it itself, in one piece on the calling thread, so it is handed only
launches that are one piece on any number of threads; a large call stays on every core even after
a call of its signature on one thread."""

from __future__ import annotations

import catalog
import numpy as np
import pytest

from aclnngen.runtime import session
from aclnngen.runtime.sim import compiled

THREADS_ENV = "ACLNNGEN_REFERENCE_THREADS"


@pytest.fixture
def launches(monkeypatch):
    """The pieces of every launch Python makes (a launch the core runs from memory makes none),
    with compiled kernels forced, pieces from 256 elements and the core's memory empty."""
    monkeypatch.setenv(compiled.MODE_ENV, "compiled")
    monkeypatch.setattr(compiled, "MIN_PARALLEL", 256)
    made: list[int] = []
    launch = compiled._Plan.launch

    def counted(plan, args):
        made.append(len(compiled._pieces(plan.n)))
        return launch(plan, args)

    monkeypatch.setattr(compiled._Plan, "launch", counted)
    with session.simulated(profile="spec") as sim:
        sim.controls.aclsim_memo_clear()
        yield made


def _calls(monkeypatch, elements: int, threads: list[str]) -> None:
    binding = catalog.binding(catalog.PLAIN)
    x = np.linspace(-3.0, 3.0, elements, dtype=np.float32)
    for count in threads:
        monkeypatch.setenv(THREADS_ENV, count)
        binding(np.ones_like(x), x)


def test_a_large_call_made_on_one_thread_first_still_splits_on_two(launches, monkeypatch):
    _calls(monkeypatch, 3000, ["1", "1", "2", "2"])
    assert launches == [1, 1, 2, 2], "every launch of a large signature runs in Python, split by the setting"


def test_a_small_call_is_remembered_by_the_core(launches, monkeypatch):
    """(The control: the core does remember this signature's launch when it is small.)"""
    _calls(monkeypatch, 200, ["1", "2", "2"])
    assert launches == [1], "the core ran the later launches"
