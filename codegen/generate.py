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
import json
import posixpath
from dataclasses import dataclass, field
from pathlib import Path

from . import abi as abi_model
from . import metadata, names, render, testplan
from .errors import GenerateError
from .loader import REPO_ROOT, LoadedSpec, load_all, load_products
from .model import OpSpec
from .products import ProductTable
from .writer import Folder, Manifest, is_temporary, read_manifest, write_owned
from .tables import table_path

GENERATOR = "aclnngen generate"
MANIFEST_NAME = "aclnngen-manifest.json"


@dataclass(frozen=True)
class Output:
    path: str  # relative to the output root, POSIX separators
    content: str


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
    dirs = [f"{layout.package_dir}/{k}" for k in ("meta", "ops", "reference", "c")]
    dirs += [layout.tests_dir, layout.docs_dir, layout.package_dir]
    if layout.schema_dir:
        dirs.append(layout.schema_dir)
    return [d.removeprefix("./") for d in dirs]


def _header(kind: str, source: str, template: str) -> dict:
    return {"source": source, "template": template, "generator": GENERATOR, "kind": kind}


def _spec_source(loaded: LoadedSpec, specs_dir: Path) -> str:
    try:
        return loaded.path.resolve().relative_to(specs_dir.resolve().parent).as_posix()
    except ValueError:
        return f"{specs_dir.name}/ops/{loaded.path.name}"


@dataclass
class Plan:
    specs_dir: Path
    layout: Layout
    only: tuple[str, ...] = ()
    outputs: list[Output] = field(default_factory=list)

    def add(self, path: str, content: str) -> None:
        self.outputs.append(Output(path.removeprefix("./"), content))


def plan(specs_dir: Path, layout: Layout = REPO_LAYOUT, only: tuple[str, ...] = (), release: str | None = None) -> list[Output]:
    products = load_products(specs_dir)
    loaded = load_all(specs_dir, products)
    if release is not None:  # only the facts that hold at that release (generate --cann)
        from dataclasses import replace

        from .atrelease import at_release

        loaded = [replace(ls, spec=at_release(ls.spec, release, products.ids)) for ls in loaded]
    if not loaded:
        raise GenerateError(f"no op specs found under {specs_dir / 'ops'}")
    names = {ls.spec.snake_name for ls in loaded}
    unknown = sorted(set(only) - names - {ls.spec.name for ls in loaded})
    if unknown:
        raise GenerateError(f"unknown op(s) {', '.join(unknown)}; known: {', '.join(sorted(names))}")
    p = Plan(specs_dir, layout, only)
    selected = [ls for ls in loaded if not only or ls.spec.snake_name in only or ls.spec.name in only]
    for ls in selected:
        _render_op(p, ls, products)
    _render_indexes(p, loaded, products)
    if layout.shared:
        _render_shared(p, loaded, products)
    outputs = sorted(p.outputs, key=lambda o: o.path)
    if not only:  # a partial run's manifest is merged with the one on disk by the writer
        outputs.append(Output(layout.manifest, Manifest.of({o.path: o.content.encode("utf-8") for o in outputs}).text()))
    return outputs


def _render_op(p: Plan, ls: LoadedSpec, products: ProductTable) -> None:
    spec, layout = ls.spec, p.layout
    source = _spec_source(ls, p.specs_dir)
    meta = metadata.build(spec)
    op = spec.snake_name
    common = {
        "spec": spec,
        "op": op,
        "meta": meta,
        "package": layout.package,
        "products": products,
        "binding_keywords": names.BINDING_KEYWORDS,
        "reference_keywords": names.REFERENCE_KEYWORDS,
    }
    p.add(layout.module("meta", op), render.render("meta.py.j2", header=_header("metadata", source, "meta.py.j2"), **common))
    p.add(
        layout.module("ops", op),
        render.render("binding.py.j2", header=_header("binding", source, "binding.py.j2"), doc=_binding_doc(spec, products), **common),
    )
    p.add(
        layout.module("reference", op),
        render.render(
            "reference.py.j2",
            header=_header("reference", source, "reference.py.j2"),
            bodies=_bodies(spec),
            forwards=_forwards(spec),
            bounds=meta["formula"]["boundaries"],
            bounds_need_math=any("math." in expr for _, expr in meta["formula"]["boundaries"]),
            **common,
        ),
    )
    p.add(
        f"{layout.tests_dir}/test_{op}.py",
        render.render("test_op.py.j2", header=_header("tests", source, "test_op.py.j2"), plan=testplan.build(spec, products), **common),
    )
    p.add(
        f"{layout.docs_dir}/{op}.md",
        render.render("op.md.j2", header=_header("reference page", source, "op.md.j2"), doc=_page(spec, products, layout.package), **common),
    )


