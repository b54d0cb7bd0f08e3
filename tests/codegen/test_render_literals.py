"""`render.pyrepr`, the one way spec data becomes a Python literal: pprint's layout (one line when
it fits in 100 characters, else pprint's at width 100 with dicts in their own order), measured with
the builtin repr rather than pprint's own Python walk of every subtree (which cost most of the time
to render a META), and a non-finite float refused at any depth."""

from __future__ import annotations

import ast
import math
import pprint

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from aclnngen.codegen import render

ATOMS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=150),
)
PLAIN = st.recursive(
    ATOMS,
    lambda inner: st.one_of(
        st.lists(inner, max_size=6),
        st.lists(inner, max_size=4).map(tuple),
        st.dictionaries(st.text(max_size=12), inner, max_size=6),
    ),
    max_leaves=40,
)


@settings(max_examples=60, deadline=None)
@given(PLAIN)
def test_a_literal_is_pprint_s_text_and_reads_back(value):
    text = render.pyrepr(value)
    assert text == (repr(value) if len(repr(value)) <= 100 else pprint.pformat(value, width=100, sort_dicts=False))
    assert ast.literal_eval(text) == value


def test_a_nested_literal_never_takes_pprint_s_python_walk(monkeypatch):
    def walked(*args, **kwargs):
        raise AssertionError("pprint measured a piece of plain data with its own Python repr")

    monkeypatch.setattr(pprint.PrettyPrinter, "_safe_repr", walked)
    meta_like = {"params": [{"name": f"tensor{i}", "dtypes": {"a2": ["float32", "float16"] * 4}} for i in range(8)]}
    text = render.pyrepr(meta_like)
    assert "\n" in text and ast.literal_eval(text) == meta_like


@pytest.mark.parametrize("bad", [math.inf, -math.inf, math.nan])
def test_a_non_finite_float_at_any_depth_is_refused(bad):
    for value in (bad, [bad], {"x": (1, {"y": [bad]})}):
        with pytest.raises(ValueError, match="no Python literal"):
            render.pyrepr(value)
