"""The package structure of docs/architecture.md, checked on the source.

Every module of the project (aclnngen/core/, codegen/, runtime/, evaluate/, verify/, generated/,
audit/) is parsed with `ast`; every import (at the top of a module or inside a function; not those
under `if TYPE_CHECKING:`) is an edge to a module of the project. The edges must not form a circle and must follow the table of
docs/architecture.md, which is read from the page itself, so the rule is written down once.
"""

from __future__ import annotations

import functools

import ast
import re
from dataclasses import dataclass
from pathlib import Path

import pytest
from repo_paths import REPO

ROOTS = {
    "aclnngen/core": "aclnngen.core",
    "codegen": "aclnngen.codegen",
    "runtime": "aclnngen.runtime",
    "evaluate": "aclnngen.evaluate",
    "verify": "aclnngen.verify",
    "generated": "aclnngen.generated",
    "audit": "aclnngen.audit",
}
ARCHITECTURE = REPO / "docs" / "architecture.md"
#: packages whose imports inside functions must say why they are deferred
MARKED_PACKAGES = ("aclnngen.core", "aclnngen.runtime", "aclnngen.evaluate", "aclnngen.verify")
#: the generator proper: codegen/ but the command line, which runs things
GENERATOR, COMMAND_LINE = "aclnngen.codegen", ("aclnngen.codegen.cli", "aclnngen.codegen.commands")
#: what the ground floor must not import, at the top of a module or inside a function
CORE_FORBIDDEN_PROJECT = (
    "aclnngen.codegen",
    "aclnngen.runtime",
    "aclnngen.verify",
    "aclnngen.audit",
    "aclnngen.generated",
)
CORE_HEAVY = (
    "numpy",
    "ml_dtypes",
    "pydantic",
    "cffi",
    "jinja2",
    "torch",
    "scipy",
    "yaml",
    "ruamel",
    "matplotlib",
    "pytest",
    "hypothesis",
)
DEFERRED = re.compile(r"#\s*deferred:\s*\S")


@dataclass(frozen=True)
class Edge:
    source: str  # importing module
    target: str  # imported module of the project
    file: str
    line: int
    deferred: bool  # inside a function body
    marked: bool  # carries a `# deferred:` comment


def project_modules(repo: Path = REPO) -> dict[str, Path]:
    """Dotted module name -> file, for every Python file of the code folders."""
    found: dict[str, Path] = {}
    for folder, package in ROOTS.items():
        for path in sorted((repo / folder).rglob("*.py")):
            parts = path.relative_to(repo / folder).with_suffix("").parts
            if parts[-1] == "__init__":
                parts = parts[:-1]
            found[".".join((package, *parts))] = path
    return found


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imports(tree: ast.AST):
    """(node, inside a function) for every import statement, skipping `if TYPE_CHECKING:` blocks."""

    def visit(node, in_function):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and _is_type_checking(child):
                for other in child.orelse:
                    yield from visit_one(other, in_function)
                continue
            yield from visit_one(child, in_function)

    def visit_one(child, in_function):
        if isinstance(child, (ast.Import, ast.ImportFrom)):
            yield child, in_function
        else:
            inner = in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
            yield from visit(child, inner)

    yield from visit(tree, False)


def _marked(lines: list[str], node: ast.stmt) -> bool:
    """A `# deferred:` comment on the statement's lines or in the comment lines just above it."""
    for text in lines[node.lineno - 1 : node.end_lineno]:
        if DEFERRED.search(text):
            return True
    k = node.lineno - 2
    while k >= 0 and lines[k].strip().startswith("#"):
        if DEFERRED.search(lines[k]):
            return True
        k -= 1
    return False


def import_edges(modules: dict[str, Path], repo: Path = REPO) -> list[Edge]:
    edges = []
    for name, path in modules.items():
        text = path.read_text(encoding="utf-8")
        lines = text.splitlines()
        is_package = path.name == "__init__.py"
        package = name if is_package else name.rpartition(".")[0]
        for node, in_function in _imports(ast.parse(text, filename=str(path))):
            targets = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            else:
                if node.level:
                    base = package.split(".")
                    base = base[: len(base) - (node.level - 1)]
                    module = ".".join(base + ([node.module] if node.module else []))
                else:
                    module = node.module or ""
                for alias in node.names:  # `from pkg import submodule` imports the submodule
                    sub = f"{module}.{alias.name}"
                    targets.append(sub if sub in modules else module)
            for target in targets:
                while target and target not in modules and "." in target:
                    target = target.rpartition(".")[0]  # `import a.b.c` of a non-module name
                if target in modules and target != name:
                    edges.append(
                        Edge(name, target, str(path.relative_to(repo)), node.lineno, in_function, _marked(lines, node))
                    )
    return edges


