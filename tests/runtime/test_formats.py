"""Tensor formats: spec facts per tensor and family (ND alone when a spec states none), a
`formats=` keyword on every binding, passed to aclCreateTensor, and checked by the validator and
by the simulator (161002 for a format the family does not accept)."""

from __future__ import annotations

import copy

import numpy as np
import yaml
import pytest

from aclnngen.codegen import metadata
from aclnngen.codegen.errors import SpecError
from aclnngen.codegen.loader import DEFAULT_SPECS_DIR, load_products, load_spec
from aclnngen.core.formats import DEFAULT_FORMATS, FORMATS, UnknownFormat, acl_member, name_of_member
from aclnngen.core.meta import op_meta
from aclnngen.generated import abi
from aclnngen.generated.meta.prelu_backward import META
from aclnngen.generated.ops.prelu_backward import prelu_backward
from aclnngen.runtime import session
from aclnngen.runtime.errors import AclnnStatusError, AclnnValidationError
from aclnngen.runtime.sim import kernels
from aclnngen.runtime.validation import validate

PARAM_INVALID = 161002
SELF_FORMATS = """    dtypes:
      - {families: [training], dtypes: [float16, float32]}
      - {families: [a2], dtypes: [float16, float32, bfloat16]}
      - {families: [a3, ascend950], dtypes: [float16, float32, bfloat16], since: 8.5.0}
  - name: weight"""


def _spec_with(tmp_path, formats: str):
    """prelu_backward.yaml with `formats` added to its tensor `self`."""
    text = (DEFAULT_SPECS_DIR / "ops" / "prelu_backward.yaml").read_text()
    assert SELF_FORMATS in text
    text = text.replace(SELF_FORMATS, SELF_FORMATS.replace("  - name: weight", formats + "  - name: weight"))
    path = tmp_path / "prelu_backward.yaml"
    path.write_text(text)
    return load_spec(path, load_products()).spec


def _values(shape=(2, 3, 4)):
    x = np.ones(shape, np.float32)
    return {
        "gradOutput": x,
        "self": x,
        "weight": np.ones(3, np.float32),
        "gradInput": x,
        "gradWeight": np.ones(3, np.float32),
    }


def test_the_formats_mirror_the_abi_enum():
    members = {m for m in abi.ENUMS["aclFormat"] if m != "ACL_FORMAT_UNDEFINED"}
    assert {acl_member(f) for f in FORMATS} == members
    assert all(name_of_member(acl_member(f)) == f for f in FORMATS)
    assert DEFAULT_FORMATS == ("ND",)
    with pytest.raises(UnknownFormat, match="NCWH"):
        acl_member("NCWH")


def test_a_spec_states_formats_per_family_and_the_validator_checks_them(tmp_path):
    spec = _spec_with(tmp_path, "    formats:\n      - {families: [a2, a3], formats: [ND, NCHW]}\n")
    meta = metadata.build(spec)
    assert meta["params"][1]["formats"] == [
        {"families": ["a2", "a3"], "formats": ["ND", "NCHW"], "since": None, "until": None}
    ]
    assert "formats" not in meta["params"][0]  # unstated: ND, and nothing written
    self_param = op_meta(meta).param("self")
    assert self_param.formats_at("a2", "8.5.0") == ("ND", "NCHW")
    assert self_param.formats_at("training", "8.5.0") == ("ND",)
    validate(meta, _values(), family="a2", version="8.5.0", formats={"self": "NCHW"})
    with pytest.raises(AclnnValidationError) as err:
        validate(meta, _values(), family="training", version="8.5.0", formats={"self": "NCHW"})
    assert (err.value.status, err.value.check, err.value.param) == (PARAM_INVALID, "format", "self")
    assert "NCHW" in str(err.value) and "'training'" in str(err.value)
    with pytest.raises(AclnnValidationError) as err:  # gradOutput states none: ND only
        validate(meta, _values(), family="a2", version="8.5.0", formats={"gradOutput": "NCHW"})
    assert err.value.param == "gradOutput"


