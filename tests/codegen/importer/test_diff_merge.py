"""`aclnngen diff` classifies changes as a binding user feels them; `import --into` merges a newer
page as versioned facts and keeps the rest of the file as a person wrote it."""

from __future__ import annotations

import datetime
import json
from pathlib import Path

import catalog
import forkserver
import pytest
import yaml

from aclnngen.codegen.importer.draft import build_draft
from aclnngen.codegen.importer.merge import dump_round_trip, load_round_trip
from aclnngen.codegen.importer.pages import read_page
from aclnngen.codegen.loader import DEFAULT_SPECS_DIR, load_products, spec_paths
from aclnngen.codegen.specdiff import BREAKING, COMPATIBLE, diff, view
from aclnngen.core.releases import vendor_tag
from repo_paths import PAGES

PRODUCTS = load_products()

BASE = {
    "name": "DemoOp",
    "summary": "s",
    "cann_version": "8.0.0",
    "products": [{"family": "a2"}, {"family": "training"}],
    "prototypes": {
        "get_workspace_size": "aclnnStatus aclnnDemoOpGetWorkspaceSize(const aclTensor* x, const aclScalar* alpha, aclTensor* out, uint64_t* workspaceSize, aclOpExecutor** executor)"
    },
    "parameters": [
        {"name": "x", "role": "input", "dtypes": [{"families": ["a2", "training"], "dtypes": ["float32", "float16"]}]},
        {"name": "alpha", "role": "optional_scalar", "default": 1.0},
        {
            "name": "out",
            "role": "output",
            "dtypes": [{"families": ["a2", "training"], "dtypes": ["float32", "float16"]}],
        },
    ],
    "rules": [{"kind": "max_rank", "params": ["x"], "rank": 8}],
}


def changed(mutate) -> list:
    new = json.loads(json.dumps(BASE))
    mutate(new)
    return diff(view(BASE), view(new))


def kinds(changes) -> list[tuple[str, str]]:
    return [(c.kind, c.what) for c in changes]


def test_an_unchanged_spec_has_no_changes():
    assert changed(lambda s: None) == []


@pytest.mark.parametrize(
    "mutate,expected",
    [
        (lambda s: s["products"].append({"family": "a3"}), [(COMPATIBLE, "product")]),
        (lambda s: s["products"].pop(), [(BREAKING, "product")]),
        (
            lambda s: s["parameters"][0]["dtypes"][0]["dtypes"].append("bfloat16"),
            [(COMPATIBLE, "dtype"), (COMPATIBLE, "dtype")],
        ),
        (
            lambda s: s["parameters"][0]["dtypes"][0]["dtypes"].remove("float16"),
            [(BREAKING, "dtype"), (BREAKING, "dtype")],
        ),
        (lambda s: s["parameters"][1].update(default=2.0), [(BREAKING, "default")]),
        (lambda s: s["rules"].append({"kind": "same_shape", "params": ["x", "out"]}), [(BREAKING, "rule")]),
        (lambda s: s["rules"].clear(), [(COMPATIBLE, "rule")]),
        (lambda s: s["rules"].append({"kind": "empty", "params": ["x"], "allowed": True}), [(COMPATIBLE, "rule")]),
        (lambda s: s.update(summary="other words"), [(COMPATIBLE, "doc")]),
    ],
)
def test_each_kind_of_change_has_its_class(mutate, expected):
    assert kinds(changed(mutate)) == expected


def test_parameter_renames_retypes_reorders_additions_and_removals_are_breaking():
    def rename(s):
        s["parameters"][1]["name"] = "beta"
        s["prototypes"]["get_workspace_size"] = s["prototypes"]["get_workspace_size"].replace("alpha", "beta")

    assert [c.message for c in changed(rename)] == ["parameter renamed alpha -> beta"]

    def retype(s):
        s["prototypes"]["get_workspace_size"] = s["prototypes"]["get_workspace_size"].replace(
            "const aclScalar* alpha", "double alpha"
        )

    assert kinds(changed(retype)) == [(BREAKING, "parameter")]

    def reorder(s):
        s["parameters"][0], s["parameters"][1] = s["parameters"][1], s["parameters"][0]

    assert [c.message.split(":")[0] for c in changed(reorder)] == ["parameters reordered"]
    assert kinds(changed(lambda s: s["parameters"].pop(1))) == [(BREAKING, "parameter")]


def test_versioned_facts_are_compared_at_the_release_asked_for():
    spec = json.loads(json.dumps(BASE))
    spec["products"].append({"family": "a3", "since": "8.5.0"})
    assert diff(view(spec, "8.0.0"), view(spec, "8.0.0")) == []
    assert [c.message for c in diff(view(spec, "8.0.0"), view(spec, "8.5.0"))] == ["a3 supported"]


