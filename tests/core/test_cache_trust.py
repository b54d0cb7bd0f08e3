"""The cache is data, never code, unless it is the user's own (docs/security.md, issue 21):

- a cache folder owned by another user or writable by others is ignored with one warning, and
  nothing planted in it runs: not a pickle, not jinja2 bytecode, not a simulator library;
- records are JSON: a pickle named like a record of the earlier format is never unpickled;
- no link in the cache is followed;
- the simulator library is keyed by exactly the bytes compiled (a source rewritten between
  hashing and compiling does not land under the old key), and a killed build leaves neither its
  compiler running nor a temporary behind.

The tests run as root (as CI does): "another user" is made with os.chown to uid 1234.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import pickle
import shutil
import signal
import subprocess
import sys
import textwrap
import time
import warnings
from pathlib import Path

import pytest

from aclnngen import cachedir
from aclnngen.codegen import gencache, generate  # noqa: F401  (generate registers the classes records hold)
from aclnngen.codegen.loader import DEFAULT_SPECS_DIR
from aclnngen.runtime.sim import build as simbuild
from aclnngen.runtime.sim.build import DIGEST_NAME, REAL_NAME, SimulatorBuildError, build_simulator
from simcache import seeded_cache, tiny_core

CLI = [sys.executable, "-m", "aclnngen.codegen.cli"]
OTHER_UID = 1234

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="planting a cache of another user needs root (os.chown)")


class _Payload:
    """Unpickling it creates the marker file: proof that a planted pickle ran."""

    def __init__(self, marker: Path):
        self.marker = str(marker)

    def __reduce__(self):
        return (open, (self.marker, "w"))


def _untrust(folder: Path, how: str) -> str:
    """Make `folder` not the user's own; the reason the warning must give."""
    if how == "other owner":
        os.chown(folder, OTHER_UID, -1)
        return f"owned by uid {OTHER_UID}"
    os.chmod(folder, 0o777)
    return "writable by others"


UNTRUSTED = ["other owner", "world-writable"]


# --- the trust check ----------------------------------------------------------------------------


def test_the_users_own_folder_is_trusted_and_each_other_one_is_named(tmp_path):
    own = tmp_path / "own"
    own.mkdir(mode=0o700)
    assert cachedir.distrust(own) is None
    assert cachedir.distrust(own / "not" / "made" / "yet") is None  # judged by its parents
    other = tmp_path / "other"
    other.mkdir(mode=0o755)
    os.chown(other, OTHER_UID, -1)
    assert cachedir.distrust(other) == f"owned by uid {OTHER_UID}, not 0"
    wide = tmp_path / "wide"
    wide.mkdir()
    os.chmod(wide, 0o777)
    assert cachedir.distrust(wide) == "writable by others"
    assert "writable by others (its parent" in cachedir.distrust(wide / "cache")
    os.chmod(wide, 0o1777)  # sticky, as /tmp: nobody else can replace what the user made in it
    assert cachedir.distrust(wide / "cache") is None
    os.chown(tmp_path / "own", OTHER_UID, -1)
    assert f"owned by uid {OTHER_UID}, neither 0 nor root (its parent" in cachedir.distrust(own / "sub")
    (tmp_path / "file").write_text("x")
    assert cachedir.distrust(tmp_path / "file") == "not a folder"
    link = tmp_path / "link"
    link.symlink_to(other)  # a link is judged by what it leads to
    assert cachedir.distrust(link) == f"owned by uid {OTHER_UID}, not 0"


def test_an_untrusted_folder_gives_one_warning_naming_it_and_why(tmp_path):
    folder = tmp_path / "cache"
    folder.mkdir()
    os.chmod(folder, 0o777)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        assert not cachedir.trusted(folder)
        assert not cachedir.trusted(folder)
    assert len(seen) == 1 and issubclass(seen[0].category, cachedir.UntrustedCacheWarning)
    assert str(folder) in str(seen[0].message) and "writable by others" in str(seen[0].message)


def test_made_folders_are_private(tmp_path):
    made = cachedir.make_private(tmp_path / "a" / "b")
    assert (made.stat().st_mode & 0o777) == 0o700 and ((tmp_path / "a").stat().st_mode & 0o777) == 0o700
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "elsewhere")
    with pytest.raises(NotADirectoryError):
        cachedir.make_private(tmp_path / "link")
    private = cachedir.private_temporary()
    assert (private.stat().st_mode & 0o777) == 0o700 and private.stat().st_uid == os.geteuid()


# --- the generator's records ----------------------------------------------------------------------


GENERATED_OPS = 2  # each leaves two records (its render and its index)


