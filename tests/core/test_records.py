"""aclnngen/core/records.py: frozen slotted records (core/meta.py's classes) keep the contract of
frozen dataclasses: construction by position or keyword with defaults, typed errors, no
assignment, equality and hash by value, pickling and copying."""

from __future__ import annotations

import copy
import dataclasses
import pickle

import pytest

from aclnngen.core.meta import DTypeRow, Param
from aclnngen.core.records import Record


class Row(Record):
    families: tuple[str, ...]
    since: str | None = None
    until: str | None = None


def test_fields_come_from_the_annotations_in_order_with_their_defaults():
    row = Row(("a2",), until="8.5.0")
    assert (row.families, row.since, row.until) == (("a2",), None, "8.5.0")
    assert Row._fields == ("families", "since", "until") and Row.__slots__ == Row._fields
    assert not hasattr(row, "__dict__")


@pytest.mark.parametrize(
    "args, kwargs, message",
    [
        ((), {}, "missing field 'families'"),
        ((("a2",), None, None, 1), {}, "takes 3 fields"),
        ((("a2",),), {"colour": 1}, "unknown field.*'colour'"),
        ((("a2",),), {"families": ("a3",)}, "given twice.*'families'"),
    ],
)
def test_a_wrong_construction_is_a_type_error_naming_the_field(args, kwargs, message):
    with pytest.raises(TypeError, match=message):
        Row(*args, **kwargs)


def test_frozen_equal_by_value_and_hashable():
    row = Row(("a2",), "8.0.0")
    with pytest.raises(dataclasses.FrozenInstanceError):
        row.since = "8.5.0"
    with pytest.raises(dataclasses.FrozenInstanceError):
        del row.since
    assert row == Row(("a2",), "8.0.0") and row != Row(("a2",)) and hash(row) == hash(Row(("a2",), "8.0.0"))
    assert row != DTypeRow(("a2",), (), "8.0.0")  # another class: never equal
    assert repr(row) == "Row(families=('a2',), since='8.0.0', until=None)"


def test_replaced_field_by_field_as_dataclasses_replace_does():
    row = Row(("a2",), "8.0.0")
    assert row._replace(until="8.5.0") == Row(("a2",), "8.0.0", "8.5.0") and row.until is None
    with pytest.raises(TypeError, match="unknown field.*'colour'"):
        row._replace(colour=1)


def test_pickled_and_copied_whole():
    row = DTypeRow(("a2",), ("float32",), None, "8.5.0", {"approximate": "tanh"})
    for twin in (pickle.loads(pickle.dumps(row)), copy.copy(row), copy.deepcopy(row)):
        assert twin == row and type(twin) is DTypeRow


def test_a_default_before_a_required_field_is_refused_at_class_creation():
    with pytest.raises(TypeError, match="'py' without a default"):

        class Broken(Record):
            name: str = ""
            py: str


def test_meta_param_keeps_its_keyword_defaults():
    p = Param("self", "self", "input", False, (), None, (), None, (), None, ())
    assert (p.is_list, p.inplace, p.formats, p.is_tensor) == (False, False, (), True)
