"""Generation at scale: the op cache, the unchanged-run record and the worker processes give
exactly what a plain render gives, and never hide a change (codegen/gencache.py)."""

from __future__ import annotations

import os
import re
import shutil

import forkserver
import pytest

from aclnngen.codegen import gencache, generate
from aclnngen.codegen.loader import DEFAULT_SPECS_DIR

#: two ops of the catalog, read from the specs, and the CANN name of the second
_NAMES = sorted(p.stem for p in (DEFAULT_SPECS_DIR / "ops").glob("*.yaml"))
# (none a part of another's name, so finding one in a command's output means that one)
ONE, OTHER = [n for n in _NAMES if not any(n != m and n in m for m in _NAMES)][:2]
OTHER_NAME = re.search(r"^name: (\w+)$", (DEFAULT_SPECS_DIR / "ops" / f"{OTHER}.yaml").read_text(), re.M).group(1)


#: the ops the tests generate: enough for the workers and the trim bound, a fixed number however
#: many specs the repository holds (the mechanism is the subject, not each op)
SUBSET = ([ONE, OTHER] + [n for n in _NAMES if n not in (ONE, OTHER)])[:6]


def _specs(tmp_path):
    specs = tmp_path / "specs"
    (specs / "ops").mkdir(parents=True)
    for name in SUBSET:
        shutil.copy2(DEFAULT_SPECS_DIR / "ops" / f"{name}.yaml", specs / "ops")
    return specs


def _plan(specs, tmp_path, cache):
    return generate.plan(specs, generate.package_layout(tmp_path / "out" / "my_ops"), cache=cache)


def test_cached_and_parallel_renders_equal_a_plain_render(tmp_path, monkeypatch):
    specs = _specs(tmp_path)
    plain = _plan(specs, tmp_path, False)
    cache = gencache.OpCache("test", tmp_path / "cache")
    monkeypatch.setattr(generate, "PARALLEL_FROM", 2)  # worker processes even for a few ops
    first = _plan(specs, tmp_path, cache)
    assert (
        cache.misses == len(list((specs / "ops").glob("*.yaml"))) + 1 and cache.hits == 0
    )  # every op, and the shared files
    second = _plan(specs, tmp_path, cache)
    assert cache.hits == cache.misses  # the second run: every op and the shared files from the cache
    assert first == plain and second == plain


def test_a_changed_spec_is_rendered_again_and_only_it(tmp_path):
    specs = _specs(tmp_path)
    cache = gencache.OpCache("test", tmp_path / "cache")
    _plan(specs, tmp_path, cache)
    spec = specs / "ops" / f"{ONE}.yaml"
    spec.write_text(spec.read_text().replace("summary: ", "summary: Changed. ", 1))
    cache.hits = cache.misses = 0
    changed = _plan(specs, tmp_path, cache)
    assert (
        cache.misses == 2 and cache.hits == len(list((specs / "ops").glob("*.yaml"))) - 1
    )  # the op and the shared files
    assert changed == _plan(specs, tmp_path, False)
    assert any("Changed." in o.content for o in changed if o.path.endswith(f"{ONE}.py"))


def test_another_generator_misses_every_entry(tmp_path, monkeypatch):
    specs = _specs(tmp_path)
    _plan(specs, tmp_path, gencache.OpCache("test", tmp_path / "cache"))
    monkeypatch.setattr(gencache, "generator_fingerprint", lambda: "a changed template")
    cache = gencache.OpCache("test", tmp_path / "cache")
    _plan(specs, tmp_path, cache)
    assert cache.hits == 0


def test_a_spec_with_problems_is_reported_and_never_cached(tmp_path):
    specs = _specs(tmp_path)
    bad = specs / "ops" / f"{OTHER}.yaml"
    bad.write_text(bad.read_text().replace(f"name: {OTHER_NAME}", f"name: {OTHER_NAME[0].lower()}{OTHER_NAME[1:]}", 1))
    cache = gencache.OpCache("test", tmp_path / "cache")
    for _ in range(2):
        with pytest.raises(Exception) as info:
            _plan(specs, tmp_path, cache)
        assert f"{OTHER}.yaml" in str(info.value)


