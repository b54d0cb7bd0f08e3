"""Tensor formats: spec facts per tensor and family (ND alone when a spec states none), a
`formats=` keyword on every binding, passed to aclCreateTensor, and checked by the validator and
by the simulator (161002 for a format the family does not accept)."""

from __future__ import annotations

import copy

import catalog
import numpy as np
import pytest
import yaml

from aclnngen.codegen import metadata
from aclnngen.codegen.errors import SpecError
from aclnngen.codegen.loader import DEFAULT_SPECS_DIR, load_products, load_spec
from aclnngen.core.formats import DEFAULT_FORMATS, FORMATS, UnknownFormat, acl_member, name_of_member
from aclnngen.core.meta import op_meta
from aclnngen.generated import abi
from aclnngen.runtime import session
from aclnngen.runtime.errors import AclnnStatusError, AclnnValidationError
from aclnngen.runtime.sim import kernels
from aclnngen.runtime.validation import validate

PARAM_INVALID = 161002
# a plain op (tests/catalog.py): binding(grad, x); its tensors by role
OP = catalog.PLAIN
META = catalog.meta(OP)
(GRAD, X), (OUT,) = catalog.names(META, "input"), catalog.names(META, "output")
binding = catalog.binding(OP)


def _spec_data() -> dict:
    return yaml.safe_load((DEFAULT_SPECS_DIR / "ops" / f"{OP}.yaml").read_text(encoding="utf-8"))


def _x_index(spec: dict) -> int:
    return next(i for i, p in enumerate(spec["parameters"]) if p["name"] == X)


def _spec_with(tmp_path, formats: list):
    """The op's spec with `formats` stated for its input X."""
    data = _spec_data()
    data["parameters"][_x_index(data)]["formats"] = formats
    path = tmp_path / f"{OP}.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False, allow_unicode=True), encoding="utf-8")
    return load_spec(path, load_products()).spec


def _values(shape=(2, 3, 4)):
    return {name: np.ones(shape, np.float32) for name in (GRAD, X, OUT)}


def test_the_formats_mirror_the_abi_enum():
    members = {m for m in abi.ENUMS["aclFormat"] if m != "ACL_FORMAT_UNDEFINED"}
    assert {acl_member(f) for f in FORMATS} == members
    assert all(name_of_member(acl_member(f)) == f for f in FORMATS)
    assert DEFAULT_FORMATS == ("ND",)
    with pytest.raises(UnknownFormat, match="NCWH"):
        acl_member("NCWH")


def test_a_spec_states_formats_per_family_and_the_validator_checks_them(tmp_path):
    spec = _spec_with(tmp_path, [{"families": ["a2", "a3"], "formats": ["ND", "NCHW"]}])
    meta = metadata.build(spec)
    assert next(p for p in meta["params"] if p["name"] == X)["formats"] == [
        {"families": ["a2", "a3"], "formats": ["ND", "NCHW"], "since": None, "until": None}
    ]
    assert "formats" not in meta["params"][0]  # unstated: ND, and nothing written
    self_param = op_meta(meta).param(X)
    assert self_param.formats_at("a2", "8.5.0") == ("ND", "NCHW")
    assert self_param.formats_at("training", "8.5.0") == ("ND",)
    validate(meta, _values(), family="a2", version="8.5.0", formats={X: "NCHW"})
    with pytest.raises(AclnnValidationError) as err:
        validate(meta, _values(), family="training", version="8.5.0", formats={X: "NCHW"})
    assert (err.value.status, err.value.check, err.value.param) == (PARAM_INVALID, "format", X)
    assert "NCHW" in str(err.value) and "'training'" in str(err.value)
    with pytest.raises(AclnnValidationError) as err:  # the gradient states none: ND only
        validate(meta, _values(), family="a2", version="8.5.0", formats={GRAD: "NCHW"})
    assert err.value.param == GRAD


@pytest.mark.parametrize(
    "formats, message",
    [
        ([{"families": ["a2"], "formats": ["NCWH"]}], "unknown tensor format 'NCWH'"),
        ([{"families": ["a2"], "formats": ["ND", "ND"]}], "listed twice"),
        ([{"families": ["a2"], "formats": ["ND"]}, {"families": ["a2"], "formats": ["NCHW"]}], "twice"),
        ([{"families": ["mars"], "formats": ["ND"]}], "mars"),
    ],
)
def test_a_wrong_format_fact_is_refused(tmp_path, formats, message):
    with pytest.raises(SpecError) as err:
        _spec_with(tmp_path, formats)
    assert message in str(err.value) and f"{OP}.yaml:" in str(err.value)


def _args():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((2, 3, 4)).astype(np.float32)
    return x, x


def test_the_binding_passes_each_tensors_format_to_aclcreatetensor():
    g, x = _args()
    with session.simulated(family="a2", profile="lenient"):
        kernels.clear_recorded()
        binding(g, x, formats={X: "NCHW", catalog.py_name(META, GRAD): "NC"}, validate=False)
        args = kernels.recorded(META["symbol"])[-1]["args"]
    enum = abi.ENUMS["aclFormat"]
    assert args[X]["format"] == enum["ACL_FORMAT_NCHW"]
    assert args[GRAD]["format"] == enum["ACL_FORMAT_NC"]
    assert args[OUT]["format"] == enum["ACL_FORMAT_ND"]


