"""Spec text is data: arbitrary text (quotes, newlines, `*/`, `{{`, NUL, bidi controls...) drawn into
every free-text field of a spec and into the `--specs`/`--out` paths reaches generated code only
inside literals and comments: every generated module compiles, the text never shows up in Python
outside STRING/COMMENT tokens nor in C outside string literals and comments, and the generated C
passes `cc -fsyntax-only` (compiled in one batch at the end)."""

from __future__ import annotations

import copy
import functools
import io
import os
import re
import shutil
import subprocess
import tempfile
import tokenize
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import catalog
from aclnngen.codegen.errors import SpecError
from aclnngen.codegen.generate import package_layout, plan
from aclnngen.codegen.loader import DEFAULT_SPECS_DIR, REPO_ROOT, load_products, load_spec, spec_paths, validate_model
from aclnngen.codegen.model import OpSpec
from aclnngen.codegen.yamlio import LineMap

CI = os.environ.get("CI", "").lower() == "true"
MARK = "QZXJ"  # around every drawn text, so a text that escaped its literal is found in the code
PROBE = 'p"\'\n*/{{x}}\x00\u202e"""'
HOSTILE = [
    '"""',
    "'''",
    '"',
    "'",
    "\\",
    "\n",
    "\r",
    "\r\n",
    "*/",
    "/*",
    "-->",
    "{{",
    "}}",
    "{%",
    "%}",
    "\x00",
    "\u202e",
    "\u2066",
    "\u2028",
    "\x85",
    "#",
    "\t",
    "\\x00",
    "\\N{BULLET}",
    "${x}",
    "`",
    "\ufeff",
]
TEXT = st.one_of(
    st.text(st.characters(blacklist_categories=("Cs",)), max_size=30),
    st.lists(st.sampled_from(HOSTILE), max_size=8).map("".join),
    st.lists(st.one_of(st.sampled_from(HOSTILE), st.text(max_size=3)), max_size=8).map("".join),
)


def _leaves(data, path=()):
    if isinstance(data, dict):
        for key, value in data.items():
            yield from _leaves(value, path + (key,))
    elif isinstance(data, list):
        for index, value in enumerate(data):
            yield from _leaves(value, path + (index,))
    elif isinstance(data, str):
        yield path


def _set(data, path, value):
    for key in path[:-1]:
        data = data[key]
    data[path[-1]] = value


_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_DUMPER = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


def _dump(data) -> str:
    return yaml.dump(data, Dumper=_DUMPER, allow_unicode=False, sort_keys=False, width=10**6)


@functools.lru_cache(maxsize=None)
def _parsed(seed: Path):
    return yaml.load(seed.read_text(encoding="utf-8"), Loader=_LOADER)


def _load(specs_dir: Path, seed: Path, data) -> None:
    (specs_dir / "ops").mkdir(parents=True, exist_ok=True)
    (specs_dir / "ops" / seed.name).write_text(_dump(data), encoding="utf-8")


@functools.lru_cache(maxsize=None)
def _free_text_fields(seed: Path) -> tuple[tuple, ...]:
    """The string fields of `seed` that accept any text (the others are names, enums, versions or
    formulas, which validation checks)."""
    data = _parsed(seed)
    context = {"families": load_products().ids}
    free = []
    for path in _leaves(data):
        probe = copy.deepcopy(data)
        _set(probe, path, PROBE)
        try:
            validate_model(OpSpec, probe, seed, LineMap({}), context)
        except SpecError:
            continue
        free.append(path)
    return tuple(free)


# of each structure its first op's spec: a renamed copy adds no field of another kind
SEEDS = sorted(p for p in spec_paths(DEFAULT_SPECS_DIR) if p.stem in catalog.representatives())


def _path_part(text: str) -> str:
    part = text.replace("/", "").replace("\x00", "")
    part = part if part not in ("", ".", "..") else "x"
    return part.encode("utf-8")[:120].decode("utf-8", "ignore") or "x"


def _outside_python_literals(source: str) -> str:
    kept = []
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type not in (tokenize.STRING, tokenize.COMMENT):
            kept.append(token.string)
    return " ".join(kept)


_C_LITERALS = re.compile(r"/\*.*?\*/|//[^\n]*|\"(?:\\.|[^\"\\\n])*\"|'(?:\\.|[^'\\\n])*'", re.S)