def _write(path: Path, data) -> Path:
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def test_diff_command_exit_status_json_and_allow_list(forked_cli, tmp_path):
    old = _write(tmp_path / "old.yaml", BASE)
    new_data = json.loads(json.dumps(BASE))
    new_data["products"].pop()
    new = _write(tmp_path / "new.yaml", new_data)
    same = forked_cli("diff", str(old), str(old), timeout=120)
    assert same.returncode == 0 and "0 change(s), 0 breaking" in same.stdout
    broke = forked_cli("diff", str(old), str(new), "--json", timeout=120)
    report = json.loads(broke.stdout)
    assert (
        broke.returncode == 1
        and report["breaking"] == 1
        and report["changes"][0]["message"] == "training no longer supported"
    )
    tomorrow = (datetime.date.today() + datetime.timedelta(days=1)).isoformat()
    allow = tmp_path / "allow.yaml"
    allow.write_text(
        f"- {{op: DemoOp, match: training no longer supported, reason: withdrawn by the vendor, expires: {tomorrow}}}\n"
    )
    allowed = forked_cli("diff", str(old), str(new), "--allow", str(allow), timeout=120)
    assert allowed.returncode == 0 and "allowed" in allowed.stdout
    allow.write_text("- {op: DemoOp, match: training no longer supported, reason: old, expires: 2020-01-01}\n")
    expired = forked_cli("diff", str(old), str(new), "--allow", str(allow), timeout=120)
    assert expired.returncode == 1
    allow.write_text("- {match: x}\n")
    bad = forked_cli("diff", str(old), str(new), "--allow", str(allow), timeout=120)
    assert (
        bad.returncode == 1
        and f"{allow}:1: each allow-list entry needs" in bad.stderr
        and "Traceback" not in bad.stderr
    )


def test_diff_of_one_spec_at_two_releases(forked_cli, tmp_path):
    spec = json.loads(json.dumps(BASE))
    spec["products"].append({"family": "a3", "since": "8.5.0"})
    path = _write(tmp_path / "demo_op.yaml", spec)
    result = forked_cli("diff", str(path), "--at", "8.0.0", "--at", "v8.5.0", timeout=120)
    assert result.returncode == 0 and "compatible product   a3 supported" in result.stdout


def test_every_spec_round_trips_unchanged_through_the_merge_reader():
    for path in spec_paths(DEFAULT_SPECS_DIR):
        assert dump_round_trip(load_round_trip(path)) == path.read_text(), path


def _finished(page: str, release: str) -> dict:
    """The draft of `page` with its TODOs done, as a person would finish it: a valid spec."""
    draft = build_draft(read_page(PAGES / page, PRODUCTS, release), PRODUCTS)
    draft.pop("todo")
    draft["summary"] = "A demo op."
    for param in draft["parameters"]:
        param["summary"] = "A demo parameter."
    draft["formula"]["outputs"] = {"out": "grad_output * alpha"}
    draft["oracle"] = {"kind": "aten", "op": "mul", "args": ["grad_output", "alpha"], "outputs": ["out"]}
    return json.loads(json.dumps(draft))  # no shared lists, so no YAML anchors


