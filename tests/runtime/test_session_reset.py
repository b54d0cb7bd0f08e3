"""`session.reset()` rebuilds the simulator even when only `session.simulated()` used it (no backend
active between calls), so a package imported since gets its entry points built in."""

from __future__ import annotations

from aclnngen.runtime import session


def test_reset_drops_a_simulator_left_cached_by_simulated():
    session.reset()  # no backend active from an earlier test of this worker
    with session.simulated(family="a2") as sim:
        pass
    assert session._active is None  # simulated() restored "none active" and kept `sim` cached
    session.reset()
    assert session._sim_backend() is not sim  # built afresh on next use
