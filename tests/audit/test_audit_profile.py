"""Profiles as the audit's data: dtype lists per SoC from the vendor's code, and profiles saved from
what an audit observed (`--save-profile`), which the simulator then reproduces."""

from __future__ import annotations

import copy
import functools
import shutil

import catalog
import pytest

from aclnngen.audit import checks, observed, probe
from aclnngen.codegen.errors import SpecError
from aclnngen.codegen.loader import DEFAULT_SPECS_DIR, load_all, load_products, load_spec
from aclnngen.codegen.profiles import load_profiles
from aclnngen.generated import OPS
from aclnngen.generated import profiles as generated_profiles
from aclnngen.runtime import profiles
from aclnngen.core.rules import supported_dtypes

V = "8.5.0"


@functools.cache
def _specs():
    """Every op's spec by name, loaded once: the profiles name the ops they describe."""
    return {ls.spec.name: ls.spec for ls in load_all()}


def _library_view(result):
    """What a profile decides: the dtype matrix and the shape and return-code findings."""
    return result.matrix, sorted(
        (f.check, f.subject, f.observed) for f in result.findings if f.check in ("dtype", "shape", "return_code")
    )


def test_a_profile_dtype_list_replaces_the_page_list_on_hardtanh_families():
    meta = checks._op("hardtanh_backward").meta
    entry = {
        "op": meta["name"],
        "cann_version": V,
        "evidence": "test",
        "null_out_pointers": "checked",
        "changes": [],
        "dtypes": [
            {
                "params": ["gradOutput", "self", "out"],
                "families": ["a2"],
                "dtypes": ["float32"],
                "when": {},
                "reason": "t",
            }
        ],
    }
    table = {"narrow": {meta["name"]: {V: entry}}}
    original = generated_profiles.PROFILES
    generated_profiles.PROFILES = table
    try:
        narrowed = profiles.apply(meta, "narrow", "9.1.0")
        assert supported_dtypes(narrowed, "self", "a2", "9.1.0") == ("float32",)
        assert supported_dtypes(narrowed, "self", "training", "9.1.0") == supported_dtypes(
            meta, "self", "training", "9.1.0"
        )
        op = checks._op("hardtanh_backward")
        result = checks.audit(op, probe.bound_op("hardtanh_backward"), "sim", profile="narrow", family="a2")
    finally:
        generated_profiles.PROFILES = original
    found = {f.subject: f for f in result.findings if f.check == "dtype"}
    assert found["float16 on a2"].group == "mismatch" and found["bfloat16 on a2"].group == "mismatch"
    assert "float32 on a2" not in found
    assert result.matrix["a2"]["float16"] == "claimed, rejected"


def test_every_vendor_profile_lists_the_code_dtypes_per_family():
    """Each op's vendor profile carries the implementation's dtype lists for every family the op
    supports, with the code (path and tag) as evidence."""
    profiled = [
        s for s in OPS if profiles.select("vendor", checks._op(s).meta["name"], checks._newest(checks._op(s).meta))
    ]
    assert profiled, "no op has a vendor profile"
    for snake in profiled:
        meta = checks._op(snake).meta
        entry = profiles.select("vendor", meta["name"], checks._newest(meta))
        assert "op_api/aclnn_" in entry["evidence"] and " at v" in entry["evidence"], entry["evidence"]
        covered = {f for d in entry["dtypes"] for f in d["families"]}
        supported = {p["family"] for p in meta["products"] if p["supported"]}
        assert supported <= covered, f"{meta['name']}: no code dtype list for {sorted(supported - covered)}"


def test_a_dtype_list_naming_an_unknown_tensor_or_family_in_gelu_profile_is_rejected(tmp_path):
    shutil.copytree(DEFAULT_SPECS_DIR / "profiles", tmp_path / "profiles")
    bad = tmp_path / "profiles" / "vendor" / V / "gelu_backward.yaml"
    text = bad.read_text()
    bad.write_text(text.replace("params: [gradOutput, self]", "params: [gradOutput, approximate]", 1))
    with pytest.raises(SpecError) as info:
        load_profiles(tmp_path, _specs())
    assert "no tensor 'approximate'" in str(info.value) and "gelu_backward.yaml:" in str(info.value)
    bad.write_text(text.replace("families: [training, inference]", "families: [training, atlas_200i_500_a2]", 1))
    with pytest.raises(SpecError) as info:
        load_profiles(tmp_path, _specs())
    assert "'atlas_200i_500_a2' as no product it supports" in str(info.value)