def test_an_unchanged_run_writes_nothing_and_a_touched_output_is_seen(tmp_path):
    """Each run a process of its own (forked: it reads the cache folder's variable when it runs),
    so a run knows of the one before only what that one recorded in the cache."""
    specs = _specs(tmp_path)
    out = tmp_path / "out" / "my_ops"
    args = ["generate", "--specs", specs, "--out", out]
    env = {"ACLNNGEN_CACHE_DIR": str(tmp_path / "cache")}
    first = forkserver.run_cli(*args, env=env, timeout=300)
    assert first.returncode == 0 and " 0 written" not in first.stdout, first.stderr
    again = forkserver.run_cli(*args, env=env, timeout=300)
    assert again.returncode == 0 and again.stdout.strip().endswith("0 written, 0 removed"), again.stdout
    # an output edited by hand: the run is no longer "unchanged"; the writer refuses to overwrite it
    edited = out / "ops" / f"{ONE}.py"
    edited.write_text(edited.read_text() + "# mine\n")
    refused = forkserver.run_cli(*args, env=env, timeout=300)
    assert refused.returncode == 1 and "edited since aclnngen wrote it" in refused.stderr, (
        refused.stdout + refused.stderr
    )
    # an output deleted: generated again
    edited.unlink()
    restored = forkserver.run_cli(*args, env=env, timeout=300)
    assert restored.returncode == 0 and f"{ONE}.py" in restored.stdout, restored.stdout
    assert edited.exists() and "# mine" not in edited.read_text()
    # a spec changed: rendered and written again
    spec = specs / "ops" / f"{OTHER}.yaml"
    spec.write_text(spec.read_text().replace("summary: ", "summary: Changed. ", 1))
    changed = forkserver.run_cli(*args, env=env, timeout=300)
    assert changed.returncode == 0 and OTHER in changed.stdout and " 0 written" not in changed.stdout, changed.stdout


def test_the_cache_can_be_turned_off(tmp_path, monkeypatch):
    monkeypatch.setenv("ACLNNGEN_GENERATE_CACHE", "0")
    monkeypatch.setenv("ACLNNGEN_CACHE_DIR", str(tmp_path / "cache"))
    specs = _specs(tmp_path)
    generate.plan(specs, generate.package_layout(tmp_path / "out" / "my_ops"))
    assert not (tmp_path / "cache").exists()


