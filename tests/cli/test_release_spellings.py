"""One rule for releases everywhere: the vendor's tags and the internal spellings are accepted
alike by every command and in the specs; a release no spec describes is refused the same way by
every command; `generate --cann R` renders only what the specs state at R; `diff OLD NEW` shows
the versioned facts; the change log is headed by the vendor's tags."""

from __future__ import annotations

import json
from pathlib import Path

import catalog
import pytest
import yaml

from aclnngen.codegen.loader import DEFAULT_SPECS_DIR, load_products, load_spec, spec_paths
from aclnngen.codegen.releases import covers, described
from aclnngen.core.releases import CannVersion, ReleaseError, as_release, release_of, vendor_tag
from packages import aclnngen
from repo_paths import PAGES

REPO = DEFAULT_SPECS_DIR.parent
# one op per structure (tests/catalog.py): a renamed op describes no other release and is left out
# at the same releases as the op it copies
SPECS = [load_spec(path, load_products()).spec for path in catalog.representative_specs()]
KNOWN = sorted(set().union(*(described(s) for s in SPECS)), key=CannVersion)


@pytest.fixture(scope="module")
def specs_folder(tmp_path_factory):
    """The SPECS as a specs directory, for the commands' --specs."""
    return catalog.representative_specs_folder(tmp_path_factory.mktemp("specs"))


@pytest.fixture
def cli():
    """`aclnngen ARGS` in this process (packages.aclnngen): the subject here is what the commands
    answer, not starting an interpreter (~0.3 CPU-s a run)."""
    return aclnngen


@pytest.mark.parametrize(
    "tag,internal",
    [
        ("v8.5.0", "8.5.0"),
        ("v9.2.0-beta.1", "9.2.RC1.alpha001"),
        ("v9.0.0-rc.1", "9.0.RC1"),
        ("v9.1.0.pre", "9.1.0.alpha099"),
        ("v9.0.1-beta.2", "9.0.1.alpha002"),
        ("v9.0.1-rc.1", "9.0.1.alpha051"),
    ],
)
def test_a_tag_and_its_internal_spelling_are_one_release(tag, internal):
    assert release_of(tag) == internal and release_of(internal) == internal
    assert vendor_tag(internal) == tag and vendor_tag(tag) == tag
    assert CannVersion(tag) == CannVersion(internal) and str(CannVersion(tag)) == internal


def test_tags_order_as_the_vendor_releases_them():
    order = ["v9.1.0", "v9.2.0-beta.1", "v9.2.0-beta.2", "v9.2.0-rc.1", "v9.2.0.pre", "v9.2.0", "9.3.RC1"]
    assert sorted(order[::-1], key=CannVersion) == order


def test_a_build_no_tag_stands_for_keeps_its_spelling():
    assert (
        vendor_tag("8.0.0.alpha002") == "8.0.0.alpha002"
        and as_release(vendor_tag("8.0.0.alpha002")) == "8.0.0.alpha002"
    )


@pytest.mark.parametrize("text", ["nine", "v9.x", "9.2", "9.2.0-gamma.1", ""])
def test_an_unknown_spelling_names_both_accepted_spellings(text):
    with pytest.raises(ReleaseError) as caught:
        release_of(text, "--cann")
    message = str(caught.value)
    assert f"--cann {text!r}" in message and "v9.2.0-beta.1" in message and "9.2.RC1.alpha001" in message


def _commands(release: str, spec: Path, out: Path, specs: Path) -> dict[str, list[str]]:
    return {
        "specs": ["specs", "--specs", str(specs), "--cann", release],
        "generate": ["generate", "--specs", str(specs), "--cann", release, "--out", str(out)],
        "diff": ["diff", str(spec), "--at", release, "--at", str(KNOWN[-1])],
    }


def test_every_command_refuses_an_unknown_spelling_the_same_way(cli, tmp_path, specs_folder):
    spec = spec_paths(DEFAULT_SPECS_DIR)[0]
    for name, args in _commands("v9.x", spec, tmp_path / "out", specs_folder).items():
        result = cli(*args)
        assert result.returncode == 1 and "Traceback" not in result.stderr, (name, result.stderr)
        assert "'v9.x' is not a CANN release" in result.stderr and "v9.2.0-beta.1" in result.stderr, (
            name,
            result.stderr,
        )
    imported = cli("import", str(PAGES / "english_variant.md"), "-o", str(tmp_path), "--release", "v9.x")
    assert imported.returncode == 1 and "--release 'v9.x' is not a CANN release" in imported.stderr