@pytest.mark.parametrize("snake", catalog.representatives())
def test_a_saved_profile_reproduces_what_was_observed_and_claims_checked_never_exceed_claims(snake, tmp_path):
    """Audit under the vendor profile, save what was seen, audit under the saved profile: the
    simulator answers every dtype, shape and return-code probe the same way. The report's headline
    "claims checked: N of M": every probe is one claim; one the library could not be reached for is
    counted in M only."""
    op = checks._op(snake)
    seen = checks.audit(op, probe.bound_op(snake), "sim", profile="vendor")
    assert 0 < seen.checked <= seen.claims
    assert seen.claims - seen.checked == len(seen.errors)
    release = checks._newest(op.meta)
    data = observed.observed(seen, op.meta, release, source="sim", null_out_pointers="checked")
    path = observed.write(data, tmp_path / "profiles", "observed", snake, source="sim")
    spec = load_spec(DEFAULT_SPECS_DIR / "ops" / f"{snake}.yaml", load_products()).spec  # the one it names
    loaded = [p for name, p in load_profiles(tmp_path, {spec.name: spec}) if name == "observed"]
    assert [p.op for p in loaded] == [op.meta["name"]] and path.read_text().startswith(observed.MARK)
    original = generated_profiles.PROFILES
    generated_profiles.PROFILES = {
        **original,
        "observed": {op.meta["name"]: {release: loaded[0].model_dump(mode="python")}},
    }
    try:
        again = checks.audit(checks._op(snake), probe.bound_op(snake), "sim", profile="observed")
    finally:
        generated_profiles.PROFILES = original
    matrix_again, findings_again = _library_view(again)
    matrix_seen, findings_seen = _library_view(seen)
    assert matrix_again == matrix_seen
    # what no profile change can say is listed in the saved profile's notes, and only that differs
    unexplained = [
        f
        for f in set(findings_seen) ^ set(findings_again)
        if not any(f[1].rsplit(" on ", 1)[0] in n for n in data["notes"])
    ]
    assert not unexplained, (unexplained, data["notes"])


def test_recorded_fact_saving_merges_families_and_never_overwrites_a_persons_profile(tmp_path):
    op = checks._op("softshrink_backward")
    release = checks._newest(op.meta)
    runs = {}
    for family in ("a2", "training"):
        seen = checks.audit(op, probe.bound_op("softshrink_backward"), "sim", profile="vendor", family=family)
        runs[family] = observed.observed(seen, op.meta, release, source="cann", null_out_pointers="checked")
        path = observed.write(runs[family], tmp_path, "npu", "softshrink_backward", source="cann")
    (loaded,) = [p for name, p in load_profiles(_as_specs(tmp_path), _specs()) if name == "npu"]
    by_family = {f: tuple(d.dtypes) for d in loaded.dtypes for f in d.families}
    assert set(by_family) == {"a2", "training"}
    assert "bfloat16" in by_family["a2"] and "bfloat16" not in by_family["training"]
    hand = tmp_path / "npu" / release / "gelu_backward.yaml"
    hand.write_text("op: GeluBackward\n")
    gelu = checks._op("gelu_backward")
    data = observed.observed(
        checks.audit(gelu, probe.bound_op("gelu_backward"), "sim", profile="vendor", family="a2"),
        gelu.meta,
        release,
        source="cann",
        null_out_pointers="checked",
    )
    with pytest.raises(observed.SaveProfileError, match="not written by --save-profile"):
        observed.write(data, tmp_path, "npu", "gelu_backward", source="cann")
    assert hand.read_text() == "op: GeluBackward\n" and path.exists()


def _as_specs(profiles_dir):
    """load_profiles reads `<specs>/profiles/`: a specs folder whose profiles/ is `profiles_dir`."""
    specs = profiles_dir.parent / "specs-view"
    specs.mkdir(exist_ok=True)
    link = specs / "profiles"
    if not link.exists():
        link.symlink_to(profiles_dir, target_is_directory=True)
    return specs


def test_recorded_fact_save_profile_from_the_command_line(forked_cli, tmp_path):
    out = forked_cli(
        "audit",
        "--source",
        "sim",
        "--ops",
        "gelu_backward_v2",
        "--no-pictures",
        "--out",
        str(tmp_path / "report"),
        "--save-profile",
        "observed",
        "--profiles-dir",
        str(tmp_path / "profiles"),
        timeout=300,
    )
    assert out.returncode in (0, 1), out.stderr
    saved = list((tmp_path / "profiles" / "observed").glob("*/gelu_backward_v2.yaml"))
    assert len(saved) == 1 and "drop" in saved[0].read_text() and "max_rank" in saved[0].read_text()
    refused = forked_cli(
        "audit",
        "--source",
        "torch",
        "--ops",
        "swish_backward",
        "--save-profile",
        "x",
        "--out",
        str(tmp_path / "r2"),
        timeout=300,
    )
    assert refused.returncode == 2 and "--save-profile" in refused.stderr and "Traceback" not in refused.stderr


@pytest.mark.parametrize("snake", OPS)
def test_meta_copies_are_untouched_by_applying_a_profile(snake):
    meta = checks._op(snake).meta
    before = copy.deepcopy(meta)
    profiles.apply(meta, "vendor", "9.1.0")
    assert meta == before