def _within(module: str, prefixes) -> bool:
    return any(
        module == p or module.startswith(p + ".") for p in ((prefixes,) if isinstance(prefixes, str) else prefixes)
    )


def generator_problems(edges: list[Edge]) -> list[str]:
    """The generator (codegen/ but its command line) imports the ground floor, never the call path
    or the verdict (it stands beside them, not above)."""
    problems = []
    for e in edges:
        if (
            _within(e.source, GENERATOR)
            and not _within(e.source, COMMAND_LINE)
            and _within(e.target, ("aclnngen.runtime", "aclnngen.verify"))
        ):
            problems.append(f"{e.file}:{e.line}: the generator module {e.source} imports {e.target}")
    return problems


def external_imports(modules: dict[str, Path], repo: Path = REPO):
    """(file, line, top-level name) of every absolute import of something outside the project."""
    for name, path in modules.items():
        text = path.read_text(encoding="utf-8")
        for node, _ in _imports(ast.parse(text, filename=str(path))):
            if isinstance(node, ast.ImportFrom) and node.level:
                continue
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
            for full in names:
                if not full.startswith("aclnngen"):
                    yield name, str(path.relative_to(repo)), node.lineno, full.split(".")[0]


def core_problems(modules: dict[str, Path], edges: list[Edge], repo: Path = REPO) -> list[str]:
    """The ground floor imports nothing of the packages above it and nothing heavy (function-level
    imports included)."""
    problems = [
        f"{e.file}:{e.line}: {e.source} (core) imports {e.target}"
        for e in edges
        if _within(e.source, "aclnngen.core") and _within(e.target, CORE_FORBIDDEN_PROJECT)
    ]
    core = {m: p for m, p in modules.items() if _within(m, "aclnngen.core")}
    problems += [
        f"{file}:{line}: {name} (core) imports {top}, which the ground floor must not need"
        for name, file, line, top in external_imports(core, repo)
        if top in CORE_HEAVY
    ]
    return problems