def test_every_command_refuses_a_release_no_spec_describes_the_same_way(cli, tmp_path, specs_folder):
    before = CannVersion(KNOWN[0])
    undescribed = next(r for r in ("v7.0.0", "v1.0.0") if CannVersion(r) < before)
    spec = spec_paths(DEFAULT_SPECS_DIR)[0]
    messages = {}
    for name, args in _commands(undescribed, spec, tmp_path / "out", specs_folder).items():
        result = cli(*args)
        assert result.returncode == 1 and "Traceback" not in result.stderr, (name, result.stderr)
        messages[name] = result.stderr.split(":", 1)[1]
        assert f"no spec describes CANN {undescribed}; releases the specs describe: " in result.stderr, (
            name,
            result.stderr,
        )
    assert messages["specs"] == messages["generate"]  # one rule, one message
    assert not (tmp_path / "out").exists()  # nothing rendered for a release no spec describes
    as_json = json.loads(
        cli("generate", "--specs", specs_folder, "--json", "--cann", undescribed, "--out", tmp_path / "out").stdout
    )
    assert as_json["ok"] is False and "no spec describes" in as_json["error"]


def test_the_tag_and_internal_spelling_give_the_same_table(cli, specs_folder):
    release = KNOWN[-1]
    by_tag = json.loads(cli("specs", "--specs", specs_folder, "--json", "--cann", vendor_tag(release)).stdout)
    by_name = json.loads(cli("specs", "--specs", specs_folder, "--json", "--cann", release).stdout)
    assert by_tag["rows"] == by_name["rows"] and by_tag["rows"]


def _partly_covered() -> str | None:
    """A release some spec describes at which another op's spec describes only later releases."""
    return next((r for r in KNOWN if any(not covers(s, r) for s in SPECS)), None)


def test_generate_at_a_release_leaves_out_ops_described_only_later(cli, tmp_path, specs_folder):
    release = _partly_covered()
    if release is None:
        pytest.skip("every spec describes the oldest release: no op to leave out")
    expected = sorted(s.name for s in SPECS if not covers(s, release))
    out = tmp_path / "pkg"
    result = cli("generate", "--specs", specs_folder, "--json", "--cann", vendor_tag(release), "--out", out)
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["left_out"] == expected
    rendered = {p.name for p in out.rglob("*") if p.is_file()}
    for spec in SPECS:
        present = f"{spec.snake_name}.md" in rendered
        assert present == (spec.name not in expected), spec.name
    index = (out / "docs" / "index.md").read_text()
    assert all(f"aclnn{name}]" not in index for name in expected)
    listed = json.loads(cli("specs", "--specs", specs_folder, "--json", "--cann", release).stdout)
    assert listed["left_out"] == expected and not {r["op"] for r in listed["rows"]} & set(expected)
    plain = cli("generate", "--specs", specs_folder, "--cann", release, "--out", out)
    assert plain.returncode == 0 and all(name in plain.stderr for name in expected) and "left out" in plain.stderr


def test_a_spec_may_spell_its_releases_as_the_vendor_tags_them(cli, tmp_path):
    source = next(p for p in spec_paths(DEFAULT_SPECS_DIR) if "since: 8.5.0" in p.read_text())
    text = source.read_text()
    version = yaml.safe_load(text)["cann_version"]
    tagged = text.replace(f"cann_version: {version}", f"cann_version: {vendor_tag(version)}").replace(
        "since: 8.5.0", "since: v8.5.0"
    )
    assert tagged != text
    (tmp_path / "ops").mkdir()
    path = tmp_path / "ops" / source.name
    path.write_text(tagged)
    products = load_products()
    spec, original = load_spec(path, products).spec, load_spec(source, products).spec
    assert spec == original  # kept in the internal spelling: the rest of the code compares one spelling
    result = cli("validate", str(path))
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_change_log_is_headed_by_the_vendors_tags():
    log = (REPO / "docs" / "changes.md").read_text(encoding="utf-8")
    headings = [line[3:] for line in log.splitlines() if line.startswith("## ")]
    assert headings
    for heading in headings:
        assert heading == vendor_tag(heading) and heading.startswith("v") == (
            vendor_tag(heading) != release_of(heading)
        )
