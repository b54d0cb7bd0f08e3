"""The planner keeps every tensor of a case inside its own dtype list: an output no rule gives a
dtype takes one its list has (a quantizing op's int8 output beside float inputs), and the
"mixed-dtype" case mixes an input whose list has a second dtype, and expects the refusal of a
same_dtype rule even beside a promoting one. Made-up binding-tier specs, checked against the
validator."""

from __future__ import annotations

import pytest

from aclnngen.codegen import metadata
from aclnngen.codegen.loader import load_products, load_spec
from aclnngen.core import planning
from aclnngen.core.rules import infer_output_names
from aclnngen.runtime.errors import AclnnValidationError
from aclnngen.runtime.validation import validate
from aclnngen.verify import cases

RELEASE = "9.2.RC1.alpha001"

SPEC = """\
name: OwnDtypes
summary: 'A made-up op whose tensors each have their own dtype list.'
source:
  title: aclnnOwnDtypes
  url: made/up/aclnnOwnDtypes.md
cann_version: 9.2.RC1.alpha001
tier: binding
products:
- family: a2
prototypes:
  get_workspace_size: aclnnStatus aclnnOwnDtypesGetWorkspaceSize(const aclTensor* x, const aclTensor* index, const aclTensor* scale, aclTensor* out, uint64_t* workspaceSize, aclOpExecutor** executor)
  launch: aclnnStatus aclnnOwnDtypes(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor, aclrtStream stream)
parameters:
- name: x
  py_name: x_
  role: input
  summary: 'Input x.'
  dtypes:
  - families: [a2]
    dtypes: [float32, float16]
- name: index
  py_name: index
  role: input
  summary: 'Input index.'
  dtypes:
  - families: [a2]
    dtypes: [int64]
- name: scale
  py_name: scale
  role: input
  summary: 'Input scale.'
  dtypes:
  - families: [a2]
    dtypes: [float32, float16]
- name: out
  py_name: out
  role: output
  summary: 'Output out.'
  dtypes:
  - families: [a2]
    dtypes: [int8, int32]
rules: RULES
return_codes:
- status: 161002
  check: dtype
  params: [x, index, scale, out]
  condition: A dtype is not supported.
"""

PROMOTE_AND_SAME = """
- kind: promote
  inputs: [x, scale]
  output: out
- kind: same_dtype
  params: [x, scale]"""


def _meta(tmp_path, rules: str = " []", spec: str = SPEC) -> dict:
    path = tmp_path / "own_dtypes.yaml"
    path.write_text(spec.replace("rules: RULES", "rules:" + rules), encoding="utf-8")
    return metadata.build(load_spec(path, load_products()).spec)


def _validates(meta: dict, case: str) -> int:
    values = cases.make_values(meta, case, "float32", version=RELEASE, family="a2", own_dtypes=True)
    try:
        validate(meta, values, family="a2", version=RELEASE)
    except AclnnValidationError as exc:
        return exc.status
    return 0


def test_an_output_no_rule_types_takes_a_dtype_of_its_own_list(tmp_path):
    meta = _meta(tmp_path)
    shapes = dict.fromkeys(("x", "index", "scale"), (2, 3))
    halves = {"x": "float16", "index": "int64", "scale": "float16"}
    assert infer_output_names(meta, shapes, halves, RELEASE, family="a2")["out"] == ((2, 3), "int8")
    ints = {"x": "int32", "index": "int64", "scale": "int32"}
    assert infer_output_names(meta, shapes, ints, RELEASE, family="a2")["out"][1] == "int32"
    # without a family (the reference, asked for any dtype) the first input's stands
    assert infer_output_names(meta, shapes, halves, RELEASE)["out"][1] == "float16"


@pytest.mark.parametrize("case", ["contiguous", "empty", "non-contiguous"])
def test_the_planned_cases_the_planner_accepts_validate(tmp_path, case):
    meta = _meta(tmp_path)
    assert dict(planning.applicable_cases(meta, RELEASE, family="a2"))[case] == 0
    assert _validates(meta, case) == 0


def test_the_mixed_input_is_one_whose_list_has_a_second_dtype(tmp_path):
    meta = _meta(tmp_path)
    plan = planning.case_plan(planning.op_at(meta, RELEASE, "a2"), "mixed-dtype")
    assert plan.mixed == "scale"  # not index: int64 is all its list has
    assert plan.expected == 0 and _validates(meta, "mixed-dtype") == 0


