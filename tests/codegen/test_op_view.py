"""One derived view per op per generate run (codegen/view.py): one `generate` of one op parses
each of its formulas once, builds its META once and enters the page builder (codegen/docs.py) once,
beyond what loading the spec (its validation) does."""

from __future__ import annotations

import collections
import functools
import inspect
import shutil
from pathlib import Path

import catalog
import pytest

from aclnngen.codegen import docs, formula, generate, metadata
from aclnngen.codegen.loader import load_products, load_spec

# what a run derives depends on the spec's structure, not its name: one op per structure (tests/catalog.py)
SPECS = sorted(catalog.representative_specs())


class Spy:
    """Counts the calls of module functions: each formula parsed (by its text), each META built,
    and each entry into a module from outside it (a call while none of its functions runs)."""

    def __init__(self, monkeypatch):
        self.parsed: collections.Counter = collections.Counter()
        self.metas = 0
        self.entered: collections.Counter = collections.Counter()
        self._depth = 0
        parse, build = formula.parse_program, metadata.build

        def parse_program(outputs, *args, **kwargs):
            self.parsed[_formula_key(outputs, kwargs.get("lets", ()))] += 1
            return parse(outputs, *args, **kwargs)

        def build_meta(*args, **kwargs):
            self.metas += 1
            return build(*args, **kwargs)

        monkeypatch.setattr(formula, "parse_program", parse_program)
        monkeypatch.setattr(metadata, "build", build_meta)
        for name, function in inspect.getmembers(docs, inspect.isfunction):
            if function.__module__ == docs.__name__:
                monkeypatch.setattr(docs, name, self._entry(name, function))

    def _entry(self, name, function):
        @functools.wraps(function)
        def wrapper(*args, **kwargs):
            if self._depth == 0:
                self.entered[name] += 1
            self._depth += 1
            try:
                return function(*args, **kwargs)
            finally:
                self._depth -= 1

        return wrapper


def _formula_key(outputs, lets) -> tuple:
    return tuple(sorted(dict(outputs).items())), tuple(sorted(dict(lets or {}).items()))


def _one_op_folder(tmp_path: Path, spec: Path) -> Path:
    specs = tmp_path / "specs"
    (specs / "ops").mkdir(parents=True)
    shutil.copy(spec, specs / "ops" / spec.name)
    return specs


@pytest.mark.parametrize("path", SPECS, ids=lambda p: p.stem)
def test_one_generate_of_one_op_derives_each_thing_once(path, tmp_path, monkeypatch):
    specs = _one_op_folder(tmp_path, path)
    products = load_products(specs)
    layout = generate.package_layout(tmp_path / "pkg")
    spy = Spy(monkeypatch)

    spec = load_spec(specs / "ops" / path.name, products).spec  # what loading alone parses
    loading = collections.Counter(spy.parsed)
    spy.parsed.clear()
    generate.plan(specs, layout, cache=False)  # loads the spec again, then renders

    rendering = spy.parsed - loading
    formulas = [_formula_key(spec.formula.outputs, spec.formula.lets)]
    formulas += [
        _formula_key(e.outputs, e.lets) for d in spec.defects for e in (d.claimed, d.observed) if e is not None
    ]
    assert rendering[formulas[0]] == 1, "the spec's formula"
    assert all(rendering[key] == 1 for key in formulas), rendering
    assert max(rendering.values()) == 1, rendering  # forward functions too
    assert spy.metas == 1
    # the op's docs once; the support matrix (matrix_of) is the run's index page, not the op's
    assert spy.entered == {"op_docs": 1, "matrix_of": 1}


def test_the_simulator_entry_points_alone_build_no_meta_and_no_page(monkeypatch):
    """A view derives a thing when a renderer first reads it: sim_ops.c reads only the prototypes."""
    spy = Spy(monkeypatch)
    spec = load_spec(SPECS[0], load_products()).spec
    text = generate.render_sim_ops(ops=[spec.snake_name])
    assert f"/* aclnn{spec.name} */" in text
    assert spy.metas == 0 and not spy.entered
