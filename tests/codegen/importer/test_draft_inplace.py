"""An in-place API whose page prints its one tensor as `aclTensor* self` (read and written, no
`Ref` suffix, no const) drafts it as the in-place input, not as an output the op never reads."""

from __future__ import annotations

from aclnngen.codegen.importer.draft import _inplace_by_name


def _self(role):
    return {
        "name": "self",
        "py_name": "self",
        "role": role,
        "summary": "Output tensor self (binding tier: described by name only).",
        "dtypes": [],
    }


def test_the_one_tensor_of_an_inplace_api_is_its_inplace_input():
    params = [_self("output"), {"name": "alpha", "py_name": "alpha", "role": "attribute"}]
    _inplace_by_name("InplaceSqrt", params)
    assert list(params[0]) == ["name", "py_name", "role", "inplace", "summary", "dtypes"]
    assert params[0]["role"] == "input" and params[0]["inplace"] is True
    assert params[0]["summary"].startswith("Input tensor self")


def test_an_api_not_named_in_place_keeps_its_output():
    params = [_self("output")]
    _inplace_by_name("Sqrt", params)
    assert params[0]["role"] == "output" and "inplace" not in params[0]


def test_a_ref_tensor_list_is_an_inplace_input():
    from aclnngen.codegen.importer.draft import in_place
    from aclnngen.codegen.importer.facts import PageParam

    assert in_place("paramsRef", "const aclTensorList*", None)
    assert in_place("moments", "aclTensorList*", PageParam("moments", direction="inout"))
    assert not in_place("grads", "const aclTensorList*", PageParam("grads", direction="input"))
