"""The checks behind the generated tests meet a catalog op's facts: a dtype return-code row of an
input a promote rule names is provoked with a dtype whose promotion with the other inputs' lands
outside the lists (or has none; a uint16 beside float32 promotes to float32, which an op taking
every float dtype accepts), and a tensor that takes no ND goes in a format it takes."""

from __future__ import annotations

import numpy as np

from aclnngen.codegen import metadata
from aclnngen.codegen.loader import load_products, load_spec
from aclnngen.verify import opcheck

RELEASE = "9.2.RC1.alpha001"
EVERY = "[float32, float16, float64, bfloat16, int32, int64, int16, int8, uint8, bool, complex64, complex128]"

SPEC = f"""\
name: PromotedRow
summary: 'A made-up op whose inputs promote together and take every wide dtype.'
source:
  title: aclnnPromotedRow
  url: made/up/aclnnPromotedRow.md
cann_version: 9.2.RC1.alpha001
tier: binding
products:
- family: a2
prototypes:
  get_workspace_size: aclnnStatus aclnnPromotedRowGetWorkspaceSize(const aclTensor* self, const aclTensor* other, aclTensor* out, uint64_t* workspaceSize, aclOpExecutor** executor)
  launch: aclnnStatus aclnnPromotedRow(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor, aclrtStream stream)
parameters:
- name: self
  py_name: self
  role: input
  summary: 'Input self.'
  dtypes:
  - families: [a2]
    dtypes: {EVERY}
- name: other
  py_name: other
  role: input
  summary: 'Input other.'
  dtypes:
  - families: [a2]
    dtypes: {EVERY}
- name: out
  py_name: out
  role: output
  summary: 'Output out.'
  dtypes:
  - families: [a2]
    dtypes: {EVERY}
rules:
- kind: promote
  inputs: [self, other]
  output: out
return_codes:
- status: 161002
  check: dtype
  params: [self, other]
  condition: A dtype of self, other is not supported.
"""


def test_the_dtype_row_of_a_promoted_input_is_provoked(tmp_path):
    path = tmp_path / "promoted_row.yaml"
    path.write_text(SPEC, encoding="utf-8")
    meta = metadata.build(load_spec(path, load_products()).spec)
    op = opcheck.OpUnderTest(meta, None, binding=lambda *a, **k: None, version=RELEASE)
    for param in ("self", "other"):
        opcheck.check_return_code(op, "a2", 0, "dtype", param, 161002)


def test_the_checks_send_a_tensor_that_takes_no_nd_in_a_format_it_takes(tmp_path):
    nchw = SPEC.replace(
        "  summary: 'Input self.'\n  dtypes:",
        "  summary: 'Input self.'\n  formats:\n  - families: [a2]\n    formats: [NCHW]\n  dtypes:",
    )
    path = tmp_path / "promoted_row.yaml"
    path.write_text(nchw, encoding="utf-8")
    meta = metadata.build(load_spec(path, load_products()).spec)
    op = opcheck.OpUnderTest(meta, None, binding=lambda *a, **k: None, version=RELEASE)
    opcheck.check_dtype(op, "a2", "float32", True)
    opcheck.check_shape_case(op, "a2", "float32", "contiguous", 0)
    assert opcheck._formats(op, {"self": np.zeros((2, 2, 3, 4))}, "a2") == {"self": "NCHW"}
