"""Names are checked, not trusted: one table of reserved names (codegen/names.py) drives validation, and
a spec name that would clash with generated Python or C is rejected with file:line and the table."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import catalog
import pytest

from aclnngen.codegen import names
from aclnngen.codegen.errors import SpecError
from aclnngen.codegen.generate import plan
from aclnngen.codegen.loader import DEFAULT_SPECS_DIR, load_all, load_products, load_spec, spec_paths
from packages import aclnngen

SEED = sorted(spec_paths(DEFAULT_SPECS_DIR))[0]


def _spec_with(tmp_path: Path, pattern: str, replacement: str) -> tuple[Path, int]:
    """A copy of a seed spec with the first line matching `pattern` replaced; (path, line number)."""
    lines = SEED.read_text(encoding="utf-8").splitlines(keepends=True)
    for index, line in enumerate(lines):
        if re.match(pattern, line):
            lines[index] = re.sub(r"(:\s*)\S+", lambda m: m.group(1) + f'"{replacement}"', line, count=1)
            break
    else:  # pragma: no cover - the seed specs all have these keys
        raise AssertionError(f"{pattern} not in {SEED}")
    path = tmp_path / SEED.name
    path.write_text("".join(lines), encoding="utf-8")
    return path, index + 1


def _rejected(path: Path) -> str:
    with pytest.raises(SpecError) as info:
        load_spec(path, load_products())
    return "\n".join(str(p) for p in info.value.problems)


PYTHON_RESERVED = sorted(
    {n for n, _ in names.BINDING_KEYWORDS}
    | {n for n, _ in names.REFERENCE_KEYWORDS}
    | {n for n in names.GENERATED_PYTHON if re.fullmatch(r"[a-z][a-z0-9_]*", n)}
)


@pytest.mark.parametrize("name", PYTHON_RESERVED)
def test_a_py_name_that_generated_python_uses_is_rejected_with_its_line(tmp_path, name):
    path, line = _spec_with(tmp_path, r"\s+py_name:", name)
    message = _rejected(path)
    assert f"{path}:{line}: Python name {name!r} is reserved: it clashes with " in message, message


@pytest.mark.parametrize(
    "name", ["args", "aclTensor", "sim_prepare", "aclnnStatus", "int64_t", "__x", "_Bool", "NULL", "register"]
)
def test_a_c_name_that_the_simulator_or_generated_c_uses_is_rejected(tmp_path, name):
    path, line = _spec_with(tmp_path, r"\s+- name:", name)
    message = _rejected(path)
    assert f"{path}:{line}: C name {name!r} is reserved" in message, message


@pytest.mark.parametrize("name", ["Init", "Finalize", "Index", "Import", "Lambda", "__init__"])
def test_an_op_name_that_collides_with_generated_modules_or_c_is_rejected(tmp_path, name):
    path, line = _spec_with(tmp_path, r"name:", name)
    message = _rejected(path)
    assert f"{path}:{line}: op name {name!r} is reserved" in message, message


def test_the_c_table_is_derived_from_the_sources_and_keeps_locals_out():
    table = names.c_identifiers()
    # file-scope names of the simulator, the template's locals, the ABI's declarations
    assert {"aclTensor", "args", "sim_prepare", "aclnnInit", "aclrtMalloc", "ACL_SUCCESS"} <= table
    # a function's locals and a prototype's parameter names are not file scope
    assert names.file_scope_identifiers("typedef int T; static int f(int out) { int local = out; return local; }") == {
        "typedef",
        "int",
        "T",
        "static",
        "f",
    }
    assert {"A", "B"} <= names.file_scope_identifiers(
        "enum e { A = 1, B }; #define M(x) (x)"
    ) and "x" not in names.file_scope_identifiers("#define M(x) (x)")
    for spec in (ls.spec for ls in load_all(DEFAULT_SPECS_DIR)):  # the seed specs' names are all allowed
        assert all(
            names.c_clash(p.name) is None and names.python_clash(p.py_name, output=p.role == "output") is None
            for p in spec.parameters
        )


def test_every_identifier_of_the_generated_binding_and_reference_is_in_the_table():
    """If a template starts using a new name in a module where a spec's names are identifiers, this
    fails until the name is added to codegen/names.py (so no spec can shadow it)."""
    ops = tuple(catalog.representatives())  # a renamed op's modules differ by its own names alone
    loaded = [load_spec(path, load_products()) for path in catalog.representative_specs()]
    spec_names = set()
    for ls in loaded:
        spec_names |= {p.py_name for p in ls.spec.parameters} | {ls.spec.snake_name} | set(ls.spec.formula.lets)
        for defect in ls.spec.defects:
            for expr in (defect.claimed, defect.observed):
                spec_names |= set(expr.lets) if expr else set()
    unreserved = set()
    read = []
    for out in plan(DEFAULT_SPECS_DIR, only=ops):
        if not re.match(r"generated/(ops|reference)/(?!__init__)", out.path):
            continue
        read.append(out.path)
        for node in ast.walk(ast.parse(out.content)):
            if isinstance(node, ast.Name):
                found = node.id
            elif isinstance(node, ast.arg):
                found = node.arg
            elif isinstance(node, ast.FunctionDef):
                found = node.name
            elif isinstance(node, ast.alias):
                found = (node.asname or node.name).split(".")[0]
            else:
                continue
            if found not in spec_names and not re.fullmatch(r"_(spec|claimed_\d+|observed_\d+)", found):
                if names.python_clash(found) is None:
                    unreserved.add(found)
    assert len(read) == 2 * len(ops), read  # each op's binding and reference
    assert not unreserved, f"generated Python uses names no spec is kept from: {sorted(unreserved)}"


@pytest.mark.parametrize("name", ["class", "pytest", "aclnngen", "math", "numpy", "my-ops"])
def test_a_package_name_generated_code_cannot_import_is_refused(tmp_path, name):
    from aclnngen.codegen.errors import GenerateError
    from aclnngen.codegen.generate import package_layout

    with pytest.raises(GenerateError, match=f"the folder name '{name}' is the package's name, and "):
        package_layout(tmp_path / name)
    assert package_layout(tmp_path / "custom_ops").package == "custom_ops"


def test_a_look_alike_character_in_a_name_is_named_with_its_position(tmp_path):
    spec = sorted((DEFAULT_SPECS_DIR / "ops").glob("*.yaml"))[0]
    first = load_spec(spec, load_products()).spec.parameters[0].name
    text = spec.read_text(encoding="utf-8")
    look_alike = first[:-1] + {"a": "\u0430", "e": "\u0435", "o": "\u043e", "t": "\u0442"}.get(first[-1], "\u0430")
    (tmp_path / spec.name).write_text(text.replace(f"name: {first}\n", f"name: {look_alike}\n", 1), encoding="utf-8")
    done = aclnngen("validate", tmp_path / spec.name)  # the command's answer, in this process (packages.py)
    assert done.returncode == 1, done.stdout + done.stderr
    assert f"U+{ord(look_alike[-1]):04X}" in done.stderr and f"position {len(first)}" in done.stderr, done.stderr