def test_a_format_the_spec_does_not_accept_is_refused_by_the_validator_and_the_simulator():
    g, x = _args()
    with session.simulated(family="a2", profile="spec"):
        with pytest.raises(AclnnValidationError) as err:
            binding(g, x, formats={X: "NHWC"})
        assert (err.value.status, err.value.check) == (PARAM_INVALID, "format")
        with pytest.raises(AclnnStatusError) as err:
            binding(g, x, formats={X: "NHWC"}, validate=False)
        assert err.value.status == PARAM_INVALID and "format NHWC" in err.value.recent_message
        np.testing.assert_array_equal(binding(g, x, formats={X: "ND"})[0], binding(g, x)[0])


def test_the_simulator_checks_the_format_it_received(tmp_path):
    """A check that reads the formats the descriptors carry (a spec that accepts NCHW on A2)."""
    meta = metadata.build(_spec_with(tmp_path, [{"families": ["a2"], "formats": ["ND", "NCHW"]}]))

    def check(_, values, *, family, version, formats):
        return validate(meta, values, family=family, version=version, formats=formats)

    g, x = _args()
    profile = kernels.Profile("nchw-on-a2", "self takes NCHW on A2", check=check)
    with session.simulated(family="a2", profile=profile):
        binding(g, x, formats={X: "NCHW"}, validate=False)
        with pytest.raises(AclnnStatusError) as err:
            binding(g, x, formats={catalog.py_name(META, GRAD): "NCHW"}, validate=False)
        assert err.value.status == PARAM_INVALID and GRAD in err.value.recent_message
    with session.simulated(family="training", profile=profile):
        with pytest.raises(AclnnStatusError) as err:
            binding(g, x, formats={X: "NCHW"}, validate=False)
        assert err.value.status == PARAM_INVALID


@pytest.mark.parametrize(
    "formats, error, message",
    [
        ({"nothing": "ND"}, TypeError, "no tensor of the op; its tensors are "),
        ({X: "NCWH"}, ValueError, "unknown tensor format 'NCWH'"),
        ([X, "ND"], TypeError, "formats must be a mapping"),
    ],
)
def test_a_bad_formats_argument_is_a_typed_error_naming_it(formats, error, message):
    g, x = _args()
    with session.simulated(family="a2"):
        with pytest.raises(error, match=message):
            binding(g, x, formats=formats)


def test_meta_of_every_built_in_op_is_nd_only():
    for snake in catalog.OPS:
        assert all(p.formats_at("a2", "9.1.0") == ("ND",) for p in op_meta(catalog.meta(snake)).tensors), snake


def test_the_audit_probes_each_tensors_formats():
    from aclnngen.audit.checks import audit_op  # deferred: the audit is heavy and only this test needs it

    def format_findings(profile):
        found = audit_op(OP, "sim", profile=profile, family="a2").findings
        return {(f.subject, f.group) for f in found if f.check == "format"}

    assert format_findings("spec") == set()  # ND accepted (every probe), NCHW refused
    # a library that checks no format accepts what the spec says it refuses
    assert format_findings("lenient") == {(f"{name} in NCHW on a2", "undocumented") for name in (GRAD, X, OUT)}


def test_diff_calls_a_lost_format_breaking_and_a_new_one_compatible(tmp_path):
    from aclnngen.codegen import specdiff

    base = _spec_data()
    wider = copy.deepcopy(base)
    wider["parameters"][_x_index(base)]["formats"] = [{"families": ["a2"], "formats": ["ND", "NCHW"]}]
    gained = specdiff.diff(specdiff.view(base, "9.1.0"), specdiff.view(wider, "9.1.0"))
    assert [(c.kind, c.what, c.message) for c in gained] == [("compatible", "format", f"{X} on a2: NCHW added")]
    lost = specdiff.diff(specdiff.view(wider, "9.1.0"), specdiff.view(base, "9.1.0"))
    assert [(c.kind, c.what) for c in lost] == [("breaking", "format")]
    nchw_only = copy.deepcopy(base)
    nchw_only["parameters"][_x_index(base)]["formats"] = [{"families": ["a2"], "formats": ["NCHW"]}]
    both = specdiff.diff(specdiff.view(base, "9.1.0"), specdiff.view(nchw_only, "9.1.0"))
    assert {(c.kind, c.message) for c in both} == {
        ("breaking", f"{X} on a2: ND removed"),
        ("compatible", f"{X} on a2: NCHW added"),
    }


def test_the_page_audit_sets_the_pages_formats_against_the_specs():
    from aclnngen.codegen.importer.agree import disagreements

    spec = _spec_data()
    page = copy.deepcopy(spec)  # a page that also lists NCHW for self
    page["parameters"][_x_index(spec)]["formats"] = [{"families": ["a2"], "formats": ["ND", "NCHW"]}]
    unexcused, excused = disagreements(spec, page, "8.5.0")
    assert [(c.what, c.where, c.family) for c in unexcused] == [("format", X, "a2")] and not excused
    spec.setdefault("defects", []).append(
        {"kind": "other", "note": f"the page lists NCHW for {X}, which the code refuses"}
    )
    unexcused, excused = disagreements(spec, page, "8.5.0")
    assert not unexcused and [c.what for c in excused] == ["format"]


def test_the_op_page_lists_each_tensors_formats(tmp_path):
    from aclnngen.codegen.view import OpView

    spec = _spec_with(tmp_path, [{"families": ["a2", "a3"], "formats": ["ND", "NCHW"]}])
    rows = {p["name"]: p["formats"] for p in OpView(spec, load_products()).docs.page["params"]}
    assert rows[X] == "ND, NCHW on a2, a3; ND elsewhere" and rows[GRAD] == "ND"
    assert all(rows[p.name] == "—" for p in spec.parameters if not p.is_tensor)