def test_merge_versions_changed_facts_and_keeps_comments(forked_cli, tmp_path):
    # the older page (table variant) as a curated spec with a comment a person wrote
    spec = tmp_path / "demo_backward.yaml"
    older = _finished("table_variant.md", "8.5.0")
    older["return_codes"] = [r for r in older["return_codes"] if r["status"] != 161001]  # an older table without it
    text = "# written by a person\n" + yaml.safe_dump(older, sort_keys=False)
    spec.write_text(text)
    result = forked_cli(
        "import", "--into", str(spec), "--release", "v9.2.0-beta.1", str(PAGES / "marker_variant.md"), timeout=120
    )
    # the page adds a parameter, which no versioned fact can say: a TODO the merged spec fails on
    assert result.returncode == 1 and "TODO parameters: at 9.2.RC1.alpha001: parameter keepSign" in result.stdout, (
        result.stdout
    )
    merged_text = spec.read_text()
    assert merged_text.startswith("# written by a person\n")
    merged = yaml.safe_load(merged_text)
    # 310b: absent from the old page, "not supported" on the new: no change in support, no new fact
    assert "atlas_200i_500_a2" not in [p["family"] for p in merged["products"]]
    groups = next(p for p in merged["parameters"] if p["name"] == "gradOutput")["dtypes"]
    # 950 gains int32 at the new release; its old facts end there
    assert {
        "families": ["ascend950"],
        "dtypes": ["float32", "float16", "bfloat16", "int32"],
        "since": "9.2.RC1.alpha001",
    } in groups
    assert {
        "families": ["ascend950"],
        "dtypes": ["float32", "float16", "bfloat16"],
        "until": "9.2.RC1.alpha001",
    } in groups
    assert view(merged, "8.5.0").dtypes == view(yaml.safe_load(text), "8.5.0").dtypes  # history unchanged
    # the new parameter is reported for a person, not merged
    assert "keepSign is only on the page" in result.stdout and "+++" in result.stdout
    assert "keepSign" not in [p["name"] for p in merged["parameters"]]
    assert [t["at"] for t in merged["todo"]] == ["parameters"]
    assert "compatible dtype" in result.stdout
    # the return-code table: a status the new page adds starts there; rows of a status both pages
    # have are a person's reading, left alone (a difference is a note)
    codes = {(r["status"], r["check"]): r for r in merged["return_codes"]}
    assert codes[(161001, "null_pointer")]["since"] == "9.2.RC1.alpha001"
    assert "breaking   return_code return code 161001 for null_pointer added" in result.stdout
    assert all("since" not in r and "until" not in r for r in merged["return_codes"] if r["status"] == 161002)
    assert view(merged, "8.5.0").return_codes == view(yaml.safe_load(text), "8.5.0").return_codes
    # a changed scalar bound: the old ends, the new starts
    alpha = next(p for p in merged["parameters"] if p["name"] == "alpha")
    assert any(c.get("since") == "9.2.RC1.alpha001" for c in alpha["constraints"])
    assert "breaking   rule      rule added: alpha >= 0.5" in result.stdout
    # the merged file is still a spec; one that is not is reported, with exit status 1
    broken = tmp_path / "broken" / "demo_backward.yaml"
    broken.parent.mkdir()
    broken.write_text(text.replace("summary: A demo op.", "summary: ''"))
    again = forked_cli(
        "import", "--into", str(broken), "--release", "v9.2.0-beta.1", str(PAGES / "marker_variant.md"), timeout=120
    )
    assert (
        again.returncode == 1 and "the merged spec does not validate" in again.stdout and f"{broken}:" in again.stdout
    )


def _product_gains():
    from aclnngen.codegen.loader import load_all
    from aclnngen.core.releases import CannVersion

    out = []
    kept = {catalog.meta(s)["name"] for s in catalog.representatives()}  # one op per structure
    for ls in load_all():
        if ls.spec.name not in kept:
            continue
        points = sorted({ls.spec.cann_version} | {p.since for p in ls.spec.products if p.since}, key=CannVersion)
        for fact in ls.spec.products:
            if fact.supported and fact.since and points.index(fact.since) > 0:
                out.append((ls.path, ls.spec.symbol, fact.family, points[points.index(fact.since) - 1], fact.since))
    return out


@pytest.mark.parametrize("path,symbol,family,before,since", _product_gains(), ids=lambda v: str(v))
def test_every_product_gained_shows_in_diff_and_in_the_change_log(forked_cli, path, symbol, family, before, since):
    result = forked_cli("diff", str(path), "--at", before, "--at", since, timeout=120)
    assert f"compatible product   {family} supported" in result.stdout, result.stdout
    log = (DEFAULT_SPECS_DIR.parent / "docs" / "changes.md").read_text()
    section = log.split(f"\n## {vendor_tag(since)}\n", 1)[1].split("\n## ", 1)[0]
    op_part = section.split(f"[{symbol}]", 1)[1].split("\n### ", 1)[0]
    assert f"**compatible** (product): {family} supported" in op_part


def test_generate_at_a_release_renders_only_the_facts_that_hold_there(forked_cli, tmp_path):
    out = tmp_path / "aclnn_at"
    gains = _product_gains()
    path, symbol, family, before, since = gains[-1]
    op = Path(path).stem  # that op alone: what a release renders is each op's own (a whole run adds only time)
    result = forked_cli("generate", "--cann", before, op, "--out", str(out), timeout=300)
    assert result.returncode == 0, result.stderr
    meta_text = (out / "meta" / f"{Path(path).stem}.py").read_text()
    assert f"'cann_version': '{before}'" in meta_text and f"'family': '{family}'" not in meta_text
    assert "'since': '" not in meta_text  # no versioned facts are left
    later = tmp_path / "aclnn_later"
    assert forked_cli("generate", "--cann", since, op, "--out", str(later), timeout=300).returncode == 0
    assert f"'family': '{family}'" in (later / "meta" / f"{Path(path).stem}.py").read_text()
    # the package of the later release runs the op on that family on the simulator; the earlier one refuses
    script = (
        "import sys, importlib\n"
        "from aclnngen.runtime import session\n"
        "from aclnngen.verify import cases\n"
        "from aclnngen.runtime.errors import AclnnValidationError\n"
        "from aclnngen.core.releases import simulator_spelling\n"
        "pkg, snake, family, release = sys.argv[1:5]\n"
        "meta = importlib.import_module(f'{pkg}.meta.{snake}').META\n"
        "binding = getattr(importlib.import_module(f'{pkg}.ops.{snake}'), snake)\n"
        "values = dict(cases.make_values(meta, 'contiguous', 'float32', version=release))\n"
        "ins = [values[p['name']] for p in meta['params'] if p['role'] == 'input']\n"
        "kw = {p['py']: values[p['name']] for p in meta['params'] if p['role'] not in ('input', 'output')}\n"
        "with session.simulated(family=family, version=simulator_spelling(release)):\n"
        "    try:\n"
        "        binding(*ins, **kw); print('ran')\n"
        "    except AclnnValidationError as e:\n"
        "        print('refused', e.check)\n"
    )
    runs = {}
    for folder, release in ((out, before), (later, since)):
        done = forkserver.run_script(script, folder.name, Path(path).stem, family, release, cwd=folder.parent)
        runs[release] = done.stdout.strip() or done.stderr[-500:]
    assert runs == {before: "refused product", since: "ran"}, runs


