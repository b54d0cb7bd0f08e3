"""Mutation fuzz over the repository's seed specs: keys deleted or duplicated, scalars replaced by
random text, numbers or huge integers, values nested deeply or changed to another type. Validation
and generation answer with the typed SpecError or GenerateError only, within 5 s per example, and
whatever they generate compiles."""

from __future__ import annotations

import atexit
import copy
import functools
import os
import shutil
import tempfile
from pathlib import Path

import yaml
from hypothesis import HealthCheck, given, reject, settings
from hypothesis import strategies as st

from aclnngen.codegen.errors import GenerateError, SpecError
from aclnngen.codegen.generate import package_layout, plan
from aclnngen.codegen.loader import DEFAULT_SPECS_DIR, load_products, load_spec, spec_paths

CI = os.environ.get("CI", "").lower() == "true"
SEEDS = sorted(spec_paths(DEFAULT_SPECS_DIR))
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_DUMPER = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
PARSED = {seed: yaml.load(seed.read_text(encoding="utf-8"), Loader=_LOADER) for seed in SEEDS}

SCALARS = st.one_of(
    st.text(max_size=20),
    st.integers(-(2**70), 2**70),
    st.sampled_from(["__HUGE_INT__", "__DEEP__"]),  # put into the text after dumping (see SENTINELS)
    st.floats(allow_nan=True, allow_infinity=True),
    st.booleans(),
    st.none(),
    st.sampled_from(
        [
            "stream",
            "validate",
            "Init",
            "args",
            "__init__",
            "float16",
            "161002",
            "8.0.0",
            "x ** 2",
            "2**2**2**2**2**2",
            "where(self > 0, grad_output, 0)",
            "input",
            "output",
            "scalar",
            "attribute",
            ".inf",
            "aclTensor",
        ]
    ),
)


# Values too big for PyYAML's own dumper to write: a 5,000-digit integer, a flow sequence 3,000 deep.
SENTINELS = {"__HUGE_INT__": "9" * 5000, "__DEEP__": "[" * 3000 + "]" * 3000}


def _nodes(data, path=()):
    yield path
    if isinstance(data, dict):
        for key, value in data.items():
            yield from _nodes(value, path + (key,))
    elif isinstance(data, list):
        for index, value in enumerate(data):
            yield from _nodes(value, path + (index,))


def _get(data, path):
    for key in path:
        data = data[key]
    return data


def _nest(value, depth: int):
    for _ in range(depth):
        value = [value]
    return value


@st.composite
def mutated(draw):
    seed = draw(st.sampled_from(SEEDS))
    data = copy.deepcopy(PARSED[seed])
    for _ in range(draw(st.integers(1, 3))):
        paths = [p for p in _nodes(data) if p]
        if not paths:
            break
        path = draw(st.sampled_from(paths))
        parent, key = _get(data, path[:-1]), path[-1]
        old = parent[key]
        action = draw(st.sampled_from(["delete", "scalar", "nest", "wrap", "copy", "swap"]))
        if action == "delete":
            del parent[key]
        elif action == "scalar":
            parent[key] = draw(SCALARS)
        elif action == "nest":
            parent[key] = _nest(
                old, draw(st.sampled_from([2, 30, 60]))
            )  # deeper: the __DEEP__ sentinel (PyYAML's dumper recurses)
        elif action == "wrap":
            parent[key] = draw(st.sampled_from([[old], {"value": old}, str(old), [old, old]]))
        elif action == "copy":  # the value of another node
            other = draw(st.sampled_from(paths))
            parent[key] = copy.deepcopy(_get(data, other)) if other[: len(path)] != path else old
        else:  # swap a list's items or a dict's values
            if isinstance(old, list) and len(old) > 1:
                old.reverse()
            elif isinstance(old, dict) and len(old) > 1:
                keys = list(old)
                old[keys[0]], old[keys[-1]] = old[keys[-1]], old[keys[0]]
    try:
        text = yaml.dump(data, Dumper=_DUMPER, sort_keys=False, allow_unicode=True, width=10**6)
    except RecursionError:  # two deep nests stacked: PyYAML's writer cannot emit it, so no file to load
        reject()
    for sentinel, replacement in SENTINELS.items():
        text = text.replace(sentinel, replacement)
    if draw(st.booleans()):  # text-level: duplicate or drop a line (duplicate keys, broken structure)
        lines = text.splitlines(keepends=True)
        index = draw(st.integers(0, len(lines) - 1))
        lines.insert(index, lines[index]) if draw(st.booleans()) else lines.pop(index)
        text = "".join(lines)
    return seed, text


PRODUCTS = load_products()


@functools.lru_cache(maxsize=None)
def _workspace() -> Path:
    """One folder for all examples (creating and removing a folder per example costs more than the example)."""
    folder = Path(tempfile.mkdtemp(prefix="aclnngen-fuzz-"))
    (folder / "specs" / "ops").mkdir(parents=True)
    atexit.register(shutil.rmtree, folder, True)
    return folder


@settings(max_examples=500 if CI else 150, deadline=5000, suppress_health_check=list(HealthCheck))
@given(mutated())
def test_mutated_specs_give_typed_errors_or_code_that_compiles(case):
    seed, text = case
    specs_dir = _workspace() / "specs"
    for old in (specs_dir / "ops").glob("*.yaml"):
        old.unlink()
    path = specs_dir / "ops" / seed.name
    path.write_text(text, encoding="utf-8")
    try:
        load_spec(path, PRODUCTS)
        outputs = plan(specs_dir, package_layout(specs_dir.parent / "pkg"))
    except SpecError as exc:
        assert exc.problems and all(str(p).startswith(f"{path}:") for p in exc.problems), exc
        assert not any("bug in aclnngen" in p.message for p in exc.problems), exc
        return
    except GenerateError:
        return
    for out in outputs:
        if out.path.endswith(".py"):
            compile(out.content, out.path, "exec")
