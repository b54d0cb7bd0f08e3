"""A quiet, truthful main job: the simulator reports the newest CANN release the specs describe
unless $ACLNNGEN_SIM_CANN (either spelling) says otherwise, and `aclnngen run` and a plain binding
call on the default simulator print no warning."""

from __future__ import annotations

import os
import subprocess
import sys

import catalog
import numpy as np
import pytest
from catalog import loaded_specs

from aclnngen.codegen.commands.run import _max_diff
from aclnngen.codegen.generate import render_sim_ops

from aclnngen.codegen.releases import described
from aclnngen.core.releases import CannVersion, simulator_spelling

SPECS = [ls.spec for ls in loaded_specs()]
NEWEST = max(set().union(*(described(s) for s in SPECS)), key=CannVersion)
ENV = "ACLNNGEN_SIM_CANN"
ASK = "from aclnngen.runtime import session; session.init('sim'); print(session.version()); print(session.describe())"


def _python(code: str, *flags: str, **env: str) -> subprocess.CompletedProcess:
    environ = {k: v for k, v in os.environ.items() if k != ENV}
    environ.update(ACLNNGEN_BACKEND="sim", **env)
    return subprocess.run(
        [sys.executable, *flags, "-c", code], capture_output=True, text=True, timeout=300, env=environ
    )


def test_the_simulator_reports_the_newest_release_the_specs_describe():
    result = _python(ASK)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[0] == NEWEST and "newest release the ops' specs describe" in result.stdout


@pytest.mark.parametrize("setting", ["v9.0.0-beta.1", "9.0.RC1.alpha001", "v8.5.0"])
def test_the_simulated_release_is_settable_in_either_spelling(setting):
    from aclnngen.core.releases import release_of

    result = _python(
        ASK + "\nwith session.simulated(version='7.0.0'): print(session.version())\nprint(session.version())",
        **{ENV: setting},
    )
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == release_of(setting) and f"${ENV}" in lines[1]
    assert lines[2] == "7.0.0" and lines[3] == release_of(setting)  # the setting is the default restored


def test_a_bad_setting_is_a_clear_error():
    result = _python(ASK, **{ENV: "nine"})
    assert result.returncode != 0 and f"${ENV} 'nine' is not a CANN release" in result.stderr
    assert "v9.2.0-beta.1" in result.stderr


def test_the_generated_simulator_states_the_newest_release_of_its_own_ops():
    oldest_op = min(SPECS, key=lambda s: max(CannVersion(v) for v in described(s)))
    own = max(described(oldest_op), key=CannVersion)
    assert f'return "{simulator_spelling(own)}";' in render_sim_ops(ops=[oldest_op.snake_name])
    assert f'return "{simulator_spelling(NEWEST)}";' in render_sim_ops()


# The runs below take one op of each structure (catalog.representatives): whether a call warns
# depends on what an op is (its releases, dtypes, formula), not on what it is called.


def test_aclnngen_run_on_the_default_simulator_prints_no_warning():
    ops = ("--ops", *catalog.representatives())
    result = subprocess.run(
        [sys.executable, "-W", "always", "-m", "aclnngen.codegen.cli", "run", "--backend", "sim", *ops],
        capture_output=True,
        text=True,
        timeout=600,
        env={k: v for k, v in os.environ.items() if k != ENV},
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Warning" not in result.stderr and result.stderr.strip() == "", result.stderr
    assert f"CANN {NEWEST}" in result.stdout.splitlines()[0]


def test_a_plain_binding_call_on_the_default_simulator_warns_nothing():
    code = (
        "import importlib\n"
        f"OPS = {catalog.representatives()!r}\n"
        "from aclnngen.runtime import session\n"
        "from aclnngen.verify import cases\n"
        "from aclnngen.core.rules import supported_dtypes\n"
        "family, version = session.family(), session.version()\n"
        "called = 0\n"
        "for snake in OPS:\n"
        "    meta = importlib.import_module(f'aclnngen.generated.meta.{snake}').META\n"
        "    fn = getattr(importlib.import_module(f'aclnngen.generated.ops.{snake}'), snake)\n"
        "    first = next(p['name'] for p in meta['params'] if p['role'] == 'input')\n"
        "    dtypes = supported_dtypes(meta, first, family, version)\n"
        "    if not dtypes: continue\n"
        "    values = dict(cases.make_values(meta, 'contiguous', dtypes[0], version=version))\n"
        "    fn(*[values[p['name']] for p in meta['params'] if p['role'] != 'output' and p['name'] in values])\n"
        "    called += 1\n"
        "assert called\n"
        "print('called')\n"
    )
    result = _python(code, "-W", "error")
    assert result.returncode == 0 and "called" in result.stdout, result.stderr[-3000:]


def test_the_max_diff_of_complex_results_counts_the_imaginary_part():
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert _max_diff(np.array([1 + 2j, 3j]), np.array([1 + 0j, 3j])) == 2.0
        assert _max_diff(np.array([np.nan + 0j]), np.array([np.nan + 0j])) == 0.0
        assert _max_diff(np.array([1.0, 2.0], np.float32), np.array([1.0, 2.5])) == 0.5