def test_the_fields_under_test_are_free_text():
    fields = {path for seed in SEEDS for path in _free_text_fields(seed)}
    for expected in (("summary",), ("source", "title"), ("formula", "latex")):
        assert expected in fields
    assert any(path[0] == "parameters" and path[-1] == "summary" for path in fields)
    assert any(path[0] == "return_codes" and path[-1] == "condition" for path in fields)


@pytest.mark.slow(reason="plans a whole package per drawn text: 200 examples in CI, about 15 s")
def test_arbitrary_text_in_specs_and_paths_stays_inside_literals(tmp_path):
    c_sources: dict[str, str] = {}
    examples = []

    @settings(max_examples=200 if CI else 60, deadline=None, suppress_health_check=list(HealthCheck))
    @given(seed=st.sampled_from(SEEDS), text=TEXT, specs_name=TEXT, out_name=TEXT)
    @example(
        seed=SEEDS[-1], text='"""\x00\u202e*/{{ 7*7 }}\n#', specs_name="s\n#error injected\n*/ int x;", out_name="o\n"
    )
    def check(seed, text, specs_name, out_name):
        drawn = f"{MARK}{text}{MARK}"
        data = copy.deepcopy(_parsed(seed))
        for path in _free_text_fields(seed):
            _set(data, path, drawn)
        with tempfile.TemporaryDirectory() as tmp:
            specs_dir = Path(tmp) / _path_part(MARK + specs_name + MARK)
            _load(specs_dir, seed, data)
            outputs = plan(specs_dir, package_layout(Path(tmp) / _path_part(out_name) / "pkg"))
        examples.append(1)
        for out in outputs:
            if out.path.endswith(".py"):
                compile(out.content, out.path, "exec")
                assert MARK not in _outside_python_literals(out.content), out.path
            elif out.path.endswith(".c"):
                assert MARK not in _C_LITERALS.sub(" ", out.content), out.path
                c_sources.setdefault(out.content, out.path)
            if out.path.endswith((".py", ".c")):  # invisible characters only as escapes in code
                assert "\x00" not in out.content and "\u202e" not in out.content, out.path

    check()
    assert len(examples) >= (200 if CI else 60) // 2, "too few examples reached the generator"
    cc = shutil.which(os.environ.get("CC", "cc"))
    if cc is None:
        pytest.skip("no C compiler (the simulator needs one): the C syntax check cannot run")
    files = []
    for index, source in enumerate(list(c_sources)[:40]):
        path = tmp_path / f"sim_ops_{index}.c"
        path.write_text(source, encoding="utf-8")
        files.append(str(path))
    include = [
        f"-I{REPO_ROOT / 'runtime' / 'sim'}",
        f"-I{REPO_ROOT / 'generated' / 'c'}",
        '-DACLSIM_ABI_HEADER="acl_runtime.h"',
    ]
    result = subprocess.run(
        [cc, "-fsyntax-only", "-std=c11", "-Wall", "-Werror", *include, *files],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-3000:]


def _seed_with_default() -> tuple[Path, int]:
    """A seed spec with an optional scalar, and the line of its default."""
    for seed in SEEDS:
        lines = seed.read_text(encoding="utf-8").splitlines()
        for index, line in enumerate(lines):
            if line.strip() == "role: optional_scalar":
                below = next(i for i in range(index, len(lines)) if lines[i].strip().startswith("default:"))
                return seed, below + 1
    pytest.skip("no seed spec has an optional scalar")  # pragma: no cover


@pytest.mark.parametrize("default", [".inf", "-.inf", ".nan", '"abc"', "true", "1e400"])
def test_a_default_without_a_python_literal_is_rejected_at_its_line(tmp_path, default):
    seed, line = _seed_with_default()
    lines = seed.read_text(encoding="utf-8").splitlines(keepends=True)
    lines[line - 1] = re.sub(r"default:.*", f"default: {default}", lines[line - 1])
    path = tmp_path / seed.name
    path.write_text("".join(lines), encoding="utf-8")
    with pytest.raises(SpecError) as info:
        load_spec(path, load_products())
    assert str(info.value.problems[0]).startswith(f"{path}:{line}: ") and "default must be" in str(info.value), (
        info.value
    )
