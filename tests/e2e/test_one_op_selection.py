"""The nested runs of the external material keep one op's tests (tests/one_op_selection.py): of the
items parametrized by op, the first op's stay; items with other parameters, or none, all stay."""

from __future__ import annotations

from types import SimpleNamespace

import one_op_selection
from aclnngen.generated import OPS


def _select(nodeids: list[str]) -> tuple[list[str], list[str]]:
    items = [SimpleNamespace(nodeid=n) for n in nodeids]
    dropped = []
    config = SimpleNamespace(hook=SimpleNamespace(pytest_deselected=lambda items: dropped.extend(items)))
    one_op_selection.pytest_collection_modifyitems(config, items)
    return [i.nodeid for i in items], [i.nodeid for i in dropped]


def test_only_the_first_ops_items_of_an_op_parametrized_test_stay():
    first, *others = OPS
    assert others, "the catalog needs two ops for this test"
    ids = [f"tests/x.py::test_a[{op}]" for op in OPS] + ["tests/x.py::test_b", "tests/x.py::test_c[a file]"]
    kept, dropped = _select(ids)
    assert kept == [f"tests/x.py::test_a[{first}]", "tests/x.py::test_b", "tests/x.py::test_c[a file]"]
    assert dropped == [f"tests/x.py::test_a[{op}]" for op in others]


def test_an_op_whose_name_holds_the_first_ops_is_still_another_op():
    first = OPS[0]
    kept, _ = _select([f"tests/x.py::test_a[{first}]", f"tests/x.py::test_a[{first}-float32]"])
    assert kept == [f"tests/x.py::test_a[{first}]", f"tests/x.py::test_a[{first}-float32]"]
