"""What `aclnngen generate` writes: the plan of outputs, rendered in memory, then written if changed.

Two layouts:
- the repository (default): generated/, tests/generated/, docs/ops/ and specs/schema/ under the
  repository root, for the specs under specs/;
- a stand-alone package (`--specs DIR --out DIR`): bindings, references, tests and docs for specs kept
  elsewhere, in one importable package that uses aclnngen.runtime like the built-in ops.

Output is a pure function of the specs and the templates: no time, no paths of this machine, no
dict-order or hash-seed dependence.
"""

from __future__ import annotations

import difflib
import functools
import json
import posixpath
from functools import lru_cache
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from . import abi as abi_model
from . import ffi_modules, names, render
from .errors import GenerateError
from .gencache import OpCache, record_class
from .loader import REPO_ROOT, LoadedSpec, load_all, load_products
from .model import OpSpec
from .products import ProductTable
from .writer import Folder, Manifest, digest, is_temporary, read_manifest, write_owned
from .tables import table_path
from .view import OpView
from aclnngen.core.attribute_types import ATTRIBUTE_TYPES
from aclnngen.core.kinds import kind_of
from aclnngen.core.tiers import upgrade_hint

GENERATOR = "aclnngen generate"
MANIFEST_NAME = "aclnngen-manifest.json"


@record_class("o")  # kept in the generation cache's JSON records (codegen/gencache.py)
@dataclass(frozen=True)
class Output:
    path: str  # relative to the output root, POSIX separators
    content: str
    # sha256 of the content's UTF-8 bytes, when known (computed once where an op is rendered, kept
    # in the op cache); not part of equality
    sha256: str = field(default="", compare=False)


@dataclass(frozen=True)
class Layout:
    """Where each kind of output goes, relative to the output root."""

    package: str  # the Python package the generated modules form
    package_dir: str  # its folder
    tests_dir: str
    docs_dir: str
    schema_dir: str | None  # only the repository publishes the schema
    shared: bool  # whether the ABI, products and simulator declarations are rendered here
    changes_doc: str | None = None  # the change log; default <docs_dir>/changes-by-release.md

    @property
    def manifest(self) -> str:
        """The manifest of what the generator wrote here (see codegen/writer.py)."""
        return f"{self.package_dir}/{MANIFEST_NAME}".removeprefix("./")

    def module(self, kind: str, op: str) -> str:
        return f"{self.package_dir}/{kind}/{op}.py"


REPO_LAYOUT = Layout(
    package="aclnngen.generated",
    package_dir="generated",
    tests_dir="tests/generated",
    docs_dir="docs/ops",
    schema_dir="specs/schema",
    shared=True,
    changes_doc="docs/changes.md",
)


def package_layout(out: Path) -> Layout:
    name = out.name
    problem = names.package_clash(name)
    if problem:
        raise GenerateError(f"--out {out}: the folder name {name!r} is the package's name, and {problem}")
    return Layout(package=name, package_dir=".", tests_dir="tests", docs_dir="docs", schema_dir=None, shared=False)


# Folders the generator owns entirely: a file there that no spec produces is an orphan.
def owned_dirs(layout: Layout) -> list[str]:
    dirs = [f"{layout.package_dir}/{k}" for k in ("meta", "ops", "reference", "ffi", "c")]
    dirs += [layout.tests_dir, layout.docs_dir, layout.package_dir]
    if layout.schema_dir:
        dirs.append(layout.schema_dir)
    return [d.removeprefix("./") for d in dirs]


def _header(kind: str, source: str, template: str) -> dict:
    return {"source": source, "template": template, "generator": GENERATOR, "kind": kind}


def _source_of(path: Path, specs_dir: Path) -> str:
    """How generated files name their spec: its path from the specs folder's parent."""
    try:
        # a spec file that is no link resolves inside its resolved folder (one resolve per folder)
        resolved = path.resolve() if path.is_symlink() else _resolved_dir(path.parent) / path.name
        return resolved.relative_to(_resolved_dir(specs_dir).parent).as_posix()
    except ValueError:
        return f"{specs_dir.name}/ops/{path.name}"


@functools.lru_cache(maxsize=64)
def _resolved_dir(folder: Path) -> Path:
    return folder.resolve()


@dataclass
class Plan:
    specs_dir: Path
    layout: Layout
    only: tuple[str, ...] = ()
    outputs: list[Output] = field(default_factory=list)

    def add(self, path: str, content: str) -> None:
        self.outputs.append(Output(path.removeprefix("./"), content, digest(content.encode("utf-8"))))