def test_a_mixed_case_no_input_can_take_is_planned_refused(tmp_path):
    meta = _meta(tmp_path, spec=SPEC.replace("dtypes: [float32, float16]", "dtypes: [float32]"))
    plan = planning.case_plan(planning.op_at(meta, RELEASE, "a2"), "mixed-dtype")
    assert plan.mixed == "index" and plan.expected == 161002
    assert _validates(meta, "mixed-dtype") == 161002


def test_a_same_dtype_rule_beside_a_promoting_one_refuses_the_mixed_case(tmp_path):
    meta = _meta(tmp_path, PROMOTE_AND_SAME)
    plan = planning.case_plan(planning.op_at(meta, RELEASE, "a2"), "mixed-dtype")
    assert plan.mixed == "scale" and plan.expected == 161002
    assert _validates(meta, "mixed-dtype") == plan.expected


RANKS = """
- kind: min_rank
  params: [x, out]
  rank: 4
- kind: max_rank
  params: [index]
  rank: 1"""

SAME_SHAPE_LIMITED = """
- kind: max_rank
  params: [scale]
  rank: 2
- kind: same_shape
  params: [x, scale]"""


@pytest.mark.parametrize("case", ["contiguous", "offset", "empty"])
def test_the_base_shapes_meet_the_rank_rules(tmp_path, case):
    meta = _meta(tmp_path, RANKS)
    shapes = planning.case_shapes(meta, case, RELEASE, family="a2")
    assert len(shapes["x"]) == 4 and len(shapes["scale"]) == 4 and len(shapes["index"]) == 1
    assert (0 in shapes["x"]) == (case == "empty") and (0 in shapes["index"]) == (case == "empty")
    assert dict(planning.applicable_cases(meta, RELEASE, family="a2"))[case] == 0
    assert _validates(meta, case) == 0


def test_a_same_shape_group_takes_the_rank_its_most_limited_member_allows(tmp_path):
    meta = _meta(tmp_path, SAME_SHAPE_LIMITED)
    shapes = planning.case_shapes(meta, "contiguous", RELEASE, family="a2")
    assert shapes["x"] == shapes["scale"] == (3, 4) and len(shapes["index"]) == 3
    assert _validates(meta, "contiguous") == 0


NO_INPUTS = """\
name: OwnDtypes
summary: 'A made-up op that only writes.'
source:
  title: aclnnOwnDtypes
  url: made/up/aclnnOwnDtypes.md
cann_version: 9.2.RC1.alpha001
tier: binding
products:
- family: a2
prototypes:
  get_workspace_size: aclnnStatus aclnnOwnDtypesGetWorkspaceSize(int64_t seed, aclTensor* out, uint64_t* workspaceSize, aclOpExecutor** executor)
  launch: aclnnStatus aclnnOwnDtypes(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor, aclrtStream stream)
parameters:
- name: seed
  py_name: seed
  role: attribute
  summary: 'Attribute seed.'
  c_type: int64_t
- name: out
  py_name: out
  role: output
  summary: 'Output out.'
  dtypes:
  - families: [a2]
    dtypes: [uint8]
rules: []
return_codes:
- status: 161002
  check: dtype
  params: [out]
  condition: A dtype is not supported.
"""


def test_an_output_of_an_op_without_inputs_takes_its_own_dtype_in_own_cases(tmp_path):
    meta = _meta(tmp_path, spec=NO_INPUTS)
    own = cases.make_values(meta, "contiguous", "float32", version=RELEASE, family="a2", own_dtypes=True)
    assert own["out"].dtype.name == "uint8"
    assert _validates(meta, "contiguous") == 0
    # the dtype cases still ask for the dtype itself (float32: rejected)
    asked = cases.make_values(meta, "contiguous", "float32", version=RELEASE, family="a2")
    assert asked["out"].dtype.name == "float32"


