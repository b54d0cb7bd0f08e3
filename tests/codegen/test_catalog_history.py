"""`aclnngen catalog --history`: the pages of older release tags folded into each spec as versioned
facts (codegen/catalog_history.py), on a made-up repository of one made-up page (tests/data/pages)
whose support and dtypes change across its tags: no vendor mirror needed."""

from __future__ import annotations

import subprocess

import pytest
import yaml

from repo_paths import PAGES
from aclnngen.codegen import catalog, catalog_history
from aclnngen.codegen.errors import GenerateError
from aclnngen.codegen.loader import load_products
from aclnngen.codegen.specdiff import view

PRODUCTS = load_products()
HEAD = "9.2.RC1.alpha001"
PAGE = (PAGES / "table_variant.md").read_text(encoding="utf-8")
A3_ROW = "|  <term>Atlas A3 训练系列产品/Atlas A3 推理系列产品 </term>   |     √    |"
THREE = "<td>FLOAT、FLOAT16、BFLOAT16</td>"
PATH = "activation/demo/docs/aclnnDemoBackward.md"

# tag -> the page at that tag: 8.5.0 without A3 and without bfloat16, 9.0.0 as at HEAD but without
# bfloat16 on the output; a pre-release between them claims int32, which no released tag has
VERSIONS = {
    "v8.5.0": PAGE.replace(A3_ROW, A3_ROW.replace("√", "×")).replace(THREE, "<td>FLOAT、FLOAT16</td>"),
    "v9.0.0-beta.1": PAGE.replace(THREE, "<td>FLOAT、FLOAT16、BFLOAT16、INT32</td>"),
    "v9.0.0": PAGE[::-1].replace(THREE[::-1], "<td>FLOAT、FLOAT16</td>"[::-1], 1)[::-1],
    None: PAGE,  # HEAD
}


def _git(repo, *args):
    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.invalid", *args],
        cwd=repo,
        check=True,
        capture_output=True,
    )


@pytest.fixture(scope="module")
def mirror(tmp_path_factory):
    repo = tmp_path_factory.mktemp("history") / "ops-demo"
    (repo / PATH).parent.mkdir(parents=True)
    _git(repo, "init", "-q")
    for tag, text in VERSIONS.items():
        (repo / PATH).write_text(text, encoding="utf-8")
        _git(repo, "add", "-A")
        _git(repo, "commit", "-q", "-m", tag or "head")
        if tag:
            _git(repo, "tag", tag)
    return repo / ".git"


@pytest.fixture(scope="module")
def folded(mirror, tmp_path_factory):
    out = tmp_path_factory.mktemp("specs")
    report = catalog.survey([mirror], "HEAD", PRODUCTS, out, HEAD, history=[])
    (result,) = report.results
    return report, yaml.safe_load(result.spec_text), result


def test_the_release_tags_older_than_the_tip_are_folded_and_pre_releases_are_not(folded):
    report, spec, result = folded
    assert report.history.tags == ["v8.5.0", "v9.0.0"]
    assert result.stage == "generated" and report.history.verdicts == {
        ("ops-demo", "activation", "DemoBackward"): "folded 2"
    }
    assert "int32" not in result.spec_text  # only the pre-release's page claims it


def test_a_fact_gained_at_a_tag_starts_there_and_the_old_one_ends(folded):
    _, spec, _ = folded
    a3 = [e for e in spec["products"] if e["family"] == "a3"]
    assert {"family": "a3", "supported": False, "until": "9.0.0"} in a3 and {"family": "a3", "since": "9.0.0"} in a3
    grad = next(p for p in spec["parameters"] if p["name"] == "gradOutput")
    assert view(spec, "8.5.0").dtypes[("gradOutput", "a2")] == {"float32", "float16"}
    assert view(spec, "9.0.0").dtypes[("gradOutput", "a2")] == {"float32", "float16", "bfloat16"}
    assert any(g.get("since") == "9.0.0" and "bfloat16" in g["dtypes"] for g in grad["dtypes"])
    # the families whose facts end at one release with equal dtypes stay one group (as written)
    ended = [g for g in grad["dtypes"] if g.get("until") == "9.0.0"]
    assert [sorted(g["families"]) for g in ended] == [["a2", "ascend950"]]
    # the output gains bfloat16 one release later, at the tip
    assert view(spec, "9.1.0").dtypes[("out", "a2")] == {"float32", "float16"}
    assert view(spec, HEAD).dtypes[("out", "a2")] == {"float32", "float16", "bfloat16"}


def test_the_facts_at_the_tip_are_the_tip_page_s_and_its_parameters_rule(folded, mirror):
    _, spec, _ = folded
    head = yaml.safe_load(catalog.survey([mirror], "HEAD", PRODUCTS, None, HEAD).results[0].spec_text)
    assert view(spec, HEAD) == view(head, HEAD)
    assert spec["parameters"][0].keys() == head["parameters"][0].keys() and spec["rules"] == head["rules"]
    assert spec["prototypes"] == head["prototypes"]


def test_an_older_page_with_other_parameters_is_not_folded():
    head = {"name": "X", "products": [{"family": "a2"}], "parameters": [{"name": "self", "role": "input"}]}
    older = {"name": "X", "products": [{"family": "a3"}], "parameters": [{"name": "x", "role": "input"}]}
    spec, verdict = catalog_history.fold(head, [("9.0.0", older)], HEAD)
    assert spec is head and verdict == "no older page with these parameters"


@pytest.mark.parametrize(
    "tags,message",
    [
        (["v9.3.0"], "--history v9.3.0: not older than the release read at the tip (9.2.RC1.alpha001)"),
        (["latest"], "--history latest: not a release tag (e.g. v9.0.0)"),
    ],
)
def test_a_tag_that_is_no_older_release_is_a_clear_error(mirror, tags, message):
    with pytest.raises(GenerateError, match=message.replace("(", r"\(").replace(")", r"\)")):
        catalog.survey([mirror], "HEAD", PRODUCTS, None, HEAD, history=tags)