def _generate(
    tmp_path, cache: Path, *extra, out: Path | None = None, command: str = "generate"
) -> subprocess.CompletedProcess:
    specs = tmp_path / "specs"
    if not specs.exists():  # a fixed number of ops however many the repository has
        (specs / "ops").mkdir(parents=True)
        for path in sorted((DEFAULT_SPECS_DIR / "ops").glob("*.yaml"))[:GENERATED_OPS]:
            shutil.copy2(path, specs / "ops")
    out = out or tmp_path / "out" / "my_ops"
    env = {**os.environ, "ACLNNGEN_CACHE_DIR": str(cache)}
    env.pop("ACLNNGEN_GENERATE_CACHE", None)
    return subprocess.run(
        [*CLI, command, "--specs", str(specs), "--out", str(out), *extra],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )


def _records(cache: Path) -> list[Path]:
    return sorted(
        p for p in cache.rglob("*") if p.is_file() and p.parent.name != "jinja" and p.suffix in (".json", ".pickle")
    )


def _plant_pickles(cache: Path, marker: Path) -> int:
    """A pickle payload at each record's place under the earlier format's name (<key>.pickle)."""
    count = 0
    for record in _records(cache):
        record.with_suffix(".pickle").write_bytes(pickle.dumps({"key": "x", "value": _Payload(marker)}))
        if record.suffix == ".json":
            record.unlink()  # only the pickle left at the record's place
        count += 1
    return count