def _bodies(spec: OpSpec) -> list[dict]:
    """The formula and every defect's claimed or observed formula, as Python function bodies."""
    from . import formula

    bodies = [{"key": "spec", "name": "_spec", "lines": formula.render_program(metadata.program(spec, spec.formula))}]
    for index, defect in enumerate(spec.defects):
        for which in ("claimed", "observed"):
            expr = getattr(defect, which)
            if expr is not None:
                bodies.append(
                    {
                        "key": f"{which}:{index}",
                        "name": f"_{which}_{index}",
                        "lines": formula.render_program(metadata.program(spec, expr)),
                    }
                )
    return bodies


def _forwards(spec: OpSpec) -> list[dict]:
    """Each forward-output input's forward function of `x`, as a Python function body."""
    from . import formula
    from .consistency import forward_program

    return [
        {"key": p.py_name, "name": f"_forward_{i}",
         "lines": formula.render_program(forward_program(spec, p, loc=("parameters", i, "forward")))}
        for i, p in enumerate(spec.parameters)
        if p.forward is not None
    ]


def _binding_doc(spec: OpSpec, products: ProductTable) -> dict:
    from .docs import binding_doc

    return binding_doc(spec, products)


def _page(spec: OpSpec, products: ProductTable, package: str) -> dict:
    from .docs import reference_page

    return reference_page(spec, products, package)


def _render_indexes(p: Plan, loaded: list[LoadedSpec], products: ProductTable) -> None:
    from .docs import support_matrix

    layout = p.layout
    ops = [{"snake": ls.spec.snake_name, "name": ls.spec.name, "summary": ls.spec.summary} for ls in loaded]
    init_header = _header("package index", "specs/ops/", "package_init.py.j2")
    p.add(f"{layout.package_dir}/__init__.py", render.render("package_init.py.j2", header=init_header, ops=ops, layout=layout))
    for kind in ("meta", "ops", "reference"):
        p.add(
            f"{layout.package_dir}/{kind}/__init__.py",
            render.render("kind_init.py.j2", header=_header("index", "specs/ops/", "kind_init.py.j2"), ops=ops, kind=kind),
        )
    p.add(
        f"{layout.docs_dir}/index.md",
        render.render(
            "index.md.j2",
            header=_header("support matrix", "specs/ops/", "index.md.j2"),
            matrix=support_matrix([ls.spec for ls in loaded], products),
            ops=ops,
        ),
    )
    p.add(f"{layout.package_dir}/c/sim_ops.c", _render_sim_ops([ls.spec for ls in loaded]))
    from .changes import change_log

    changes_path = layout.changes_doc or f"{layout.docs_dir}/changes-by-release.md"
    p.add(changes_path, render.render("changes.md.j2", header=_header("change log", "specs/ops/", "changes.md.j2"),
                                      log=change_log([ls.spec for ls in loaded]),
                                      docs_rel=posixpath.relpath(layout.docs_dir, posixpath.dirname(changes_path))))


def _render_sim_ops(specs: list[OpSpec]) -> str:
    return render.render(
        "sim_ops.c.j2",
        header=_header("simulator entry points", "specs/ops/", "sim_ops.c.j2"),
        ops=[_sim_op(spec) for spec in specs],
    )


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
    return _render_sim_ops([ls.spec for ls in loaded])


