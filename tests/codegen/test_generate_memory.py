"""Generation's memory at CANN scale: sim_kernels.c (~11 KB of C per op) is streamed from each op's
piece, never held whole, and nothing the run keeps per op holds that C (codegen/generate.py)."""

from __future__ import annotations

import hashlib
import tracemalloc
from pathlib import Path

import catalog

from aclnngen.codegen import gencache, generate, render
from aclnngen.codegen.loader import load_products, load_spec, spec_paths
from aclnngen.codegen.writer import Folder, digest
from aclnngen.core import meta as core_meta

SIM_KERNELS = "generated/c/sim_kernels.c"


def _whole_rendering(records: list[dict], blocks: list[str]) -> str:
    """sim_kernels.c as one string, the way it was rendered before it was streamed."""
    kernels = [{**r["kernels"], "block": b} for r, b in zip(records, blocks)]
    return render.render(
        "sim_kernels.c.j2",
        header=generate._header("simulator kernels", "specs/ops/", "sim_kernels.c.j2"),
        kernels=[k for k in kernels if k["rows"] or k["block"].strip()],
        fallbacks=[k["fallback"] for k in kernels if k["fallback"] is not None],
    )


def _representatives(tmp_path) -> Path:
    """A specs folder of one op per structure (tests/catalog.py): what these tests check is how the
    generator holds and streams a run's C, which a renamed op adds nothing to."""
    return catalog.representative_specs_folder(tmp_path / "specs")


def test_streamed_sim_kernels_equals_the_whole_rendering(tmp_path):
    """(The committed file's digest is the streamed output's: test_generate.py's freshness test.)"""
    specs = _representatives(tmp_path)
    outputs = generate.plan(specs, cache=gencache.OpCache("test", tmp_path / "cache"))
    (streamed,) = [o for o in outputs if o.path == SIM_KERNELS]
    assert isinstance(streamed, generate.StreamedOutput)
    data = b"".join(streamed.chunks(size=4096))
    assert data == streamed.content.encode("utf-8") and b"ACLK_CLONES static void" in data
    assert streamed.sha256 == digest(data)
    products = load_products(specs)
    records, blocks = [], []
    for path in spec_paths(specs):
        view = generate.OpView(load_spec(path, products).spec, products)
        kernels, block = generate._sim_kernels(view)
        records.append({"kernels": kernels})
        blocks.append(block)
    assert len(records) == len(catalog.representatives())
    assert _whole_rendering(records, blocks).encode("utf-8") == data


def test_records_and_cached_ops_hold_no_c_block(tmp_path, monkeypatch):
    specs = _representatives(tmp_path)
    monkeypatch.setattr(generate, "STREAM_FROM", 1)  # every run counts as large
    cache = gencache.OpCache("test", tmp_path / "cache")
    layout = generate.package_layout(tmp_path / "out" / "my_ops")
    for _ in range(2):  # rendered, then every op from the cache
        ops, keys = generate._op_renders(specs, layout, load_products(specs), None, cache)
        assert ops and all(op.pieces is None for op in ops)  # the blocks wait in the cache
        assert not any("ACLK_CLONES static void" in repr(op.record) for op in ops)
    assert any("ACLK_CLONES static void" in cache.pieces_of(k)[generate.SIM_KERNELS] for k in keys)


def test_rendering_ops_leaves_no_op_metadata_cached(tmp_path):
    specs = _representatives(tmp_path)
    products = load_products(specs)
    layout = generate.package_layout(tmp_path / "out" / "my_ops")
    before = len(core_meta._BUILT)
    renders, problems = generate._render_batch(specs, layout, products, None, spec_paths(specs))
    assert renders and not problems
    assert len(core_meta._BUILT) <= before  # each op's throwaway META forgotten (core/meta.py forget)


def _synthetic(ops: int, block_bytes: int):
    """Records of `ops` ops whose C blocks (`block_bytes` each) are made only when asked."""
    rows = lambda i: [(f"aclnnOp{i}", "float32", "float32", f"aclk_op{i}_f32")]  # noqa: E731
    records = [{"kernels": {"snake": f"op{i}", "rows": rows(i), "fallback": None, "listed": True}} for i in range(ops)]
    line = "    /* filler */\n"

    def piece(index: int, name: str) -> str:
        assert name == generate.SIM_KERNELS
        return f"\n/* op{index} */\n" + line * (block_bytes // len(line))

    return records, piece


def test_streaming_sim_kernels_holds_about_one_block_at_a_time(tmp_path):
    ops, block = 300, 32 * 1024  # ~10 MB of C in all
    records, piece = _synthetic(ops, block)
    tracemalloc.start()
    try:
        output = generate._sim_kernels_output("c/sim_kernels.c", records, piece)  # digests as it streams
        Folder(tmp_path).write(output.path, output.chunks())
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 2 * 1024 * 1024, f"{peak / 1e6:.1f} MB traced for {ops * block / 1e6:.0f} MB of C"
    written = (tmp_path / "c" / "sim_kernels.c").read_bytes()
    assert len(written) > ops * block * 0.9
    assert hashlib.sha256(written).hexdigest() == output.sha256
    assert Folder(tmp_path).digest("c/sim_kernels.c") == output.sha256


class _Unreadable:
    """An output whose text must not be asked for."""

    path, sha256 = "c/big.c", "0" * 64

    @property
    def content(self) -> str:
        raise AssertionError("the text was read to answer a membership test")


def test_the_writer_asks_membership_without_reading_a_file():
    # the writer asks `rel in outputs` for every file it remembers: Mapping's own __contains__
    # would encode each file's text (every op's render read back from the cache, sim_kernels.c whole)
    encoded = generate._Encoded({"c/big.c": _Unreadable()})
    assert "c/big.c" in encoded and "c/other.c" not in encoded
    assert encoded.digest("c/big.c") == "0" * 64