def circles(edges: list[Edge]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each sorted."""
    graph: dict[str, set[str]] = {}
    for e in edges:
        graph.setdefault(e.source, set()).add(e.target)
        graph.setdefault(e.target, set())
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []
    counter = [0]

    def strongconnect(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                strongconnect(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            strongconnect(v)
    return found


@dataclass(frozen=True)
class Layers:
    prefixes: dict[str, str]  # module prefix -> unit (the table row's label)
    allowed: dict[str, set[str]]  # unit -> units it may import

    def unit(self, module: str) -> str | None:
        best = None
        for prefix in self.prefixes:
            if (module == prefix or module.startswith(prefix + ".")) and (best is None or len(prefix) > len(best)):
                best = prefix
        return None if best is None else self.prefixes[best]


def read_layers(text: str) -> Layers:
    """The 'may import' table of docs/architecture.md: | label: `prefix`, ... | `prefix`, ... |"""
    rows = []
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")] if line.lstrip().startswith("|") else []
        if len(cells) == 2 and "`" in cells[0]:
            label = cells[0].split(":", 1)[0].strip()
            rows.append((label, re.findall(r"`([\w.]+)`", cells[0]), re.findall(r"`([\w.]+)`", cells[1])))
    if not rows:
        raise AssertionError("docs/architecture.md has no 'may import' table")
    prefixes = {p: label for label, ps, _ in rows for p in ps}
    allowed = {}
    for label, _, names in rows:
        unknown = [n for n in names if n not in prefixes]
        assert not unknown, f"docs/architecture.md: {label} may import {unknown}, which name no package row"
        allowed[label] = {prefixes[n] for n in names}
    return Layers(prefixes, allowed)


def violations(edges: list[Edge], layers: Layers) -> list[str]:
    problems = []
    for e in edges:
        source, target = layers.unit(e.source), layers.unit(e.target)
        if source is None:
            problems.append(f"{e.file}:{e.line}: {e.source} belongs to no package of the table")
        elif target is None or target not in layers.allowed[source]:
            problems.append(
                f"{e.file}:{e.line}: {e.source} ({source}) imports {e.target} ({target}), "
                "which docs/architecture.md does not allow"
            )
    return problems


def unmarked(edges: list[Edge]) -> list[str]:
    return [
        f"{e.file}:{e.line}: {e.source} imports {e.target} inside a function without a '# deferred:' reason"
        for e in edges
        if e.deferred and not e.marked and e.source.startswith(MARKED_PACKAGES)
    ]


@pytest.fixture(scope="module")
def edges():
    return import_edges(project_modules())


@pytest.fixture(scope="module")
def layers():
    return read_layers(ARCHITECTURE.read_text(encoding="utf-8"))


def test_the_walk_sees_every_package_and_function_level_imports(edges):
    sources = {e.source for e in edges}
    for package in (
        "aclnngen.codegen",
        "aclnngen.runtime",
        "aclnngen.runtime.sim",
        "aclnngen.evaluate",
        "aclnngen.verify",
        "aclnngen.generated.ops",
        "aclnngen.generated.reference",
        "aclnngen.audit",
    ):
        assert any(s.startswith(package + ".") for s in sources), package
    assert any(e.deferred for e in edges), "no import inside a function was seen"


def test_the_generator_imports_core_and_never_the_runtime_or_the_verdict(edges):
    assert generator_problems(edges) == []
    # it stands on the ground floor: the model, the planner, the docs and the release logic use it
    users = {e.source for e in edges if _within(e.target, "aclnngen.core") and _within(e.source, GENERATOR)}
    assert {
        "aclnngen.codegen.model",
        "aclnngen.codegen.testplan",
        "aclnngen.codegen.docs",
        "aclnngen.codegen.releases",
    } <= users, users


def test_core_imports_nothing_above_it_and_nothing_heavy(edges):
    modules = project_modules()
    assert any(_within(m, "aclnngen.core") for m in modules)
    assert core_problems(modules, edges) == []


def test_core_imports_without_numpy_or_the_heavy_libraries():
    modules = _modules_under("aclnngen.core")
    assert "aclnngen.core.planning" in modules
    proc = _import_with_blocked(modules, CORE_HEAVY)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == f"imported {len(modules)} modules;", proc.stdout


def test_no_import_circle(edges):
    assert circles(edges) == []


def test_imports_follow_the_architecture_table(edges, layers):
    assert violations(edges, layers) == []


def test_imports_inside_functions_say_why(edges):
    assert unmarked(edges) == []


# --- the checks themselves catch what they are for -----------------------------------------------


def _tree(tmp_path: Path, files: dict[str, str]) -> list[Edge]:
    for rel, text in files.items():
        path = tmp_path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return import_edges(project_modules(tmp_path), tmp_path)


def test_a_circle_through_a_function_level_import_is_found(tmp_path):
    edges = _tree(
        tmp_path,
        {
            "runtime/__init__.py": "",
            "runtime/arrays.py": "from . import session\n",
            "runtime/session.py": "def f():\n    from .arrays import DeviceArray  # deferred: no good reason\n",
        },
    )
    assert circles(edges) == [["aclnngen.runtime.arrays", "aclnngen.runtime.session"]]


def test_type_checking_imports_are_not_edges(tmp_path):
    edges = _tree(
        tmp_path,
        {
            "codegen/__init__.py": "",
            "codegen/model.py": "from .consistency import check\n",
            "codegen/consistency.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .model import OpSpec\n",
        },
    )
    assert circles(edges) == []
    assert [(e.source, e.target) for e in edges] == [("aclnngen.codegen.model", "aclnngen.codegen.consistency")]


def test_the_call_path_importing_the_simulator_or_the_verdict_is_refused(tmp_path, layers):
    edges = _tree(
        tmp_path,
        {
            "runtime/__init__.py": "",
            "runtime/call.py": "from .sim import kernels\n",
            "runtime/session.py": "def f():\n    from aclnngen.verify import opcheck  # deferred: weight\n",
            "runtime/sim/__init__.py": "",
            "runtime/sim/kernels.py": "",
            "verify/__init__.py": "",
            "verify/opcheck.py": "from aclnngen.runtime import call\n",
            "codegen/__init__.py": "",
            "codegen/x.py": "from aclnngen.generated.ops import y\n",
            "generated/__init__.py": "",
            "generated/ops/__init__.py": "",
            "generated/ops/y.py": "",
        },
    )
    found = violations(edges, layers)
    assert len(found) == 3, found
    assert any("runtime/call.py:1" in p and "aclnngen.runtime.sim.kernels" in p for p in found)
    assert any("runtime/session.py:2" in p and "aclnngen.verify.opcheck" in p for p in found)
    assert any("codegen/x.py:1" in p for p in found)


def test_a_generator_module_importing_the_runtime_in_a_function_is_refused(tmp_path):
    edges = _tree(
        tmp_path,
        {
            "codegen/__init__.py": "",
            "codegen/docs.py": "from aclnngen.core import rules\n"
            "def f():\n    from aclnngen.runtime.validation import supported_dtypes\n",
            "codegen/formula.py": "def g():\n    from aclnngen.verify import numerics\n",
            "codegen/commands/__init__.py": "",
            "codegen/commands/run.py": "from aclnngen.verify import cases\n",  # the command line may
            "aclnngen/core/__init__.py": "",
            "aclnngen/core/rules.py": "",
            "runtime/__init__.py": "",
            "runtime/validation.py": "",
            "verify/__init__.py": "",
            "verify/numerics.py": "",
            "verify/cases.py": "",
        },
    )
    assert generator_problems(edges) == [
        "codegen/docs.py:3: the generator module aclnngen.codegen.docs imports aclnngen.runtime.validation",
        "codegen/formula.py:2: the generator module aclnngen.codegen.formula imports aclnngen.verify.numerics",
    ]


def test_core_importing_upwards_or_something_heavy_is_refused(tmp_path, layers):
    files = {
        "aclnngen/core/__init__.py": "",
        "aclnngen/core/rules.py": "import math\nfrom . import dtypes\n"
        "def f():\n    import numpy as np  # deferred: lazily\n",
        "aclnngen/core/dtypes.py": "def g():\n    from aclnngen.runtime.shapes import NUMPY_DTYPES\n",
        "aclnngen/core/planning.py": "from pydantic import BaseModel\n",
        "runtime/__init__.py": "",
        "runtime/shapes.py": "",
    }
    edges = _tree(tmp_path, files)
    modules = project_modules(tmp_path)
    assert sorted(core_problems(modules, edges, tmp_path)) == [
        "aclnngen/core/dtypes.py:2: aclnngen.core.dtypes (core) imports aclnngen.runtime.shapes",
        "aclnngen/core/planning.py:1: aclnngen.core.planning (core) imports pydantic, which the ground floor must not need",
        "aclnngen/core/rules.py:4: aclnngen.core.rules (core) imports numpy, which the ground floor must not need",
    ]
    # and the table says the same about the upward edge
    assert [p for p in violations(edges, layers) if "core" in p] == [
        "aclnngen/core/dtypes.py:2: aclnngen.core.dtypes (ground floor) imports aclnngen.runtime.shapes "
        "(call path), which docs/architecture.md does not allow"
    ]


def test_an_unexplained_function_level_import_is_reported(tmp_path):
    edges = _tree(
        tmp_path,
        {
            "runtime/__init__.py": "",
            "runtime/a.py": "def f():\n    from . import b\n",
            "runtime/b.py": "def g():\n    # deferred: keeps torch off the import path\n    from . import a\n",
        },
    )
    assert unmarked(edges) == [
        "runtime/a.py:2: aclnngen.runtime.a imports aclnngen.runtime.b inside a function without a '# deferred:' reason"
    ]


# --- the call path needs no test, oracle or plotting libraries ---------------------------------------

_BLOCKER = """
import importlib, sys

BLOCKED = {blocked!r}


class Blocked:
    \"\"\"A meta-path finder that refuses the blocked distributions, as if they were not installed.\"\"\"

    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in BLOCKED:
            raise ImportError(f"{{name}} is blocked in this interpreter")
        return None


sys.meta_path.insert(0, Blocked())
for name in {modules!r}:
    importlib.import_module(name)
loaded = sorted(m for m in sys.modules if m.split(".")[0] in BLOCKED)
assert not loaded, loaded
print("imported", len({modules!r}), "modules;", " ".join(sorted(m for m in sys.modules if m.startswith("aclnngen.runtime.sim") or m.startswith("aclnngen.verify"))))
"""

HEAVY = ("pytest", "_pytest", "hypothesis", "torch", "matplotlib")


def _import_with_blocked(modules: list[str], blocked: tuple[str, ...]):
    import subprocess
    import sys

    code = _BLOCKER.format(blocked=sorted(blocked), modules=modules)
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)


def _modules_under(prefix: str, but_not: str | None = None) -> list[str]:
    return [
        m
        for m in project_modules()
        if (m == prefix or m.startswith(prefix + "."))
        and not (but_not and (m == but_not or m.startswith(but_not + ".")))
    ]


def test_the_call_path_and_the_bindings_import_without_test_or_oracle_libraries():
    modules = _modules_under("aclnngen.runtime", but_not="aclnngen.runtime.sim") + _modules_under(
        "aclnngen.generated.ops"
    )
    assert "aclnngen.runtime.call" in modules and len(_modules_under("aclnngen.generated.ops")) > 1
    proc = _import_with_blocked(modules, HEAVY + ("scipy",))
    assert proc.returncode == 0, proc.stderr
    # nothing of the simulator or the verdict came along
    assert proc.stdout.strip() == f"imported {len(modules)} modules;", proc.stdout


def test_the_simulator_imports_without_test_or_oracle_libraries():
    proc = _import_with_blocked(_modules_under("aclnngen.runtime.sim"), HEAVY)
    assert proc.returncode == 0, proc.stderr


def test_the_blocker_blocks():
    proc = _import_with_blocked(["aclnngen.verify.pytest_plugin"], HEAVY)
    assert proc.returncode != 0 and "pytest is blocked in this interpreter" in proc.stderr


# --- the simulator's C: calls between its files go one way ------------------------------------------
#
# The C files of the simulator (runtime/sim/*.c, and the generated op entry points in generated/c/)
# are scanned, not compiled: comments, string and character literals and preprocessor lines are
# dropped; a name followed by a parameter list and a `{` at file level is a function definition;
# every other name inside braces is a use. A file that uses a function defined in another file
# (and not in itself: a weak default counts as the file's own) depends on that file. The
# dependencies must not form a circle: sim_state.c at the bottom, sim_runtime.c at the top.

C_DIRS = (REPO / "runtime" / "sim", REPO / "generated" / "c")

_C_TOKEN = re.compile(
    r"/\*.*?(?:\*/|\Z)|//[^\n]*|\"(?:\\.|[^\"\\\n])*\"|'(?:\\.|[^'\\\n])*'"
    r"|^[ \t]*\#(?:\\\n|[^\n])*|[A-Za-z_]\w*|->|[{}();=.]|\S",
    re.S | re.M,
)
_C_KEYWORDS = frozenset(
    {
        "if",
        "while",
        "for",
        "switch",
        "return",
        "sizeof",
        "do",
        "else",
        "case",
        "__attribute__",
        "_Alignof",
        "_Static_assert",
        "defined",
    }
)
_NOT_A_FUNCTION_AFTER = frozenset({"struct", "union", "enum", ".", "->"})


@dataclass(frozen=True)
class CUse:
    source: str  # file that uses the function
    target: str  # file that defines it
    caller: str  # the function (or "(file scope)") the use is in
    name: str
    line: int


def scan_c(text: str) -> tuple[dict[str, int], list[tuple[str, str, int]]]:
    """(function name -> line of its definition, [(enclosing function, name used, line)])."""
    definitions: dict[str, int] = {}
    uses: list[tuple[str, str, int]] = []
    depth = paren = 0
    last_name = candidate = defined = None
    current = "(file scope)"
    previous = ""
    line, counted = 1, 0  # the line of the token, counted on as the scan goes (linear in the text)
    for match in _C_TOKEN.finditer(text):
        token = match.group()
        line += text.count("\n", counted, match.start())
        counted = match.start()
        if token.startswith(("/*", "//", '"', "'")) or token.lstrip().startswith("#"):
            continue
        word = token[0].isalpha() or token[0] == "_"
        if depth == 0:
            if token == "(":
                if paren == 0:
                    candidate = last_name
                paren += 1
            elif token == ")":
                paren = max(paren - 1, 0)
                if paren == 0:
                    defined = candidate
            elif token == "{":
                if paren == 0 and defined and defined not in _C_KEYWORDS:
                    current = defined
                    definitions[defined] = line
                depth = 1
                defined = None
            elif token in (";", "="):
                defined = None
            elif word and paren == 0:
                last_name = token
        elif token == "{":
            depth += 1
        elif token == "}":
            depth -= 1
            if depth == 0:
                current = "(file scope)"
        elif word and previous not in _NOT_A_FUNCTION_AFTER:
            uses.append((current, token, line))
        previous = token
    return definitions, uses


def c_uses(files: list[Path]) -> list[CUse]:
    """Every use of a function that another of `files` defines, by file name."""
    scanned = {path.name: scan_c(path.read_text(encoding="utf-8")) for path in files}
    owners: dict[str, set[str]] = {}
    for name, (definitions, _) in scanned.items():
        for function in definitions:
            owners.setdefault(function, set()).add(name)
    found = []
    for name, (definitions, uses) in scanned.items():
        for caller, used, line in uses:
            if used in definitions:
                continue
            for owner in sorted(owners.get(used, ())):
                found.append(CUse(name, owner, caller, used, line))
    return found


def _simulator_c_files() -> list[Path]:
    return sorted(p for d in C_DIRS for p in d.glob("*.c"))


@functools.cache
def _simulator_c_uses() -> tuple[CUse, ...]:
    """c_uses of the simulator's C files, scanned once for the tests that read them."""
    return tuple(c_uses(_simulator_c_files()))


def _circle_edges(uses: list[CUse], found: list[list[str]]) -> list[str]:
    """One line per file-to-file dependency inside a circle, naming the first uses."""
    by_edge: dict[tuple[str, str], list[CUse]] = {}
    for u in uses:
        if any(u.source in c and u.target in c for c in found):
            by_edge.setdefault((u.source, u.target), []).append(u)
    return [
        f"{a} -> {b}: " + ", ".join(sorted({f"{u.caller} uses {u.name} (line {u.line})" for u in us})[:3])
        for (a, b), us in sorted(by_edge.items())
    ]


def test_calls_between_the_simulators_c_files_go_one_way():
    uses = list(_simulator_c_uses())
    found = circles(uses)
    assert found == [], "\n".join(_circle_edges(uses, found))
    # the bottom layer calls no other file
    assert [u for u in uses if u.source == "sim_state.c"] == []


def test_the_c_scan_sees_definitions_and_uses_across_files():
    files = _simulator_c_files()
    assert {"sim_state.c", "sim_meta.c", "sim_op.c", "sim_runtime.c", "sim_ops.c"} <= {p.name for p in files}
    edges = {(u.source, u.target) for u in _simulator_c_uses()}
    # each layer above the bottom is seen calling down, and the op entry points call the protocol
    assert {
        ("sim_meta.c", "sim_state.c"),
        ("sim_op.c", "sim_state.c"),
        ("sim_runtime.c", "sim_state.c"),
        ("sim_runtime.c", "sim_op.c"),
        ("sim_runtime.c", "sim_meta.c"),
        ("sim_ops.c", "sim_op.c"),
    } <= edges
    definitions, _ = scan_c((REPO / "runtime" / "sim" / "sim_op.c").read_text(encoding="utf-8"))
    assert {"sim_prepare", "sim_launch", "sim_drain_locked", "sim_executor_free_locked"} <= set(definitions)


def test_a_call_up_from_the_bottom_c_file_is_a_circle(tmp_path):
    # the layout before: aclsim_reset in sim_state.c called up into three files that call it
    files = {
        "sim_state.c": """
            /* aclsim_reset(void) { in a comment is no definition */
            #define SIM_LOCK() pthread_mutex_lock(&sim_mu)
            struct sim_state sim_g = { .initialized = 0 };
            void sim_err(const char *fmt, ...) { (void)fmt; }
            __attribute__((weak)) const char *aclsim_specs_release(void) { return "x"; }
            int aclsim_reset(void)
            {
                sim_discard_all_launches_locked();
                sim_free_handle_locked(0, 1);
                memset(p, 0xDD, sim_poison_bytes(16));
                return 0;
            }
        """,
        "sim_op.c": """
            struct sim_launch { int x; };
            void sim_discard_all_launches_locked(void) { sim_err("%s", "x"); }
            aclnnStatus sim_launch(const char *op,
                                   void *workspace)
            {
                return 0;
            }
        """,
        "sim_meta.c": 'void sim_free_handle_locked(void *p, int t) { sim_err("sim_poison_bytes("); }\n',
        "sim_runtime.c": """
            size_t sim_poison_bytes(size_t size) { return size; }
            int aclrtFree(void *p) { const struct sim_launch *who = 0; sim_err("busy"); return 0; }
        """,
    }
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    paths = sorted(tmp_path.glob("*.c"))
    uses = c_uses(paths)
    assert circles(uses) == [["sim_meta.c", "sim_op.c", "sim_runtime.c", "sim_state.c"]]
    assert sorted((u.caller, u.name, u.target) for u in uses if u.source == "sim_state.c") == [
        ("aclsim_reset", "sim_discard_all_launches_locked", "sim_op.c"),
        ("aclsim_reset", "sim_free_handle_locked", "sim_meta.c"),
        ("aclsim_reset", "sim_poison_bytes", "sim_runtime.c"),
    ]
    # `struct sim_launch` names a type, not the function; a string naming a function is no call
    assert not any(u.name == "sim_launch" for u in uses)
    assert not any(u.source == "sim_meta.c" and u.name == "sim_poison_bytes" for u in uses)
    # moving aclsim_reset to the top file breaks the circle
    bottom, reset = files["sim_state.c"].split("int aclsim_reset")
    (tmp_path / "sim_state.c").write_text(bottom)
    (tmp_path / "sim_runtime.c").write_text(files["sim_runtime.c"] + "int aclsim_reset" + reset)
    assert circles(c_uses(paths)) == []
    assert {(u.source, u.target) for u in c_uses(paths) if u.name == "sim_poison_bytes"} == set()


# --- rule kinds: one place each ----------------------------------------------------------------
# A rule kind's facets live in its class (aclnngen/core/kinds); a module elsewhere that compares
# against a kind's name, or keys a dict by one, is a facet in the wrong place. The planner's case
# names "broadcast" and "empty" spell like kinds: a comparison with its `case` variable is not one.


def _kind_constants(node: ast.AST, names: set[str]):
    if isinstance(node, ast.Constant) and node.value in names:
        yield node.value
    elif isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        for element in node.elts:
            yield from _kind_constants(element, names)


def kind_name_uses(modules: dict[str, Path], names: set[str]) -> list[str]:
    found = []
    for module, path in sorted(modules.items()):
        if module == "aclnngen.core.kinds" or module.startswith("aclnngen.core.kinds."):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Compare):
                operands = [node.left, *node.comparators]
                if any(isinstance(o, ast.Name) and o.id == "case" for o in operands):
                    continue
                hits = [c for o in operands for c in _kind_constants(o, names)]
            elif isinstance(node, ast.Dict):
                hits = [c for k in node.keys if k is not None for c in _kind_constants(k, names)]
            else:
                continue
            found += [f"{module}:{node.lineno} compares with or keys by rule kind {c!r}" for c in hits]
    return found


def test_no_module_outside_core_kinds_branches_on_a_rule_kind_name():
    from aclnngen.core.kinds import KIND_NAMES

    problems = kind_name_uses(project_modules(), set(KIND_NAMES))
    assert not problems, "\n".join(problems)


def test_a_branch_on_a_kind_name_is_found(tmp_path):
    files = {
        "codegen/bad.py": 'def f(rule):\n    return rule["kind"] == "same_shape" or {"max_rank": 1}\n',
        "codegen/fine.py": 'def g(case):\n    return case == "empty"\n',
    }
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text, encoding="utf-8")
    modules = {
        "aclnngen.codegen.bad": tmp_path / "codegen/bad.py",
        "aclnngen.codegen.fine": tmp_path / "codegen/fine.py",
    }
    found = kind_name_uses(modules, {"same_shape", "max_rank", "empty"})
    assert [f.split(" rule kind ")[1] for f in found] == ["'same_shape'", "'max_rank'"]