_SIM_KIND = {
    "input": "SIM_ARG_TENSOR_IN",
    "output": "SIM_ARG_TENSOR_OUT",
    "scalar": "SIM_ARG_SCALAR",
    "optional_scalar": "SIM_ARG_SCALAR_OPTIONAL",
    ("attribute", "bool"): "SIM_ARG_BOOL",
    ("attribute", "int64_t"): "SIM_ARG_INT64",
    ("attribute", "double"): "SIM_ARG_DOUBLE",
    ("attribute", "char*"): "SIM_ARG_STRING",
    ("attribute", "aclIntArray*"): "SIM_ARG_INT_ARRAY",
}


def _sim_op(spec: OpSpec) -> dict:
    from . import cdecl

    args = []
    for p in spec.parameters:
        kind = _SIM_KIND[(p.role, p.c_type)] if p.role == "attribute" else _SIM_KIND[p.role]
        if p.optional:
            kind = "SIM_ARG_TENSOR_OUT_OPTIONAL" if p.role == "output" else "SIM_ARG_TENSOR_OPTIONAL"
        args.append({"kind": kind, "name": p.name, "attr_type": p.c_type})
    return {
        "name": spec.name,
        "get_workspace_size": cdecl.parse_prototype(spec.prototypes.get_workspace_size),
        "launch": cdecl.parse_prototype(spec.prototypes.launch),
        "args": args,
    }


def _render_shared(p: Plan, loaded: list[LoadedSpec], products: ProductTable) -> None:
    abi = abi_model.load_abi(table_path(p.specs_dir, "abi.yaml"))
    source = "specs/abi.yaml"
    p.add(
        "generated/c/acl_runtime.h",
        render.render("acl_runtime.h.j2", header=_header("C declarations", source, "acl_runtime.h.j2"), abi=abi),
    )
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
    for name, profile in load_profiles(p.specs_dir, {ls.spec.name: ls.spec for ls in loaded}):
        profiles.setdefault(name, {}).setdefault(profile.op, {})[profile.cann_version] = profile.model_dump(mode="python")
    p.add(
        "generated/profiles.py",
        render.render("profiles.py.j2", header=_header("behaviour profiles", "specs/profiles/", "profiles.py.j2"), profiles=profiles),
    )
    if p.layout.schema_dir:
        from .model import OpSpec
        from .products import ProductTable as Table
        from .schema import json_schema

        for name, model in (("op", OpSpec), ("products", Table)):
            schema = json_schema(model, name, products)
            p.add(f"{p.layout.schema_dir}/{name}.schema.json", json.dumps(schema, indent=2, sort_keys=True, ensure_ascii=False) + "\n")


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
            if path.is_file() and "__pycache__" not in path.parts and path.suffix != ".pyc" and not is_temporary(path.name) and path.name not in HAND_KEPT:
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
        current = folder.read(out.path) if root.is_dir() else None
        if current is None:
            missing.append(out.path)
        elif current != out.content.encode("utf-8"):
            stale.append(out.path)
    orphaned = [] if partial else sorted(_existing(root, layout) - {o.path for o in outputs})
    return Drift(stale, missing, orphaned)


def write(
    outputs: list[Output], root: Path, layout: Layout, *, partial: bool = False, force: bool = False
) -> tuple[list[str], list[str]]:
    """Write the files whose content changed and remove the manifest's files no spec produces any
    more, by the ownership rules of codegen/writer.py. Returns (written, removed)."""
    files = {o.path: o.content.encode("utf-8") for o in outputs if o.path != layout.manifest}
    result = write_owned(root, files, layout.manifest, partial=partial, force=force)
    return result.written, result.removed


def short_diff(old: str, new: str, path: str, limit: int = 20) -> str:
    lines = list(difflib.unified_diff(old.splitlines(), new.splitlines(), f"{path} (on disk)", f"{path} (rendered)", lineterm="", n=1))
    if len(lines) > limit:
        lines = lines[:limit] + [f"... ({len(lines) - limit} more diff lines)"]
    return "\n".join(lines)
