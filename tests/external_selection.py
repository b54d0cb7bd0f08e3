"""A pytest plugin for the nested runs of the external material (tests/e2e/test_fresh_checkout.py):
it keeps the tests that reach tests/external.py, the ones whose skip or failure without the material
the runs check. The others in the same modules neither read the material nor change with it: the
main suite runs them.

A test reaches the material when its function, a fixture it uses, or a function of tests/ that
either refers to (through its module's names, its class or its closure, at any depth) calls
`external.external` by any name, or imports it inside a function. Objects, not names: a helper of
another module imported under another name still counts.
"""

from __future__ import annotations

import dis
import types
from pathlib import Path

import external
from nested_selection import keep_only

TESTS = Path(external.__file__).resolve().parent


def _codes(code: types.CodeType):
    """`code` and the code nested in it (lambdas, inner functions, comprehensions)."""
    yield code
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            yield from _codes(const)


def _imports_external(code: types.CodeType) -> bool:
    """Whether `code` imports tests/external.py itself (an import inside a function)."""
    return any(
        i.opname == "IMPORT_NAME" and i.argval == external.__name__
        for c in _codes(code)
        for i in dis.get_instructions(c)
    )


def _in_tests(function: types.FunctionType) -> bool:
    return Path(function.__code__.co_filename).resolve().is_relative_to(TESTS)


def _content(cell):
    """A closure cell's object; None for a cell not yet filled (reading it raises ValueError)."""
    try:
        return cell.cell_contents
    except ValueError:
        return None


def _unwrapped(function):
    """The test's own function under a decorator's wrapper (functools.wraps, hypothesis' @given)."""
    while True:
        inner = getattr(getattr(function, "hypothesis", None), "inner_test", None) or getattr(
            function, "__wrapped__", None
        )
        if inner is None or inner is function:
            return function
        function = inner


def reaches(function, scope: dict | None = None, seen: set | None = None) -> bool:
    """Whether `function` refers to the external material's resolver, directly or through functions
    of tests/, or imports it (`scope`: further names it may look up, a test class's attributes)."""
    function = _unwrapped(getattr(function, "__func__", function))  # a method
    if not isinstance(function, types.FunctionType):
        return False
    seen = set() if seen is None else seen
    if function in seen:
        return False
    seen.add(function)
    if _imports_external(function.__code__):
        return True
    names = {n for c in _codes(function.__code__) for n in c.co_names}
    if any(function.__globals__.get(n) is external for n in names) and external.external.__name__ in names:
        return True  # module.external(...)
    cells = [_content(c) for c in function.__closure__ or ()]
    for target in [function.__globals__.get(n, (scope or {}).get(n)) for n in names] + cells:
        target = getattr(target, "__func__", target)
        if target is external.external:
            return True
        if isinstance(target, types.FunctionType) and _in_tests(target) and reaches(target, scope, seen):
            return True
    return False


def _needs_material(item) -> bool:
    scope = vars(item.cls) if getattr(item, "cls", None) is not None else None
    fixtures = getattr(item, "_fixtureinfo", None)
    functions = [getattr(item, "function", None)]
    if fixtures is not None:
        functions += [d.func for defs in fixtures.name2fixturedefs.values() for d in defs]
    seen: set = set()
    return any(reaches(f, scope, seen) for f in functions if f is not None)


def pytest_collection_modifyitems(config, items):
    needs = {item.nodeid for item in items if _needs_material(item)}
    keep_only(config, items, needs.__contains__)