def test_a_tensor_of_layout_formats_only_gets_their_rank_and_format(tmp_path):
    nchw = SPEC.replace(
        "    dtypes: [float32, float16]\n- name: index",
        "    dtypes: [float32, float16]\n  formats:\n  - families: [a2]\n    formats: [NCL, NCHW]\n- name: index",
    )
    meta = _meta(tmp_path, spec=nchw)
    shapes = planning.case_shapes(meta, "contiguous", RELEASE, family="a2")
    assert len(shapes["x"]) == 3  # NCL's rank: the base shape's
    assert planning.case_formats(meta, RELEASE, "a2", shapes) == {"x": "NCL"}
    meta = _meta(tmp_path, spec=nchw.replace("formats: [NCL, NCHW]", "formats: [NCHW]"))
    shapes = planning.case_shapes(meta, "contiguous", RELEASE, family="a2")
    assert len(shapes["x"]) == 4 and planning.case_formats(meta, RELEASE, "a2", shapes) == {"x": "NCHW"}
    values = cases.make_values(meta, "contiguous", "float32", version=RELEASE, family="a2", own_dtypes=True)
    validate(meta, values, family="a2", version=RELEASE, formats={"x": "NCHW"})


def test_a_mixed_case_refused_through_an_output_another_rule_ties(tmp_path):
    chained = SPEC.replace("    dtypes: [int8, int32]", "    dtypes: [float32, float16]")
    rules = """
- kind: same_dtype
  params: [scale, out]
- kind: same_dtype
  params: [x, out]"""
    meta = _meta(tmp_path, rules, spec=chained)
    plan = planning.case_plan(planning.op_at(meta, RELEASE, "a2"), "mixed-dtype")
    assert plan.mixed == "scale" and plan.expected == 161002
    assert _validates(meta, "mixed-dtype") == 161002


def test_an_output_a_rank_rule_limits_gets_its_dims(tmp_path):
    meta = _meta(tmp_path, "\n- kind: max_rank\n  params: [out]\n  rank: 1")
    shapes = planning.case_shapes(meta, "contiguous", RELEASE, family="a2")
    assert len(shapes["x"]) == 3 and shapes["out"] == (4,)
    assert _validates(meta, "contiguous") == 0 and _validates(meta, "empty") == 0


def test_inputs_lacking_the_asked_dtype_take_ones_the_dtype_rules_accept(tmp_path):
    from aclnngen.core.dtype_combinations import combination

    # x lacks float32; scale has it, but must share x's dtype
    lead_half = SPEC.replace("    dtypes: [float32, float16]\n- name: index", "    dtypes: [float16]\n- name: index")
    meta = _meta(tmp_path, "\n- kind: same_dtype\n  params: [x, scale]", spec=lead_half)
    assert combination(meta, "float32", RELEASE, "a2") == {"x": "float16", "index": "int64", "scale": "float16"}
    assert combination(meta, "float32", RELEASE) == {"x": "float16", "index": "int64", "scale": "float32"}
    assert _validates(meta, "contiguous") == 0


LIST_INPUT = """\
name: OwnDtypes
summary: 'A made-up op that reads a tensor list.'
source:
  title: aclnnOwnDtypes
  url: made/up/aclnnOwnDtypes.md
cann_version: 9.2.RC1.alpha001
tier: binding
products:
- family: a2
prototypes:
  get_workspace_size: aclnnStatus aclnnOwnDtypesGetWorkspaceSize(const aclTensorList* tensors, aclTensor* out, uint64_t* workspaceSize, aclOpExecutor** executor)
  launch: aclnnStatus aclnnOwnDtypes(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor, aclrtStream stream)
parameters:
- name: tensors
  py_name: tensors
  role: input
  list: true
  summary: 'Input tensors.'
  dtypes:
  - families: [a2]
    dtypes: [float32, float16]
- name: out
  py_name: out
  role: output
  summary: 'Output out.'
  dtypes:
  - families: [a2]
    dtypes: [float32, float16]
rules:
- kind: empty
  params: [out]
  allowed: false
- kind: max_rank
  params: [out]
  rank: 8
return_codes:
- status: 161002
  check: dtype
  params: [tensors, out]
  condition: A dtype is not supported.
"""


@pytest.mark.parametrize("case", ["contiguous", "empty", "rank9"])
def test_the_output_of_an_op_reading_a_list_has_the_planned_shape(tmp_path, case):
    meta = _meta(tmp_path, spec=LIST_INPUT)
    expected = dict(planning.applicable_cases(meta, RELEASE, family="a2"))[case]
    assert expected == (0 if case == "contiguous" else 161002)
    assert _validates(meta, case) == expected