@pytest.mark.parametrize(
    "formats, message",
    [
        ("    formats:\n      - {families: [a2], formats: [NCWH]}\n", "unknown tensor format 'NCWH'"),
        ("    formats:\n      - {families: [a2], formats: [ND, ND]}\n", "listed twice"),
        ("    formats:\n      - {families: [a2], formats: [ND]}\n      - {families: [a2], formats: [NCHW]}\n", "twice"),
        ("    formats:\n      - {families: [mars], formats: [ND]}\n", "mars"),
    ],
)
def test_a_wrong_format_fact_is_refused(tmp_path, formats, message):
    with pytest.raises(SpecError) as err:
        _spec_with(tmp_path, formats)
    assert message in str(err.value) and "prelu_backward.yaml:" in str(err.value)


def _args():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((2, 3, 4)).astype(np.float32)
    return x, x, np.full(3, 0.25, np.float32)


def test_the_binding_passes_each_tensors_format_to_aclcreatetensor():
    g, x, w = _args()
    with session.simulated(family="a2", profile="lenient"):
        kernels.clear_recorded()
        prelu_backward(g, x, w, formats={"self": "NCHW", "weight": "NC"}, validate=False)
        args = kernels.recorded("aclnnPreluBackward")[-1]["args"]
    enum = abi.ENUMS["aclFormat"]
    assert args["self"]["format"] == enum["ACL_FORMAT_NCHW"]
    assert args["weight"]["format"] == enum["ACL_FORMAT_NC"]
    assert args["gradOutput"]["format"] == args["gradInput"]["format"] == enum["ACL_FORMAT_ND"]


def test_a_format_the_spec_does_not_accept_is_refused_by_the_validator_and_the_simulator():
    g, x, w = _args()
    with session.simulated(family="a2", profile="spec"):
        with pytest.raises(AclnnValidationError) as err:
            prelu_backward(g, x, w, formats={"self": "NHWC"})
        assert (err.value.status, err.value.check) == (PARAM_INVALID, "format")
        with pytest.raises(AclnnStatusError) as err:
            prelu_backward(g, x, w, formats={"self": "NHWC"}, validate=False)
        assert err.value.status == PARAM_INVALID and "format NHWC" in err.value.recent_message
        np.testing.assert_array_equal(prelu_backward(g, x, w, formats={"self": "ND"})[0], prelu_backward(g, x, w)[0])


def test_the_simulator_checks_the_format_it_received(tmp_path):
    """A check that reads the formats the descriptors carry (a spec that accepts NCHW on A2)."""
    meta = metadata.build(_spec_with(tmp_path, "    formats:\n      - {families: [a2], formats: [ND, NCHW]}\n"))

    def check(_, values, *, family, version, formats):
        return validate(meta, values, family=family, version=version, formats=formats)

    g, x, w = _args()
    profile = kernels.Profile("nchw-on-a2", "self takes NCHW on A2", check=check)
    with session.simulated(family="a2", profile=profile):
        prelu_backward(g, x, w, formats={"self": "NCHW"}, validate=False)
        with pytest.raises(AclnnStatusError) as err:
            prelu_backward(g, x, w, formats={"grad_output": "NCHW"}, validate=False)
        assert err.value.status == PARAM_INVALID and "gradOutput" in err.value.recent_message
    with session.simulated(family="training", profile=profile):
        with pytest.raises(AclnnStatusError) as err:
            prelu_backward(g, x, w, formats={"self": "NCHW"}, validate=False)
        assert err.value.status == PARAM_INVALID