def plan(
    specs_dir: Path,
    layout: Layout = REPO_LAYOUT,
    only: tuple[str, ...] = (),
    release: str | None = None,
    cache: "OpCache | None | bool" = True,
) -> list[Output]:
    """Every output for the specs under `specs_dir`, rendered in memory. Each op's outputs come
    from the op cache (codegen/gencache.py) when its spec, the generator and the context are
    unchanged; `cache=False` renders everything."""
    products = load_products(specs_dir)
    _resolved_dir.cache_clear()  # a folder may have been moved or relinked since the last run
    cache = _cache(cache, specs_dir, layout, products, release)
    ops, keys = _op_renders(specs_dir, layout, products, release, cache)
    if not ops:
        raise GenerateError(f"no op specs found under {specs_dir / 'ops'}")
    names = {op.record["snake"] for op in ops}
    unknown = sorted(set(only) - names - {op.record["name"] for op in ops})
    if unknown:
        raise GenerateError(f"unknown op(s) {', '.join(unknown)}; known: {', '.join(sorted(names))}")
    p = Plan(specs_dir, layout, only)
    for op in ops:
        if not only or op.record["snake"] in only or op.record["name"] in only:
            p.outputs.extend(op.outputs)
    p.outputs.extend(_shared_outputs(specs_dir, layout, ops, products, cache, keys))
    outputs = sorted(p.outputs, key=lambda o: o.path)
    if not only:  # a partial run's manifest is merged with the one on disk by the writer
        outputs.append(
            Output(
                layout.manifest,
                Manifest({o.path: o.sha256 or digest(o.content.encode("utf-8")) for o in outputs}).text(),
            )
        )
    return outputs


def _shared_outputs(specs_dir: Path, layout: Layout, ops: list[OpRender], products: ProductTable, cache, keys) -> list:
    """The files every op contributes to (indexes, simulator entries, change log; in the repository
    also the ABI, product and profile tables), from the ops' records; cached under the keys of all
    ops and the text of the shared tables, so an unchanged run renders none of them. sim_kernels.c
    is streamed from the ops' pieces (StreamedOutput): the cache keeps only its digest."""
    records = [op.record for op in ops]

    def piece(index: int, name: str) -> str:
        pieces = ops[index].pieces
        return (pieces if pieces is not None else cache.pieces_of(keys[index]))[name]

    key = None
    if cache is not None and all(keys):
        from .profiles import profile_paths

        tables = [table_path(specs_dir, "abi.yaml"), table_path(specs_dir, "products.yaml")] if layout.shared else []
        texts = [
            f"{path}\0{path.read_text(encoding='utf-8', errors='replace')}"
            for path in tables + (profile_paths(specs_dir) if layout.shared else [])
        ]
        key = cache.key("shared", "\0".join(keys + texts))
        hit = cache.get(key)
        if hit is not None:
            outputs, streamed = hit
            return list(outputs) + [_sim_kernels_output(path, records, piece, sha) for path, sha in streamed]
    p = Plan(specs_dir, layout)
    _render_indexes(p, records, products, piece)
    if layout.shared:
        _render_shared(p, records, products)
    if key:
        plain = tuple(o for o in p.outputs if isinstance(o, Output))
        streamed = [(o.path, o.sha256) for o in p.outputs if isinstance(o, StreamedOutput)]
        cache.put(key, (plain, streamed))
    return p.outputs


class _Encoded(Mapping):
    """path -> UTF-8 bytes of a rendered output, encoded (and for a cached op read back) when asked:
    the writer reads each file's bytes in turn, and none of a file it judges by its digest."""

    def __init__(self, outputs: dict[str, "Output | LazyOutput"]):
        self._outputs = outputs

    def __getitem__(self, path: str) -> bytes:
        return self._outputs[path].content.encode("utf-8")

    def chunks(self, path: str):
        """The file's bytes in pieces (a streamed output never whole in memory)."""
        output = self._outputs[path]
        if isinstance(output, StreamedOutput):
            return output.chunks()
        return iter((self[path],))

    def digest(self, path: str) -> str:
        """sha256 of the file's bytes (known from rendering, else computed)."""
        return self._outputs[path].sha256 or digest(self[path])

    def __iter__(self):
        return iter(self._outputs)

    def __len__(self) -> int:
        return len(self._outputs)

    def __contains__(self, path) -> bool:
        # Mapping's own would encode (and read back) the file to answer
        return path in self._outputs


@record_class("r")
@dataclass(frozen=True)
class OpRender:
    """One op's own outputs, and what the shared files need of it: its record (see _record) and
    its pieces of the shared files (SIM_KERNELS: its C block of sim_kernels.c), or None when the
    pieces wait in the generation cache under the op's key (read back while the file is written)."""

    outputs: tuple[Output, ...]
    record: dict
    pieces: dict | None = None


def _cache(cache, specs_dir: Path, layout: Layout, products: ProductTable, release: str | None):
    from . import gencache

    if cache is False or (cache is True and not gencache.enabled()):
        return None
    if isinstance(cache, gencache.OpCache):
        return cache
    context = json.dumps(
        {
            "layout": repr(layout),
            "release": release,
            "products": products.model_dump(mode="json"),
            # an op's cffi module includes the runtime's declarations (codegen/ffi_modules.py)
            "runtime_header": digest(_runtime_header(specs_dir).encode("utf-8")),
        },
        sort_keys=True,
    )
    return gencache.OpCache(context)