def test_the_cache_keeps_the_most_recently_used_entries(tmp_path):
    specs = _specs(tmp_path)
    cache = gencache.OpCache("test", tmp_path / "cache")
    _plan(specs, tmp_path, cache)
    entries = sorted((tmp_path / "cache").glob("*/*.json"))
    ops = len(list((specs / "ops").glob("*.yaml")))
    assert len(entries) == 3 * ops + 1  # each op's render, index and pieces, and the shared files
    assert cache.trim(keep=len(entries) // 3 + 1) == 0  # within the bound: nothing goes
    assert cache.trim(keep=3) == len(entries) - 9  # beyond it (9 files): a tenth below, rounded down
    assert len(list((tmp_path / "cache").glob("*/*.json"))) == 9
    assert cache.trim(keep=3) == 0  # the next run finds it within the bound
    cache.hits = cache.misses = 0
    assert _plan(specs, tmp_path, cache) == _plan(specs, tmp_path, False)  # what went is rendered again
    assert cache.misses >= ops - 3


def test_an_op_whose_render_left_the_cache_is_rendered_again(tmp_path):
    specs = _specs(tmp_path)
    cache = gencache.OpCache("test", tmp_path / "cache")
    plain = _plan(specs, tmp_path, cache)
    for render in (tmp_path / "cache").glob("*/*.json"):
        if not render.name.endswith(".index.json"):
            render.unlink()  # the indexes stay: a hit needs its render too
    cache.hits = cache.misses = 0
    again = _plan(specs, tmp_path, cache)
    assert cache.hits == 0 and again == plain


def test_a_large_run_keeps_texts_in_the_cache_and_writes_the_same_files(tmp_path, monkeypatch):
    specs = _specs(tmp_path)
    out_plain, out_streamed = tmp_path / "a" / "my_ops", tmp_path / "b" / "my_ops"
    generate.write(_plan(specs, tmp_path, False), out_plain, generate.package_layout(out_plain))
    monkeypatch.setattr(generate, "STREAM_FROM", 1)  # every run counts as large
    outputs = generate.plan(
        specs, generate.package_layout(out_streamed), cache=gencache.OpCache("t", tmp_path / "cache")
    )
    assert any(isinstance(o, generate.LazyOutput) for o in outputs)  # texts left in the cache
    generate.write(outputs, out_streamed, generate.package_layout(out_streamed))
    files = sorted(p.relative_to(out_plain) for p in out_plain.rglob("*") if p.is_file())
    assert files == sorted(p.relative_to(out_streamed) for p in out_streamed.rglob("*") if p.is_file())
    assert all((out_plain / f).read_bytes() == (out_streamed / f).read_bytes() for f in files)


def test_a_cache_folder_that_cannot_be_written_is_no_error(aclnngen_cli, tmp_path):
    specs = _specs(tmp_path)
    blocked = tmp_path / "blocked"
    blocked.write_text("a file where the cache folder should be")  # no folder can be made under it
    env = {**os.environ, "ACLNNGEN_CACHE_DIR": str(blocked / "cache")}
    out = tmp_path / "out" / "my_ops"
    for _ in range(2):
        done = aclnngen_cli("generate", "--specs", str(specs), "--out", str(out), env=env, timeout=300)
        assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    assert (out / "ops" / f"{ONE}.py").is_file()


def test_a_spec_behind_a_link_that_changes_is_seen(tmp_path):
    specs = _specs(tmp_path)
    real = tmp_path / "elsewhere" / f"{ONE}.yaml"
    real.parent.mkdir()
    (specs / "ops" / f"{ONE}.yaml").rename(real)
    (specs / "ops" / f"{ONE}.yaml").symlink_to(real)
    out = tmp_path / "out" / "my_ops"
    env = {"ACLNNGEN_CACHE_DIR": str(tmp_path / "cache")}
    args = ["generate", "--specs", specs, "--out", out]
    assert forkserver.run_cli(*args, env=env, timeout=300).returncode == 0
    real.write_text(real.read_text().replace("summary: ", "summary: Behind a link. ", 1))
    again = forkserver.run_cli(*args, env=env, timeout=300)
    assert again.returncode == 0 and ONE in again.stdout, again.stdout
    assert "Behind a link." in (out / "ops" / f"{ONE}.py").read_text()


def test_an_unchanged_run_renders_nothing_and_a_touched_output_renders_again(tmp_path, monkeypatch, capsys):
    from aclnngen.codegen.cli import main

    monkeypatch.setenv("ACLNNGEN_CACHE_DIR", str(tmp_path / "cache"))
    specs = _specs(tmp_path)
    out = tmp_path / "out" / "my_ops"
    cmd = ["generate", "--specs", str(specs), "--out", str(out)]
    assert main(cmd) == 0
    real_plan = generate.plan

    def no_render(*args, **kwargs):
        raise AssertionError("an unchanged run rendered")

    monkeypatch.setattr(generate, "plan", no_render)
    assert main(cmd) == 0  # answered from the record of the last run
    (out / "docs" / "index.md").write_text("touched\n")
    capsys.readouterr()
    assert main(cmd) == 1  # an output the last run did not leave so: a full run, which renders
    assert "an unchanged run rendered" in capsys.readouterr().err
    monkeypatch.setattr(generate, "plan", real_plan)


def test_a_warm_cache_at_a_release_that_leaves_ops_out_gives_the_cold_render(tmp_path):
    """generate --cann: an op its spec does not cover at the release is left out; the cached ops'
    pieces of sim_kernels.c are still read under their own keys (not a left-out op's)."""
    from aclnngen.codegen.loader import load_all
    from aclnngen.codegen.releases import covers, described
    from aclnngen.core.releases import CannVersion

    loaded = {ls.path: ls.spec for ls in load_all()}
    releases = sorted(set().union(*(described(s) for s in loaded.values())), key=CannVersion)
    release = next((r for r in releases if 0 < sum(covers(s, r) for s in loaded.values()) < len(loaded)), None)
    if release is None:
        pytest.skip("every spec covers every release the specs describe: no op is left out")
    # a fixed three ops: one left out, then two covered ones after it in name order (the cached ops
    # whose keys a left-out op before them would shift)
    paths = sorted(loaded)
    out = next(p for p in paths if not covers(loaded[p], release))
    after = [p for p in paths if p > out and covers(loaded[p], release)][:2]
    if not after:
        pytest.skip(f"no covered op sorts after {out.stem}: the left-out op shifts no key")
    specs = tmp_path / "specs"
    (specs / "ops").mkdir(parents=True)
    for path in [out, *after]:
        shutil.copy2(path, specs / "ops")
    layout = generate.package_layout(tmp_path / "out" / "my_ops")
    plain = generate.plan(specs, layout, release=release, cache=False)
    cache = gencache.OpCache(f"at {release}", tmp_path / "cache")
    cold = generate.plan(specs, layout, release=release, cache=cache)
    cache.hits = cache.misses = 0
    warm = generate.plan(specs, layout, release=release, cache=cache)
    assert cache.hits > 0  # the second run read the covered ops from the cache
    assert cold == plain and warm == plain
