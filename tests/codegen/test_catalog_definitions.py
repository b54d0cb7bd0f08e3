"""The catalog's APIs whose header the vendor's build writes, held against their op definition
(codegen/catalog_definitions.py): the definition's inputs, outputs and attributes as its source
declares them, and where a page's tensors part from them."""

from __future__ import annotations

import pytest

from aclnngen.codegen import catalog
from aclnngen.codegen.catalog_definitions import OpDefinition, against, read_definition

SOURCE = """
class Demo : public OpDef {
public:
    explicit Demo(const char* name) : OpDef(name)
    {
        this->Input("x").ParamType(REQUIRED).DataType({ge::DT_FLOAT});
        this->Input("zero_points").ParamType(OPTIONAL);
        this->Output("y").ParamType(REQUIRED);
        this->Attr("axis").AttrType(OPTIONAL).Int(-1);
    }
};
"""


def test_a_definition_is_read_in_declaration_order():
    assert read_definition(SOURCE) == OpDefinition(("x", "zero_points"), ("y",), ("axis",))
    # two files of one folder (a config per product) declare the same names: each once
    assert read_definition(SOURCE + SOURCE) == read_definition(SOURCE)


DEMO = OpDefinition(("x", "zero_points"), ("y",), ("axis",))


@pytest.mark.parametrize(
    "inputs, outputs, parted",
    [
        (["x", "zeroPointsOptional"], ["out"], None),
        (["self", "zeroPoints"], ["out"], "page input `self`, definition `x`"),
        (["x"], ["out"], "only the definition has input `zero_points`"),
        (["x", "zeroPoints", "bias"], ["out"], "only the page has input `bias`"),
        (["x", "zeroPoints"], ["out", "amax"], "2 output(s) on the page, 1 in the definition"),
    ],
)
def test_where_a_pages_tensors_part_from_the_definition(inputs, outputs, parted):
    assert against(inputs, outputs, DEMO) == parted


@pytest.mark.parametrize(
    "definition, parted",
    [
        (OpDefinition(("x",), (), ()), None),  # the op writes its input x: no output declared
        (OpDefinition(("x",), ("x",), ()), None),  # x declared in and out
        (OpDefinition(("x",), ("x", "y"), ()), "1 output(s) on the page, 2 in the definition"),
    ],
)
def test_an_inplace_input_agrees_with_a_definition_that_declares_it_an_output_or_not(definition, parted):
    assert against(["x"], ["x"], definition, inplace=1) == parted


def test_only_apis_whose_header_the_build_writes_are_compared():
    report = catalog.CatalogReport("HEAD")
    for api, header in (("Demo", catalog.BUILT), ("Other", "equal")):
        report.results.append(
            catalog.ApiResult(
                "ops-nn",
                f"quant/demo/docs/aclnn{api}.md",
                api,
                "quant",
                "valid",
                header=header,
                inputs=("self",),
                outputs=("out",),
            )
        )
    catalog.compare_definitions(report, {"ops-nn": {"quant/demo": DEMO}})
    assert [r.definition for r in report.results] == ["differs", None]
    assert report.definitions() == {"differs": 1}
    page = catalog.markdown(report)
    assert "| ops-nn | Demo | differs | page input `self`, definition `x` |" in page
    assert "1 differs." in page


def test_folders_with_a_built_header_get_their_definition_read(tmp_path):
    import subprocess

    repo = tmp_path / "ops-nn"
    (repo / "quant/demo/op_host").mkdir(parents=True)
    (repo / "quant/demo/op_host/demo_def.cpp").write_text(SOURCE, encoding="utf-8")
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run(git + ["init", "-q"], check=True)
    subprocess.run(git + ["add", "."], check=True)
    subprocess.run(git + ["commit", "-q", "-m", "demo"], check=True)
    listed = ["quant/demo/op_host/demo_def.cpp"]
    found = catalog.op_definitions(repo / ".git", "HEAD", listed, catalog.built_header_folders(listed))
    assert found == {"quant/demo": DEMO}