def _op_renders(
    specs_dir: Path, layout: Layout, products: ProductTable, release: str | None, cache
) -> tuple[list[OpRender], list]:
    """Every op's render, in name order, and its cache key (None without a cache); all problems of
    all specs in one SpecError (as load_all). The ops the cache does not hold are rendered in
    worker processes when there are many (PARALLEL_FROM) and more than one core."""
    from .errors import SpecError
    from .loader import spec_paths
    from .yamlio import read_text

    paths = spec_paths(specs_dir)
    found: list[OpRender | None] = [None] * len(paths)
    keys: list[str | None] = [None] * len(paths)
    for index, path in enumerate(paths):
        if cache is None:
            continue
        try:
            keys[index] = cache.key(_source_of(path, specs_dir), read_text(path))
        except SpecError:
            continue  # unreadable: rendering it reports why
        indexed = cache.get_op(keys[index])
        if indexed is not None:
            found[index] = _cached_render(cache, keys[index], indexed)
    missing = [i for i, op in enumerate(found) if op is None]
    problems = []
    for indexes, (renders, trouble) in _render_all(
        specs_dir, layout, products, release, [paths[i] for i in missing], missing
    ):
        problems.extend(trouble)
        for index, rendered in zip(indexes, renders):
            found[index] = rendered
            if rendered is not None and keys[index]:
                indexed = (rendered.record, [(o.path, o.sha256) for o in rendered.outputs])
                cache.put_op(keys[index], OpRender(rendered.outputs, rendered.record), indexed, rendered.pieces)
                if len(paths) >= STREAM_FROM and cache.holds(keys[index]):  # many ops: texts wait in the cache
                    found[index] = _cached_render(cache, keys[index], indexed)
    if problems:
        raise SpecError(problems)
    if missing and cache is not None:
        cache.trim(max(cache.max_entries, 2 * len(paths) + 2))  # never this run's own entries
    # an op left out (at a release its spec does not cover) has a key but no render: drop both,
    # so ops[i] and keys[i] stay the same op's (a cached op's pieces are read by its key)
    kept = [(op, key) for op, key in zip(found, keys) if op is not None]
    return [op for op, _ in kept], [key for _, key in kept]


def _cached_render(cache, key: str, indexed) -> OpRender:
    """An op from the cache: its record, and outputs whose text is read back only when asked."""
    record, files = indexed
    return OpRender(tuple(LazyOutput(path, sha, cache, key) for path, sha in files), record)


class LazyOutput:
    """An Output of a cached op whose text stays in the cache until something asks for it (the
    writer only does for a file it must write; unchanged files are judged by their digests)."""

    __slots__ = ("path", "sha256", "_cache", "_key")

    @property
    def group(self) -> str:
        """The cache entry it is read back from (the writer takes an entry's files in turn)."""
        return self._key

    def __init__(self, path: str, sha256: str, cache, key: str):
        self.path, self.sha256, self._cache, self._key = path, sha256, cache, key

    @property
    def content(self) -> str:
        for output in self._cache.render_of(self._key).outputs:
            if output.path == self.path:
                return output.content
        raise GenerateError(f"the generation cache's entry for {self.path} lacks it; run again")

    def __eq__(self, other) -> bool:
        return isinstance(other, _OUTPUTS) and (self.path, self.content) == (other.path, other.content)

    def __hash__(self) -> int:
        return hash((self.path, self.sha256))

    def __repr__(self) -> str:
        return f"LazyOutput({self.path!r}, sha256={self.sha256[:12]})"


class StreamedOutput:
    """A shared output too big to hold whole at CANN scale (sim_kernels.c: ~11 KB of C per op),
    rendered as a stream of pieces (`pieces()` starts it afresh, each op's piece read when its turn
    comes): its digest is taken as it streams, and the writer writes it in chunks."""

    __slots__ = ("path", "sha256", "_pieces")

    def __init__(self, path: str, pieces, sha256: str = ""):
        self.path, self._pieces = path, pieces
        if not sha256:
            import hashlib

            hashing = hashlib.sha256()
            for chunk in self.chunks():
                hashing.update(chunk)
            sha256 = hashing.hexdigest()
        self.sha256 = sha256

    def chunks(self, size: int = 1 << 16):
        """The UTF-8 bytes in chunks of about `size` (the template's pieces are small)."""
        batch, held = [], 0
        for piece in self._pieces():
            batch.append(piece)
            held += len(piece)
            if held >= size:
                yield "".join(batch).encode("utf-8")
                batch, held = [], 0
        if batch:
            yield "".join(batch).encode("utf-8")

    @property
    def content(self) -> str:
        return "".join(self._pieces())

    def __eq__(self, other) -> bool:
        return isinstance(other, _OUTPUTS) and (self.path, self.content) == (other.path, other.content)

    def __hash__(self) -> int:
        return hash((self.path, self.sha256))

    def __repr__(self) -> str:
        return f"StreamedOutput({self.path!r}, sha256={self.sha256[:12]})"


_OUTPUTS = (Output, LazyOutput, StreamedOutput)


PARALLEL_FROM = 48  # ops to render before worker processes pay for themselves
BATCH = 64  # ops per worker task: small enough that finished renders never pile up
STREAM_FROM = 1000  # ops from which rendered texts are kept in the cache until written (bounded memory)