@pytest.mark.parametrize(
    "formats, error, message",
    [
        ({"x": "ND"}, TypeError, "no tensor of the op; its tensors are grad_output, self, weight"),
        ({"self": "NCWH"}, ValueError, "unknown tensor format 'NCWH'"),
        (["self", "ND"], TypeError, "formats must be a mapping"),
    ],
)
def test_a_bad_formats_argument_is_a_typed_error_naming_it(formats, error, message):
    g, x, w = _args()
    with session.simulated(family="a2"):
        with pytest.raises(error, match=message):
            prelu_backward(g, x, w, formats=formats)


def test_meta_of_every_built_in_op_is_nd_only():
    assert all(p.formats_at("a2", "9.1.0") == ("ND",) for p in op_meta(META).tensors)


def test_the_audit_probes_each_tensors_formats():
    from aclnngen.audit.checks import audit_op  # deferred: the audit is heavy and only this test needs it

    def format_findings(profile):
        found = audit_op("softmax_backward", "sim", profile=profile, family="a2").findings
        return {(f.subject, f.group) for f in found if f.check == "format"}

    assert format_findings("spec") == set()  # ND accepted (every probe), NCHW refused
    # a library that checks no format accepts what the spec says it refuses
    assert format_findings("lenient") == {
        (f"{name} in NCHW on a2", "undocumented") for name in ("gradOutput", "output", "out")
    }


def test_diff_calls_a_lost_format_breaking_and_a_new_one_compatible(tmp_path):
    from aclnngen.codegen import specdiff

    base = yaml.safe_load((DEFAULT_SPECS_DIR / "ops" / "prelu_backward.yaml").read_text())
    wider = copy.deepcopy(base)
    wider["parameters"][1]["formats"] = [{"families": ["a2"], "formats": ["ND", "NCHW"]}]
    gained = specdiff.diff(specdiff.view(base, "9.1.0"), specdiff.view(wider, "9.1.0"))
    assert [(c.kind, c.what, c.message) for c in gained] == [("compatible", "format", "self on a2: NCHW added")]
    lost = specdiff.diff(specdiff.view(wider, "9.1.0"), specdiff.view(base, "9.1.0"))
    assert [(c.kind, c.what) for c in lost] == [("breaking", "format")]
    nchw_only = copy.deepcopy(base)
    nchw_only["parameters"][1]["formats"] = [{"families": ["a2"], "formats": ["NCHW"]}]
    both = specdiff.diff(specdiff.view(base, "9.1.0"), specdiff.view(nchw_only, "9.1.0"))
    assert {(c.kind, c.message) for c in both} == {
        ("breaking", "self on a2: ND removed"),
        ("compatible", "self on a2: NCHW added"),
    }


def test_the_page_audit_sets_the_pages_formats_against_the_specs():
    from aclnngen.codegen.importer.agree import disagreements

    spec = yaml.safe_load((DEFAULT_SPECS_DIR / "ops" / "prelu_backward.yaml").read_text())
    page = copy.deepcopy(spec)  # a page that also lists NCHW for self
    page["parameters"][1]["formats"] = [{"families": ["a2"], "formats": ["ND", "NCHW"]}]
    unexcused, excused = disagreements(spec, page, "8.5.0")
    assert [(c.what, c.where, c.family) for c in unexcused] == [("format", "self", "a2")] and not excused
    spec["defects"].append({"kind": "other", "note": "the page lists NCHW for self, which the code refuses"})
    unexcused, excused = disagreements(spec, page, "8.5.0")
    assert not unexcused and [c.what for c in excused] == ["format"]


def test_the_op_page_lists_each_tensors_formats(tmp_path):
    from aclnngen.codegen.view import OpView

    spec = _spec_with(tmp_path, "    formats:\n      - {families: [a2, a3], formats: [ND, NCHW]}\n")
    rows = {p["name"]: p["formats"] for p in OpView(spec, load_products()).docs.page["params"]}
    assert rows["self"] == "ND, NCHW on a2, a3; ND elsewhere" and rows["gradOutput"] == "ND"
    assert all(rows[p.name] == "—" for p in spec.parameters if not p.is_tensor)