def test_merge_keeps_a_fact_the_spec_records_as_a_page_defect(forked_cli, tmp_path):
    draft = _finished("table_variant.md", "8.5.0")
    draft["defects"] = [
        {"kind": "dtype", "note": "the page's int32 on ascend950 is wrong", "since": "9.2.RC1.alpha001"}
    ]
    spec = _write(tmp_path / "demo_backward.yaml", draft)
    result = forked_cli(
        "import", "--into", str(spec), "--release", "v9.2.0-beta.1", str(PAGES / "marker_variant.md"), timeout=120
    )
    assert result.returncode == 1 and "TODO" in result.stdout, result.stdout  # the added parameter (above)
    merged = yaml.safe_load(spec.read_text())
    groups = next(p for p in merged["parameters"] if p["name"] == "gradOutput")["dtypes"]
    assert not any("ascend950" in g["families"] and "int32" in g["dtypes"] for g in groups)
    assert "gradOutput on ascend950" in result.stdout and "records a page defect there: kept" in result.stdout


def test_a_one_key_mapping_inside_a_flow_list_keeps_its_braces(tmp_path):
    text = (
        "oracle:\n  args: [grad_output, {dtype_of: grad_output}, {const: 0.0}]\n  kwargs: {approximate: {param: a}}\n"
    )
    path = tmp_path / "x.yaml"
    path.write_text(text, encoding="utf-8")
    assert dump_round_trip(load_round_trip(path)) == text


def test_a_rule_the_new_page_hints_at_is_a_note_never_a_merged_rule(forked_cli, tmp_path):
    draft = _finished("table_variant.md", "8.5.0")
    draft["rules"] = [r for r in draft["rules"] if r["kind"] != "max_rank"]
    spec = _write(tmp_path / "demo_backward.yaml", draft)
    result = forked_cli(
        "import", "--into", str(spec), "--release", "v9.2.0-beta.1", str(PAGES / "marker_variant.md"), timeout=120
    )
    assert "the page hints at a max_rank rule the spec does not have" in result.stdout, result.stdout
    assert "max_rank" not in {r["kind"] for r in yaml.safe_load(spec.read_text())["rules"]}


def test_diff_of_two_files_shows_the_versioned_facts_an_import_recorded(forked_cli, tmp_path):
    spec = tmp_path / "demo_backward.yaml"
    older = _finished("table_variant.md", "8.5.0")
    older["return_codes"] = [r for r in older["return_codes"] if r["status"] != 161001]
    spec.write_text(yaml.safe_dump(older, sort_keys=False))
    before = tmp_path / "before.yaml"
    before.write_text(spec.read_text())
    forked_cli("import", "--into", str(spec), "--release", "v9.2.0-beta.1", str(PAGES / "marker_variant.md"))
    assert spec.read_text() != before.read_text()
    files = forked_cli("diff", str(before), str(spec), "--json")
    at = forked_cli("diff", str(spec), "--at", "v8.5.0", "--at", "v9.2.0-beta.1", "--json")
    by_files, by_at = json.loads(files.stdout), json.loads(at.stdout)
    expected = {(c["kind"], c["what"], c["message"]) for c in by_at["changes"]}
    assert expected and any(kind == "breaking" for kind, _, _ in expected)
    shown = {(c["kind"], c["what"], c["message"]) for c in by_files["changes"]}
    assert expected <= shown  # every versioned change, classified as --at classifies it
    assert by_files["breaking"] >= by_at["breaking"] and files.returncode == 1
    assert all(
        c["at"] == ["v9.2.0-beta.1"] for c in by_files["changes"] if (c["kind"], c["what"], c["message"]) in expected
    )
    text = forked_cli("diff", str(before), str(spec))
    assert "(at v9.2.0-beta.1)" in text.stdout and "0 change(s)" not in text.stdout