def _render_all(specs_dir, layout, products, release, paths: list[Path], indexes: list[int]):
    """(indexes, (renders, problems)) per batch of `paths`, in order."""
    import os

    workers = min(os.cpu_count() or 1, 8)
    if len(paths) < PARALLEL_FROM or workers < 2:
        yield indexes, _render_batch(specs_dir, layout, products, release, paths)
        return
    import collections
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    # fork where there is one: the workers start with the generator already imported
    method = "fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn"
    size = max(8, min(BATCH, len(paths) // (workers * 4)))
    batches = [(paths[i : i + size], indexes[i : i + size]) for i in range(0, len(paths), size)]
    with ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context(method)) as pool:
        # a few batches in flight, taken in order: finished renders never pile up in memory
        pending: collections.deque = collections.deque()
        for batch, batch_indexes in batches:
            pending.append((batch_indexes, pool.submit(_render_batch, specs_dir, layout, products, release, batch)))
            if len(pending) > 2 * workers:
                done_indexes, future = pending.popleft()
                yield done_indexes, future.result()
        while pending:
            done_indexes, future = pending.popleft()
            yield done_indexes, future.result()


def _render_batch(specs_dir: Path, layout: Layout, products: ProductTable, release: str | None, paths: list[Path]):
    """(renders, problems) for `paths`: None in place of a spec with problems."""
    from .errors import SpecError
    from .loader import load_spec

    renders, problems = [], []
    for path in paths:
        try:
            ls = load_spec(path, products)
        except SpecError as exc:
            problems.extend(exc.problems)
            renders.append(None)
            continue
        if release is not None:  # only the facts that hold at that release (generate --cann)
            from dataclasses import replace

            from .atrelease import at_release
            from .releases import covers

            if not covers(ls.spec, release):  # described only at later releases: left out, never extrapolated
                renders.append(None)
                continue
            ls = replace(ls, spec=at_release(ls.spec, release, products.ids))
        renders.append(_render_op(specs_dir, layout, ls, products))
    return renders, problems


def _record(view: OpView, kernels: dict) -> dict:
    """What the shared files need of one op: its names, its simulator entry, its compiled kernels'
    table rows (`kernels`: _sim_kernels, without the C block, which is a piece), its support-matrix
    row and its part of the change log."""
    from .changes import op_changes

    spec = view.spec
    return {
        "snake": spec.snake_name,
        "name": spec.name,
        "summary": spec.summary,
        "sim": _sim_entry(view),
        "kernels": kernels,
        "support": view.docs.support,
        "changes": op_changes(spec),
        "newest": _newest_release(spec),
        "computes": spec.computes,
    }


def _newest_release(spec: OpSpec) -> str:
    """The newest release the spec describes (its page's, or a since/until boundary)."""
    from aclnngen.core.releases import CannVersion

    from .releases import described

    return max(described(spec), key=CannVersion)


def _render_op(specs_dir: Path, layout: Layout, ls: LoadedSpec, products: ProductTable) -> OpRender:
    """One op's own outputs and record, all read from one view of it (codegen/view.py)."""
    from aclnngen.core.meta import forget

    view = OpView(ls.spec, products, layout.package)
    p = Plan(specs_dir, layout)
    try:
        _render_op_outputs(p, ls.path, view)
        kernels, block = _sim_kernels(view)
        return OpRender(tuple(p.outputs), _record(view, kernels), {SIM_KERNELS: block})
    finally:
        meta = vars(view).get("meta")  # built for this op only (if at all): not kept by op_meta's cache
        if meta is not None:
            forget(meta)


def _render_op_outputs(p: Plan, path: Path, view: OpView) -> None:
    spec, layout, products = view.spec, p.layout, view.products
    source = _source_of(path, p.specs_dir)
    meta = view.meta
    op = spec.snake_name
    common = {
        "spec": spec,
        "op": op,
        "meta": meta,
        "package": layout.package,
        "products": products,
        "binding_keywords": names.BINDING_KEYWORDS,
        "reference_keywords": names.REFERENCE_KEYWORDS,
        "tier_note": None if spec.computes else upgrade_hint(spec.name),
    }
    p.add(
        layout.module("meta", op),
        render.render("meta.py.j2", header=_header("metadata", source, "meta.py.j2"), **common),
    )
    p.add(
        layout.module("ops", op),
        render.render(
            "binding.py.j2",
            header=_header("binding", source, "binding.py.j2"),
            doc=view.docs.binding,
            **common,
        ),
    )
    _add_ffi_module(p, layout, source, view)
    if spec.computes:  # a binding-tier op has no numerics, so no reference module
        _add_reference(p, layout, source, view, common)
    _add_tests_and_page(p, layout, source, view, common)


def _add_ffi_module(p: Plan, layout: Layout, source: str, view: OpView) -> None:
    op, cdef = view.spec.snake_name, view.meta["cdef"]
    module = ffi_modules.module_name(layout.package, op)
    p.add(
        layout.module("ffi", op),
        _render_ffi_module(
            source,
            f"The C prototypes of {view.spec.name}, on top of the runtime's declarations.",
            cdef,
            ffi_modules.emit(cdef, module, _runtime_header(p.specs_dir)),
        ),
    )


def _render_ffi_module(source: str, doc: str, cdef: str, emitted: str) -> str:
    header = _header("cffi declarations", source, "ffi_module.py.j2")
    return render.render("ffi_module.py.j2", header=header, doc=doc, cdef=cdef, emitted=emitted)


def _runtime_header(specs_dir: Path) -> str:
    """generated/c/acl_runtime.h's text for the ABI table of `specs_dir` (its own, else the
    built-in one): rendered once per table text, however many specs folders share it."""
    from .yamlio import read_text

    path = table_path(specs_dir, "abi.yaml")
    return _rendered_runtime_header(path, read_text(path))


@lru_cache(maxsize=4)
def _rendered_runtime_header(path: Path, text: str) -> str:
    from .yamlio import parse_yaml

    abi = abi_model.abi_from_data(*parse_yaml(text, path), path)
    return render.render(
        "acl_runtime.h.j2", header=_header("C declarations", "specs/abi.yaml", "acl_runtime.h.j2"), abi=abi
    )


def _add_reference(p: Plan, layout: Layout, source: str, view: OpView, common: dict) -> None:
    meta, op = view.meta, view.spec.snake_name
    p.add(
        layout.module("reference", op),
        render.render(
            "reference.py.j2",
            header=_header("reference", source, "reference.py.j2"),
            bodies=view.bodies,
            forwards=view.forwards,
            oracle_expressions=view.oracle_expressions,
            bounds=meta["formula"]["boundaries"],
            bounds_need_math=any("math." in expr for _, expr in meta["formula"]["boundaries"]),
            **common,
        ),
    )


def _add_tests_and_page(p: Plan, layout: Layout, source: str, view: OpView, common: dict) -> None:
    op = view.spec.snake_name
    p.add(
        f"{layout.tests_dir}/test_{op}.py",
        render.render(
            "test_op.py.j2",
            header=_header("tests", source, "test_op.py.j2"),
            plan=view.test_plan,
            **common,
        ),
    )
    p.add(
        f"{layout.docs_dir}/{op}.md",
        render.render(
            "op.md.j2",
            header=_header("reference page", source, "op.md.j2"),
            doc=view.docs.page,
            **common,
        ),
    )


def _render_indexes(p: Plan, records: list[dict], products: ProductTable, piece) -> None:
    """The index files of every op's records; `piece(index, name)`: the op's piece of a shared
    file (read from the generation cache when it waits there)."""
    from .changes import merge_entries
    from .docs import matrix_of

    layout = p.layout
    ops = [{"snake": r["snake"], "name": r["name"], "summary": r["summary"]} for r in records]
    init_header = _header("package index", "specs/ops/", "package_init.py.j2")
    p.add(
        f"{layout.package_dir}/__init__.py",
        render.render("package_init.py.j2", header=init_header, ops=ops, layout=layout),
    )
    # binding-tier ops have no reference module (aclnngen/core/tiers.py)
    computing = [op for op, r in zip(ops, records) if r.get("computes", True)]
    for kind in ("meta", "ops", "reference", "ffi"):
        listed = computing if kind == "reference" else ops
        p.add(
            f"{layout.package_dir}/{kind}/__init__.py",
            render.render(
                "kind_init.py.j2", header=_header("index", "specs/ops/", "kind_init.py.j2"), ops=listed, kind=kind
            ),
        )
    p.add(
        f"{layout.docs_dir}/index.md",
        render.render(
            "index.md.j2",
            header=_header("support matrix", "specs/ops/", "index.md.j2"),
            matrix=matrix_of([r["support"] for r in records], products),
            ops=ops,
        ),
    )
    p.add(
        f"{layout.package_dir}/c/sim_ops.c",
        _render_sim_entries([r["sim"] for r in records], [r["newest"] for r in records]),
    )
    p.outputs.append(_sim_kernels_output(f"{layout.package_dir}/c/sim_kernels.c", records, piece))
    changes_path = layout.changes_doc or f"{layout.docs_dir}/changes-by-release.md"
    p.add(
        changes_path,
        render.render(
            "changes.md.j2",
            header=_header("change log", "specs/ops/", "changes.md.j2"),
            log=merge_entries([r["changes"] for r in records]),
            docs_rel=posixpath.relpath(layout.docs_dir, posixpath.dirname(changes_path)),
        ),
    )


def _render_sim_ops(views: list[OpView]) -> str:
    return _render_sim_entries([_sim_entry(v) for v in views], [_newest_release(v.spec) for v in views])


def _render_sim_entries(entries: list[str], newest: list[str]) -> str:
    """sim_ops.c from each op's entry points (`_sim_entry`); the simulator reports the newest
    release the ops' specs describe (`newest`, one per op) until told otherwise."""
    from aclnngen.core.releases import CannVersion, simulator_spelling

    release = simulator_spelling(max(newest, key=CannVersion)) if newest else "8.5.0"
    return render.render(
        "sim_ops.c.j2",
        header=_header("simulator entry points", "specs/ops/", "sim_ops.c.j2"),
        entries=entries,
        release=release,
    )


def _sim_entry(view: OpView) -> str:
    """One op's entry points of sim_ops.c (rendered with the op, so a cached op needs no rendering)."""
    return render.render("sim_op_entry.c.j2", op=_sim_op(view))


SIM_KERNELS = "sim_kernels"  # an op's piece of sim_kernels.c: its C block (OpRender.pieces)


def _sim_kernels(view: OpView) -> tuple[dict, str]:
    """One op's compiled kernels (codegen/formula_c.py): the table's rows and the fallback's
    reason as plain data (its record's part), and the C block (its piece of sim_kernels.c)."""
    from . import formula_c

    spec = view.spec
    symbol = f"aclnn{spec.name}"
    if getattr(spec, "formula", None) is None:
        kernel = formula_c.Kernel(symbol, spec.snake_name, reason="the spec has no formula")
    else:
        # a per_channel rule's weight and gradient hold one element per channel (or one)
        channel = {name for r in spec.rules for name in kind_of(r).per_channel_tensors(r)}
        params = [
            formula_c.KernelParam(p.name, p.py_name, p.role, p.c_type or "", p.is_list, p.inplace, p.name in channel)
            for p in spec.parameters
        ]
        kernel = formula_c.kernel_for(symbol, spec.snake_name, view.program, params)
    block = render.render("sim_kernel_op.c.j2", kernel=kernel)
    rows = [(symbol, v.storage, v.compute, v.function) for v in kernel.variants]
    return {
        "snake": spec.snake_name,
        "rows": rows,
        "fallback": None if kernel.reason is None else (symbol, kernel.reason),
        "listed": bool(rows or block.strip()),  # in the file's kernels section
    }, block


class _KernelsOf:
    """One op as sim_kernels.c.j2 sees it: its table rows, and its C block read when asked."""

    __slots__ = ("snake", "rows", "_index", "_piece")

    def __init__(self, kernels: dict, index: int, piece):
        self.snake, self.rows, self._index, self._piece = kernels["snake"], kernels["rows"], index, piece

    @property
    def block(self) -> str:
        return self._piece(self._index, SIM_KERNELS)


class _Listed:
    """The ops of sim_kernels.c's kernels section, afresh for each loop of the template: one
    op's block at a time is in memory."""

    def __init__(self, records: list[dict], piece):
        self._records, self._piece = records, piece

    def __iter__(self):
        for index, record in enumerate(self._records):
            if record["kernels"]["listed"]:
                yield _KernelsOf(record["kernels"], index, self._piece)


def _sim_kernels_output(path: str, records: list[dict], piece, sha256: str = "") -> StreamedOutput:
    """sim_kernels.c from the ops' records and pieces (`_sim_kernels`), streamed; `piece(index,
    name)`: op `index`'s piece of a shared file."""
    fallbacks = [r["kernels"]["fallback"] for r in records if r["kernels"]["fallback"] is not None]

    def pieces():
        return render.stream(
            "sim_kernels.c.j2",
            header=_header("simulator kernels", "specs/ops/", "sim_kernels.c.j2"),
            kernels=_Listed(records, piece),
            fallbacks=fallbacks,
        )

    return StreamedOutput(path.removeprefix("./"), pieces, sha256)


def render_sim_kernels(specs_dir: Path | None = None) -> str:
    """The text of sim_kernels.c (the simulator's compiled kernels) for every op of `specs_dir`
    (default: the repository's specs), as the generator renders it; for tests that compile a
    kernel rendered another way. The specs are loaded one at a time."""
    from .loader import load_spec, spec_paths

    specs_dir = Path(specs_dir) if specs_dir is not None else REPO_ROOT / "specs"
    products = load_products(specs_dir)
    records, blocks = [], []
    for path in spec_paths(specs_dir):
        kernels, block = _sim_kernels(OpView(load_spec(path, products).spec, products))
        records.append({"kernels": kernels})
        blocks.append(block)
    return _sim_kernels_output("sim_kernels.c", records, lambda index, name: blocks[index]).content


def render_sim_ops(specs_dir: Path | None = None, ops: tuple[str, ...] | list[str] | None = None) -> str:
    """The text of sim_ops.c (the simulator's op entry points) for the ops `ops` only (snake or
    CANN names, e.g. "swish_backward" or "SwishBackward"; None = every op), with the template the
    generator uses for generated/c/sim_ops.c. For simulated installs that lack some op."""
    specs_dir = Path(specs_dir) if specs_dir is not None else REPO_ROOT / "specs"
    products = load_products(specs_dir)
    loaded = load_all(specs_dir, products)
    if ops is not None:
        wanted = set(ops)
        known = {ls.spec.snake_name for ls in loaded} | {ls.spec.name for ls in loaded}
        unknown = sorted(wanted - known)
        if unknown:
            raise GenerateError(f"unknown op(s) {', '.join(unknown)}; known: {', '.join(sorted(known))}")
        loaded = [ls for ls in loaded if ls.spec.snake_name in wanted or ls.spec.name in wanted]
    return _render_sim_ops([OpView(ls.spec, products) for ls in loaded])


_SIM_KIND = {
    "input": "SIM_ARG_TENSOR_IN",
    "output": "SIM_ARG_TENSOR_OUT",
    "scalar": "SIM_ARG_SCALAR",
    "optional_scalar": "SIM_ARG_SCALAR_OPTIONAL",
    **{("attribute", c): t.sim_kind for c, t in ATTRIBUTE_TYPES.items()},
}


_SIM_LIST_KIND = {
    "input": "SIM_ARG_TENSOR_LIST_IN",
    "optional": "SIM_ARG_TENSOR_LIST_OPTIONAL",
    "output": "SIM_ARG_TENSOR_LIST_OUT",
    "scalar": "SIM_ARG_SCALAR_LIST",
}


def _sim_value(kind: str, p) -> dict:
    """The `handle` and `i` fields of a parameter's sim_arg, as C expressions: values in `i`, a
    double through a pointer (a float widened into a compound literal), handles as they are."""
    if kind in ("SIM_ARG_BOOL", "SIM_ARG_INT64"):
        return {"handle": "NULL", "i": f"(int64_t){p.name}"}
    if kind == "SIM_ARG_DOUBLE":
        return {"handle": f"&(double){{{p.name}}}" if p.c_type == "float" else f"&{p.name}", "i": "0"}
    return {"handle": p.name, "i": "0"}


def _sim_op(view: OpView) -> dict:
    spec = view.spec
    get_workspace_size, launch = view.prototypes
    args = []
    for p in spec.parameters:
        kind = _SIM_KIND[(p.role, p.c_type)] if p.role == "attribute" else _SIM_KIND[p.role]
        if p.optional:
            kind = "SIM_ARG_TENSOR_OUT_OPTIONAL" if p.role == "output" else "SIM_ARG_TENSOR_OPTIONAL"
        if p.inplace:
            kind = "SIM_ARG_TENSOR_INOUT"
        if p.is_list:
            kind = _SIM_LIST_KIND["optional" if p.optional and p.role == "input" else p.role]
        args.append({"kind": kind, "name": p.name, "attr_type": p.c_type, **_sim_value(kind, p)})
    return {
        "name": spec.name,
        "get_workspace_size": get_workspace_size,
        "launch": launch,
        "args": args,
    }


def _add_shared_ffi_modules(p: Plan, runtime_h: str) -> None:
    """generated/ffi/_*.py: the runtime's, the simulator controls', the kernel table's and the call
    plans' helper's declarations (codegen/ffi_modules.py)."""
    controls_h = ffi_modules.sim_controls_header()
    shared = (
        ("_acl_runtime", "specs/abi.yaml", "The CANN runtime and tensor API (c/acl_runtime.h).", runtime_h, None),
        (
            "_sim_controls",
            "runtime/sim/aclsim_controls.h",
            "The simulator's own controls (runtime/sim/aclsim_controls.h).",
            controls_h,
            runtime_h,
        ),
        (
            "_sim_kernels",
            "codegen/ffi_modules.py",
            "The table of the simulator's compiled kernels (c/sim_kernels.c).",
            ffi_modules.KERNEL_TABLE_CDEF,
            None,
        ),
        (
            "_callplan",
            "runtime/callplan_c/callplan.h",
            "The call plans' C helper (runtime/callplan_c/callplan.h).",
            ffi_modules.callplan_header(),
            None,
        ),
    )
    for stem, source, doc, cdef, include in shared:
        module = f"aclnngen.generated.ffi.{stem}"  # ffi_modules.*_MODULE
        p.add(
            f"generated/ffi/{stem}.py", _render_ffi_module(source, doc, cdef, ffi_modules.emit(cdef, module, include))
        )


def _render_shared(p: Plan, records: list[dict], products: ProductTable) -> None:
    abi = abi_model.load_abi(table_path(p.specs_dir, "abi.yaml"))
    source = "specs/abi.yaml"
    runtime_h = _runtime_header(p.specs_dir)
    p.add("generated/c/acl_runtime.h", runtime_h)
    _add_shared_ffi_modules(p, runtime_h)
    p.add(
        "generated/c/acl_status.h",
        render.render("acl_status.h.j2", header=_header("status codes", source, "acl_status.h.j2"), abi=abi),
    )
    p.add("generated/abi.py", render.render("abi.py.j2", header=_header("ABI data", source, "abi.py.j2"), abi=abi))
    p.add(
        "generated/products.py",
        render.render(
            "products.py.j2",
            header=_header("product table", "specs/products.yaml", "products.py.j2"),
            families=[f.model_dump(mode="python") for f in products.families],
        ),
    )
    from .profiles import load_profiles

    profiles: dict = {}
    for name, profile in load_profiles(p.specs_dir, _profiled_specs(p.specs_dir, records, products)):
        profiles.setdefault(name, {}).setdefault(profile.op, {})[profile.cann_version] = profile.as_data()
    p.add(
        "generated/profiles.py",
        render.render(
            "profiles.py.j2",
            header=_header("behaviour profiles", "specs/profiles/", "profiles.py.j2"),
            profiles=profiles,
        ),
    )
    if p.layout.schema_dir:
        from .model import OpSpec
        from .products import ProductTable as Table
        from .schema import json_schema

        for name, model in (("op", OpSpec), ("products", Table)):
            schema = json_schema(model, name, products)
            p.add(
                f"{p.layout.schema_dir}/{name}.schema.json",
                json.dumps(schema, indent=2, sort_keys=True, ensure_ascii=False) + "\n",
            )


def _profiled_specs(specs_dir: Path, records: list[dict], products: ProductTable) -> dict[str, OpSpec]:
    """The specs the behaviour profiles name (checked against them), loaded: only those ops'."""
    from .loader import load_spec
    from .profiles import profile_paths
    from .tables import spec_path

    texts = [path.read_text(encoding="utf-8", errors="replace") for path in profile_paths(specs_dir)]
    wanted = {path.stem for path in profile_paths(specs_dir)}
    wanted |= {r["snake"] for r in records if any(f"op: {r['name']}" in text for text in texts)}
    by_snake = {r["snake"]: r["name"] for r in records}
    found = {}
    for snake in sorted(wanted & set(by_snake)):
        spec = load_spec(spec_path(specs_dir, snake), products).spec
        found[spec.name] = spec
    return found


# --- writing and checking -------------------------------------------------------------------


@dataclass(frozen=True)
class Drift:
    stale: list[str]
    missing: list[str]
    orphaned: list[str]

    @property
    def fresh(self) -> bool:
        return not (self.stale or self.missing or self.orphaned)


# Hand-written files that may sit among generated ones: a package's test directives beside its tests.
HAND_KEPT = ("directives.yaml",)


def _scanned(root: Path, layout: Layout) -> set[str]:
    """Files in the folders the repository layout owns entirely (a stand-alone package owns only what
    its manifest lists, so the user's own files beside it are never orphans)."""
    found: set[str] = set()
    if not layout.shared:
        return found
    for rel in owned_dirs(layout):
        folder = root / rel
        if not folder.is_dir():
            continue
        # The package folder itself is owned only for the files directly in it.
        pattern = "*" if rel == layout.package_dir.removeprefix("./") else "**/*"
        for path in folder.glob(pattern):
            if (
                path.is_file()
                and "__pycache__" not in path.parts
                and path.suffix != ".pyc"
                and not is_temporary(path.name)
                and path.name not in HAND_KEPT
            ):
                found.add(path.relative_to(root).as_posix())
    return found


def _existing(root: Path, layout: Layout) -> set[str]:
    manifest = read_manifest(root, layout.manifest) if root.is_dir() else None
    listed = {rel for rel in (manifest.files if manifest else ()) if (root / rel).is_file()}
    return _scanned(root, layout) | listed


def compare(outputs: list[Output], root: Path, layout: Layout, *, partial: bool = False) -> Drift:
    stale, missing = [], []
    folder = Folder(root)
    for out in outputs:
        if not root.is_dir():
            missing.append(out.path)
        elif out.sha256:  # judged by digest, read in chunks (a shared file may be big)
            current = folder.digest(out.path)
            if current is None:
                missing.append(out.path)
            elif current != out.sha256:
                stale.append(out.path)
        else:
            current = folder.read(out.path)
            if current is None:
                missing.append(out.path)
            elif current != out.content.encode("utf-8"):
                stale.append(out.path)
    orphaned = [] if partial else sorted(_existing(root, layout) - {o.path for o in outputs})
    return Drift(stale, missing, orphaned)


def write(
    outputs: list[Output],
    root: Path,
    layout: Layout,
    *,
    partial: bool = False,
    force: bool = False,
    run_key: str | None = None,
) -> tuple[list[str], list[str]]:
    """Write the files whose content changed and remove the manifest's files no spec produces any
    more, by the ownership rules of codegen/writer.py. Returns (written, removed). `run_key`: the
    key of a run that rendered every output (gencache.run_key), remembered with what it left so
    the same run again is answered without rendering."""
    from . import gencache

    grouped = sorted(outputs, key=lambda o: (getattr(o, "group", ""), o.path))
    files = _Encoded({o.path: o for o in grouped if o.path != layout.manifest})
    memo = gencache.load_memo(root) if gencache.enabled() and not force else None
    result = write_owned(root, files, layout.manifest, partial=partial, force=force, memo=memo)
    if memo is not None:
        gencache.save_memo(root, memo, None if partial else run_key)
    return result.written, result.removed


def short_diff(old: str, new: str, path: str, limit: int = 20) -> str:
    lines = list(
        difflib.unified_diff(
            old.splitlines(), new.splitlines(), f"{path} (on disk)", f"{path} (rendered)", lineterm="", n=1
        )
    )
    if len(lines) > limit:
        lines = lines[:limit] + [f"... ({len(lines) - limit} more diff lines)"]
    return "\n".join(lines)