def _tree(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_a_pickle_named_like_an_old_record_is_never_unpickled(tmp_path):
    cache, marker = tmp_path / "cache", tmp_path / "PWNED"
    first = _generate(tmp_path, cache)
    assert first.returncode == 0, first.stderr
    assert _plant_pickles(cache, marker) > 2 * GENERATED_OPS
    spec = min((tmp_path / "specs" / "ops").glob("*.yaml"))
    spec.write_text(spec.read_text())  # a new change time: the run is not answered from the memo alone
    for command in ("check", "generate"):  # the read-only check too
        again = _generate(tmp_path, cache, command=command)
        assert again.returncode == 0, again.stderr
        assert not marker.exists()
    assert not list((cache / "generate").rglob("*.pickle"))  # removed unread by trim


@pytest.mark.parametrize("how", UNTRUSTED)
def test_records_in_a_cache_not_the_users_own_are_never_used(tmp_path, how):
    cache, marker = tmp_path / "cache", tmp_path / "PWNED"
    out = tmp_path / "out" / "my_ops"
    assert _generate(tmp_path, cache, out=out).returncode == 0
    plain = _tree(out)
    # renders altered as JSON (they would land in the user's package), and a pickle payload at
    # every record's place under the earlier format's name
    records = _records(cache)
    assert len(records) > 2 * GENERATED_OPS
    for path in records:
        if path.suffix == ".json" and path.parent.parent.name == "generate" and not path.name.endswith(".index.json"):
            entry = gencache.decode(path.read_bytes())
            entry["value"] = _inject(entry["value"])
            path.write_bytes(gencache.encode(entry))
        path.with_suffix(".pickle").write_bytes(pickle.dumps({"key": "x", "value": _Payload(marker)}))
    reason = _untrust(cache, how)
    shutil.rmtree(out)  # every file must be written again: from the cache, were it used
    run = _generate(tmp_path, cache, out=out)
    assert run.returncode == 0, run.stderr
    assert not marker.exists()
    assert _tree(out) == plain  # rendered afresh, nothing injected
    assert run.stderr.count("ignoring the cache folder") == 1 and str(cache) in run.stderr and reason in run.stderr


def _inject(value):
    from aclnngen.codegen.generate import OpRender, Output

    def bad(o):
        return Output(o.path, "import os  # INJECTED\n" + o.content, o.sha256)

    if isinstance(value, OpRender):
        return OpRender(tuple(bad(o) for o in value.outputs), value.record)
    if isinstance(value, dict):  # an op's pieces of the shared files (its C block of sim_kernels.c)
        return {name: "#error INJECTED\n" + text for name, text in value.items()}
    outputs, streamed = value  # the shared files: whole outputs, and the digests of streamed ones
    return tuple(bad(o) for o in outputs), streamed


def test_a_linked_record_is_not_followed(tmp_path):
    cache = gencache.OpCache("test", tmp_path / "cache")
    cache.put("ab" * 32, ("a value",))
    assert cache.get("ab" * 32) == ("a value",)
    (entry,) = [p for p in (tmp_path / "cache").rglob("*") if p.is_file()]
    moved = tmp_path / "elsewhere"
    entry.rename(moved)
    entry.symlink_to(moved)
    assert cache.get("ab" * 32) is None


def test_a_record_of_another_user_is_not_read(tmp_path):
    cache = gencache.OpCache("test", tmp_path / "cache")
    cache.put("cd" * 32, ("a value",))
    (entry,) = [p for p in (tmp_path / "cache").rglob("*") if p.is_file()]
    os.chown(entry, OTHER_UID, -1)
    assert cache.get("cd" * 32) is None


def test_records_hold_data_exactly(tmp_path):
    from aclnngen.codegen.generate import OpRender, Output

    value = OpRender((Output("a.py", "x = 1\n", "00"),), {"t": (1, 2.5, None, [True, "\0x"]), "\0tag": {"k": ()}})
    assert gencache.decode(gencache.encode(value)) == value
    assert type(gencache.decode(gencache.encode(value)).record["t"]) is tuple
    with pytest.raises(ValueError):
        gencache.decode(b'{"\\u0000x": 1}')
    with pytest.raises(TypeError):
        gencache.encode({"a": object()})


# --- jinja2 bytecode ------------------------------------------------------------------------------


def _plant_bytecode(cache: Path, marker: Path) -> int:
    import jinja2.bccache

    files = sorted((cache / "jinja").glob("__jinja2_*.cache"))
    for path in files:  # the checksum jinja2 unpickles first, then the code it would run
        path.write_bytes(jinja2.bccache.bc_magic + pickle.dumps(_Payload(marker), 2))
    return len(files)


@pytest.mark.parametrize("how", [*UNTRUSTED, "file of another user"])
def test_planted_bytecode_does_not_run(tmp_path, how):
    cache, marker = tmp_path / "cache", tmp_path / "PWNED"
    assert _generate(tmp_path, cache).returncode == 0
    assert _plant_bytecode(cache, marker) >= 5
    shutil.rmtree(cache / "generate")  # every op rendered again: the templates are loaded
    if how == "file of another user":
        for path in (cache / "jinja").glob("__jinja2_*.cache"):
            os.chown(path, OTHER_UID, -1)  # the folder is the user's; these files are not
    else:
        _untrust(cache, how)
    run = _generate(tmp_path, cache, out=tmp_path / "out2" / "my_ops")
    assert run.returncode == 0, run.stderr
    assert not marker.exists()


# --- the simulator library ------------------------------------------------------------------------


@pytest.fixture(scope="module")
def _payload_build(tmp_path_factory) -> tuple[bytes, Path]:
    folder = tmp_path_factory.mktemp("payload")
    marker = folder / "PWNED"
    src = folder / "payload.c"
    src.write_text(
        textwrap.dedent(f"""\
        #include <stdio.h>
        __attribute__((constructor)) static void planted(void) {{
            FILE *f = fopen("{marker}", "w");
            if (f) fclose(f);
        }}
        int aclsim_probe(void) {{ return 666; }}
    """)
    )
    out = folder / "payload.so"
    subprocess.run(["cc", "-shared", "-fPIC", "-o", str(out), str(src)], check=True, timeout=120)
    return out.read_bytes(), marker


@pytest.fixture
def payload(_payload_build) -> tuple[bytes, Path]:
    """A library whose constructor creates a marker file, and that file (absent): compiled once."""
    data, marker = _payload_build
    marker.unlink(missing_ok=True)
    return data, marker


def _plant_library(cache: Path, payload: bytes) -> int:
    """The payload in place of every built library, with its recorded sha256 recomputed."""
    libs = list(cache.glob(f"sim/*/{REAL_NAME}"))
    for real in libs:
        real.write_bytes(payload)
        (real.parent / DIGEST_NAME).write_text(hashlib.sha256(payload).hexdigest() + "\n")
    return len(libs)


_LOAD = """
import ctypes, sys
from aclnngen.runtime.sim.build import build_simulator
path = build_simulator(core_dir=sys.argv[1], cache_dir=sys.argv[2])
print(path)
print(ctypes.CDLL(str(path)).aclsim_probe())
"""


@pytest.mark.parametrize("how", [*UNTRUSTED, "file of another user"])
def test_a_planted_library_is_never_loaded(tmp_path, how, payload):
    cache, core = tmp_path / "cache", tiny_core(tmp_path / "core")
    planted, marker = payload
    built = build_simulator(core_dir=core, cache_dir=cache)
    assert _plant_library(cache, planted) == 1
    if how == "file of another user":
        os.chown(built.parent / REAL_NAME, OTHER_UID, -1)
    else:
        reason = _untrust(cache, how)
    run = subprocess.run(
        [sys.executable, "-c", _LOAD, str(core), str(cache)], capture_output=True, text=True, timeout=300
    )
    assert run.returncode == 0, run.stderr
    path, value = run.stdout.split()
    assert not marker.exists() and value == "1"
    if how != "file of another user":
        assert not path.startswith(str(cache))  # built in a private folder of the process
        assert run.stderr.count("ignoring the simulator cache folder") == 1 and reason in run.stderr


def test_the_simulator_backend_never_loads_a_planted_library(tmp_path, payload):
    """The backend (aclnngen run, the generated tests) through build_simulator, the real sources."""
    cache, (planted, marker) = seeded_cache(tmp_path / "cache"), payload
    code = "from aclnngen.runtime.sim.backend import SimBackend; print(SimBackend(cache_dir=__import__('sys').argv[1]).path)"
    first = subprocess.run([sys.executable, "-c", code, str(cache)], capture_output=True, text=True, timeout=600)
    assert first.returncode == 0, first.stderr
    assert first.stdout.strip().startswith(str(cache))  # the backend loads what the cache holds ...
    assert _plant_library(cache, planted) >= 1
    os.chown(cache, OTHER_UID, -1)
    run = subprocess.run([sys.executable, "-c", code, str(cache)], capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr
    assert not marker.exists() and not run.stdout.strip().startswith(str(cache))


def test_a_linked_build_folder_is_not_followed(tmp_path):
    cache = tmp_path / "cache"
    core = tiny_core(tmp_path / "core")
    built = build_simulator(core_dir=core, cache_dir=cache)
    outside = tmp_path / "outside"
    built.parent.rename(outside)
    built.parent.symlink_to(outside)  # the key's folder leads out of the cache
    with pytest.raises(SimulatorBuildError, match="cannot use the cache directory"):
        build_simulator(core_dir=core, cache_dir=cache)


def test_the_key_describes_exactly_the_bytes_compiled(tmp_path, monkeypatch):
    """A `generate` that rewrites a source between hashing and compiling (here: a header, in the
    compiler's own call) must not put the new code under the old content's key."""
    cache = tmp_path / "cache"
    core = tiny_core(tmp_path / "core", value=1)
    real_run = simbuild._run_compiler

    def rewriting_run(argv, what):
        if "-o" in argv:
            tiny_core(core, value=2)
        return real_run(argv, what)

    monkeypatch.setattr(simbuild, "_run_compiler", rewriting_run)
    first = build_simulator(core_dir=core, cache_dir=cache)
    monkeypatch.setattr(simbuild, "_run_compiler", real_run)
    assert ctypes.CDLL(str(first)).aclsim_probe() == 1  # what was hashed is what was compiled
    second = build_simulator(core_dir=core, cache_dir=cache)  # the new content: its own key
    assert second != first and ctypes.CDLL(str(second)).aclsim_probe() == 2
    assert not list(cache.glob("sim/*/.tmp-*"))


# --- a killed build -------------------------------------------------------------------------------


# The build as a user's process runs it: Ctrl-C and SIGTERM at their defaults, whatever dispositions
# the test process (a pytest-xdist worker) passes down (an ignored signal is inherited across exec).
_SLOW_BUILD = """
import signal, sys
signal.signal(signal.SIGINT, signal.default_int_handler)
signal.signal(signal.SIGTERM, signal.SIG_DFL)
from aclnngen.runtime.sim.build import build_simulator
build_simulator(core_dir=sys.argv[1], cache_dir=sys.argv[2])
"""


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_a_killed_build_leaves_no_compiler_and_no_temporary(tmp_path, sig):
    pids = tmp_path / "pids"
    cc = tmp_path / "slowcc"
    cc.write_text(
        textwrap.dedent(f"""\
        #!/bin/sh
        if [ "$1" = "--version" ]; then echo "slowcc 1.0"; exit 0; fi
        sleep 120 &
        echo "$$ $!" > {pids}.part && mv {pids}.part {pids}
        wait
    """)
    )
    cc.chmod(0o755)
    cache = tmp_path / "cache"
    core = tiny_core(tmp_path / "core")
    proc = subprocess.Popen(
        [sys.executable, "-c", _SLOW_BUILD, str(core), str(cache)],
        env={**os.environ, "CC": str(cc)},
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 60
    while not pids.exists():
        assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
        time.sleep(0.02)
    compiler = [int(p) for p in pids.read_text().split()]
    assert all(_alive(p) for p in compiler)
    proc.send_signal(sig)
    proc.communicate(timeout=60)
    assert proc.returncode != 0
    deadline = time.monotonic() + 10  # SIGKILLed; the orphaned child is reaped by init
    while [p for p in compiler if _alive(p)] and time.monotonic() < deadline:
        time.sleep(0.05)
    try:
        assert not [p for p in compiler if _alive(p)]  # the compiler and what it started
        assert not list(cache.glob("sim/*/.tmp-*")) and not list(cache.glob("sim/*/.*aclnngen-tmp*"))
    finally:
        for p in compiler:
            try:
                os.kill(p, signal.SIGKILL)
            except OSError:
                pass
