"""The whole vendor catalog: every aclnn page of the vendor's repositories at one tag, imported as
binding-tier specs (aclnngen/core/tiers.py), each taken as far as it goes (imported, valid,
generated) and the reason it stopped there counted.

The pages are read straight from a git directory of each repository (a mirror): `<category>/<op>/
docs/aclnn*.md`, experimental ones aside. A shared page (`aclnnX&aclnnInplaceX.md`) counts once as a
page and gives one spec per API. Specs land, when asked, under `<out>/<repo>/<category>/<api>.yaml`
(specs/catalog/ in the repository's layout); generation renders in memory, nothing is written.
"""

from __future__ import annotations

import re
import subprocess
import tempfile
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from . import catalog_history
from .catalog_history import History
from .catalog_definitions import OpDefinition, against, read_definition
from .cdecl import PrototypeError, normalize_prototype
from .errors import GenerateError, SpecError
from aclnngen.core.kinds import kind_of
from aclnngen.core.releases import as_release

from .importer.draft import TODO, build_draft, required_pointers, row_condition
from .importer.facts import PageFacts
from .importer.header import adopt_header, align_table
from .importer.markdown import read_markdown_apis
from .importer.pages import category_of
from .importer.writer import block_yaml
from .loader import load_spec
from .products import ProductTable

_PAGE = re.compile(r"^[^/]+/[^/]+/docs/aclnn[^/]*\.md$")
STAGES = ("imported", "valid", "generated", "tested")  # tested: passes its generated tests (--run-tests)


@dataclass
class ApiResult:
    repo: str
    page: str
    api: str | None
    category: str | None
    stage: str | None = None  # the last stage reached (None: not imported)
    reason: str | None = None  # why it stopped there
    spec_text: str | None = None
    prototype: str | None = None  # the spec's first-phase prototype, when imported
    header: str | None = None  # against the vendor header: "equal", "differs", BUILT, "absent"
    parted: str | None = None  # where a differing prototype parts from the header's
    page_parted: str | None = None  # where the page's own prototype parted from the header's it took
    inputs: tuple[str, ...] = ()  # the input tensors the page lists, in order (when imported)
    outputs: tuple[str, ...] = ()  # the tensors it writes: outputs and in-place inputs
    inplace: tuple[str, ...] = ()  # of those, the in-place inputs
    definition: str | None = None  # a BUILT API against its op definition: "agrees" / "differs"
    definition_parted: str | None = None


@dataclass
class CatalogReport:
    tag: str
    pages: dict[str, int] = field(default_factory=dict)  # repo -> pages found
    results: list[ApiResult] = field(default_factory=list)
    tested: bool = False  # whether the generated tests ran (then `tested` is the last stage)
    history: History | None = None  # with --history: the older tags' drafts and what folding did

    @property
    def stages(self) -> tuple[str, ...]:
        return STAGES if self.tested else STAGES[:-1]

    def count(self, stage: str) -> int:
        reached = STAGES[STAGES.index(stage) :]
        return sum(1 for r in self.results if r.stage in reached)

    def pages_reaching(self, stage: str) -> int:
        """Pages every API of which reaches `stage`."""
        by_page: dict[tuple[str, str], bool] = {}
        reached = STAGES[STAGES.index(stage) :]
        for r in self.results:
            key = (r.repo, r.page)
            by_page[key] = by_page.get(key, True) and r.stage in reached
        return sum(by_page.values())

    def headers(self) -> Counter:
        """Imported APIs by how their first-phase prototype compares with the vendor header's."""
        return Counter(r.header for r in self.results if r.header is not None)

    def definitions(self) -> Counter:
        """BUILT APIs by how their tensors compare with their op definition's."""
        return Counter(r.definition for r in self.results if r.definition is not None)

    def prototypes_held(self) -> int:
        """APIs whose first-phase prototype equals the vendor header's or, where the build writes
        the header, whose tensors agree with the op definition it is written from."""
        return self.headers()["equal"] + self.definitions()["agrees"]

    def summary(self) -> str:
        """The Done-when's three counts over every API, with their share."""
        total = len(self.results) or 1
        last = self.stages[-1]
        counts = (
            (self.count("imported"), "imported"),
            (self.count(last), "pass every generated test on the simulator" if self.tested else f"reach {last}"),
            (self.prototypes_held(), "have the vendor's prototype (header equal, or op definition agreeing)"),
        )
        return f"Of {len(self.results)} APIs: " + "; ".join(
            f"{n} {what} ({100 * n / total:.1f}%)" for n, what in counts
        )

    def reasons(self) -> Counter:
        return Counter(reason_group(r.reason) for r in self.results if r.stage != self.stages[-1])


def reason_group(reason: str | None) -> str:
    """A reason with its particulars (quoted names, numbers) blanked, so like reasons count together."""
    text = re.sub(r"'[^']*'|\"[^\"]*\"|`[^`]*`", "'…'", reason or "unknown")
    return re.sub(r"(?<![A-Za-z_])\d+(?![A-Za-z_])", "N", text)[:160]  # int8_t stays int8_t


def page_paths(git_dir: Path, tag: str) -> list[str]:
    """The aclnn pages of the repository at `tag`, experimental ones aside, in path order."""
    listed = _git(git_dir, "ls-tree", "-r", "--name-only", tag)
    return sorted(p for p in listed.splitlines() if _PAGE.match(p) and "experimental" not in p)


def read_blobs(git_dir: Path, tag: str, paths: list[str]) -> dict[str, str]:
    """Each file's text at `tag`, read in one `git cat-file --batch`."""
    request = "".join(f"{tag}:{p}\n" for p in paths).encode()
    done = subprocess.run(
        ["git", "--git-dir", str(git_dir), "cat-file", "--batch"], input=request, capture_output=True, check=False
    )
    if done.returncode != 0:
        raise GenerateError(f"git cat-file in {git_dir} failed: {done.stderr.decode(errors='replace').strip()}")
    out, data, at = {}, done.stdout, 0
    for path in paths:
        end = data.index(b"\n", at)
        header = data[at:end].split()
        if header[-1] == b"missing":
            at = end + 1
            continue
        size = int(header[2])
        out[path] = data[end + 1 : end + 1 + size].decode("utf-8", "replace")
        at = end + 1 + size + 1
    return out


def _git(git_dir: Path, *args: str) -> str:
    done = subprocess.run(["git", "--git-dir", str(git_dir), *args], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise GenerateError(f"git {' '.join(args)} in {git_dir} failed: {done.stderr.strip()}")
    return done.stdout


def repo_name(git_dir: Path) -> str:
    """`ops-nn` for /work/.mirror/hicann+ops-nn/repo or a folder named ops-nn(.git)."""
    for part in reversed(Path(git_dir).resolve().parts):
        if part not in ("repo", ".git"):
            return part.split("+")[-1].removesuffix(".git")
    return str(git_dir)


_HEADER = re.compile(r"(?:^|/)op_api/aclnn_[^/]*\.h$")
_OP_DEFINITION = re.compile(r"^([^/]+/[^/]+)/op_host/(?:[^/]+/)*[^/]*_def\.cpp$")
# An API whose op folder has an op definition (`op_host/<op>_def.cpp`) but no `op_api/aclnn_*.h`:
# the vendor's build writes its header from that definition, so the repository holds none to compare.
BUILT = "header written by the build"


def built_header_folders(listed: list[str]) -> set[str]:
    """`<category>/<op>` folders with an op definition: an API of such a folder that no header of
    the repository declares has the header the build writes from it (see BUILT), even where the
    folder's own header declares its other APIs (a V2 beside the plain one)."""
    return {m.group(1) for p in listed if (m := _OP_DEFINITION.match(p))}


_DECLARATION = re.compile(r"aclnnStatus\s+(aclnn[A-Za-z0-9_]*)\s*\(([^;{]*)\)\s*;")
_COMMENT = re.compile(r"/\*.*?\*/|//[^\n]*", re.S)


def header_prototypes(git_dir: Path, tag: str) -> dict[str, str]:
    """Function name -> its prototype, normalised (cdecl), over every `op_api/aclnn_*.h` of the
    repository at `tag`; a header outside experimental/ wins over one inside it."""
    listed = _git(git_dir, "ls-tree", "-r", "--name-only", tag).splitlines()
    paths = sorted((p for p in listed if _HEADER.search(p)), key=lambda p: ("experimental" in p, p))
    found: dict[str, str] = {}
    for path, text in read_blobs(git_dir, tag, paths).items():
        for match in _DECLARATION.finditer(_COMMENT.sub(" ", text)):
            name = match.group(1)
            if name in found:
                continue
            try:
                found[name] = normalize_prototype(f"aclnnStatus {name}({match.group(2)})")
            except PrototypeError:
                continue  # macros or attributes the prototype grammar does not take: not compared
    return found


def op_definitions(git_dir: Path, tag: str, listed: list[str], folders: set[str]) -> dict[str, OpDefinition]:
    """`<category>/<op>` folder -> its op definition, for the `folders` given (those whose header
    the build writes)."""
    paths: dict[str, list[str]] = {}
    for path in listed:
        match = _OP_DEFINITION.match(path)
        if match and match.group(1) in folders:
            paths.setdefault(match.group(1), []).append(path)
    texts = read_blobs(git_dir, tag, [p for found in paths.values() for p in found])
    return {folder: read_definition("\n".join(texts.get(p, "") for p in found)) for folder, found in paths.items()}


def compare_definitions(report: "CatalogReport", definitions: dict[str, dict[str, OpDefinition]]) -> None:
    """Marks each BUILT API whose input tensors and output count agree with its op definition's
    (codegen/catalog_definitions.py), else where they part."""
    for r in report.results:
        definition = definitions.get(r.repo, {}).get("/".join(r.page.split("/")[:2]))
        if r.header != BUILT or definition is None:
            continue
        r.definition_parted = against(list(r.inputs), list(r.outputs), definition, len(r.inplace))
        r.definition = "differs" if r.definition_parted else "agrees"


def compare_headers(
    report: "CatalogReport", headers: dict[str, dict[str, str]], built: dict[str, set[str]] | None = None
) -> None:
    """Marks each imported API whose first-phase prototype equals its header's (per repository);
    one without a header whose op folder is in `built` (repository -> folders) as BUILT."""
    for r in report.results:
        if r.stage is None or not r.prototype or r.prototype == TODO:
            continue
        declared = headers.get(r.repo, {}).get(f"aclnn{r.api}GetWorkspaceSize")
        if declared is None:
            folder = "/".join(r.page.split("/")[:2])
            r.header = BUILT if folder in (built or {}).get(r.repo, ()) else "absent"
            continue
        mine = normalize_prototype(r.prototype)
        r.header = "equal" if declared == mine else "differs"
        if r.header == "differs":
            r.parted = where_they_part(mine, declared)


def where_they_part(page: str, header: str) -> str:
    """The first parameter where two normalised prototypes differ, as `page X, header Y` (or the
    parameters one has beyond the other): enough to tell a misreading from the page's own text."""
    ours, theirs = (text[text.index("(") + 1 : text.rindex(")")].split(", ") for text in (page, header))
    for mine, declared in zip(ours, theirs):
        if mine != declared:
            return f"page `{mine}`, header `{declared}`"
    extra = ours[len(theirs) :] or theirs[len(ours) :]
    side = "page" if len(ours) > len(theirs) else "header"
    return f"only the {side} has `{', '.join(extra)}`"


def survey(
    mirrors: list[Path],
    tag: str,
    products: ProductTable,
    spec_out: Path | None = None,
    release: str | None = None,
    run_tests: bool = False,
    history: list[str] | None = None,
) -> CatalogReport:
    """The catalog at `tag` (a tag or HEAD); `release`: the CANN release its pages describe (default:
    `tag`, which must then be a release tag). With `run_tests`, every generated op's generated tests
    run on the simulator (codegen/catalog_tests.py) and those passing every case reach `tested`.
    With `history` (older release tags; empty: the mirrors' release tags older than `release`),
    each spec carries its facts' versions across those tags (codegen/catalog_history.py)."""
    release = release or tag
    report = CatalogReport(tag)
    if history is not None:
        report.history = older_drafts(mirrors, history, release, products)
        report.history.explicit = list(history)
    headers: dict[str, dict[str, str]] = {}
    built: dict[str, set[str]] = {}
    definitions: dict[str, dict[str, OpDefinition]] = {}
    with tempfile.TemporaryDirectory(prefix="aclnngen-catalog-") as scratch:
        for git_dir in mirrors:
            repo = repo_name(git_dir)
            paths = page_paths(git_dir, tag)
            report.pages[repo] = len(paths)
            texts = read_blobs(git_dir, tag, paths)
            headers[repo] = header_prototypes(git_dir, tag)
            listed = _git(git_dir, "ls-tree", "-r", "--name-only", tag).splitlines()
            built[repo] = built_header_folders(listed)
            definitions[repo] = op_definitions(git_dir, tag, listed, built[repo])
            for path in paths:
                page = texts.get(path, "")
                results = _page_results(
                    repo, path, page, release, products, Path(scratch), headers[repo], report.history
                )
                for result in results:
                    report.results.append(result)
                    if spec_out is not None and result.spec_text is not None and result.stage != "imported":
                        target = spec_out / repo / (result.category or "other") / f"{spec_stem(result.api)}.yaml"
                        target.parent.mkdir(parents=True, exist_ok=True)
                        target.write_text(result.spec_text, encoding="utf-8")
    compare_headers(report, headers, built)
    compare_definitions(report, definitions)
    if run_tests:
        mark_tested(report)
    if spec_out is not None:
        _remove_stale(spec_out, report)
    return report


def mark_tested(report: CatalogReport) -> None:
    """Runs the generated tests of every generated API; one passing every case reaches `tested`,
    one failing keeps `generated` with its first failing case as the reason."""
    from . import catalog_tests

    report.tested = True
    for generated in _batches([r for r in report.results if r.stage == "generated"]):
        found = catalog_tests.run({snake: r.spec_text for snake, r in generated.items()})
        for snake, r in generated.items():
            _mark(r, found[snake])


def _batches(results: list[ApiResult]) -> list[dict[str, ApiResult]]:
    """The results in batches of distinct op names: an API two pages document (an op's folder and
    its V2 folder) gives two specs of one name, which one generated package cannot hold."""
    batches: list[dict[str, ApiResult]] = []
    for r in results:
        snake = spec_stem(r.api)
        batch = next((b for b in batches if snake not in b), None)
        if batch is None:
            batches.append(batch := {})
        batch[snake] = r
    return batches


def _mark(r: ApiResult, verdict) -> None:
    """One passing every case reaches `tested`; one failing keeps `generated`, its first failing
    case the reason."""
    if verdict.failed:
        r.reason = f"{verdict.failed} of {verdict.passed + verdict.failed} generated tests fail, first {verdict.reason}"
    elif verdict.passed:
        r.stage = "tested"
    else:
        r.reason = "no generated test ran"


def _remove_stale(spec_out: Path, report: CatalogReport) -> None:
    """Specs under the surveyed repositories' folders that this survey did not write (an API gone,
    or no longer valid) are removed, so `--specs-out` leaves exactly the catalog it found."""
    written = {
        spec_out / r.repo / (r.category or "other") / f"{spec_stem(r.api)}.yaml"
        for r in report.results
        if r.spec_text is not None and r.stage != "imported"
    }
    for repo in report.pages:
        for path in sorted((spec_out / repo).rglob("*.yaml")):
            if path not in written:
                path.unlink()


def _page_results(
    repo: str,
    path: str,
    text: str,
    release: str,
    products: ProductTable,
    scratch: Path,
    declared: dict[str, str],
    history: History | None = None,
):
    category = category_of(Path(path))
    try:
        found = read_markdown_apis(text, path, products)
    except Exception as exc:  # noqa: BLE001 - a page the reader cannot read is counted, never fatal
        yield ApiResult(repo, path, None, category, reason=f"the reader failed: {type(exc).__name__}")
        return
    for facts in found:
        facts.release, facts.category = release, category
        adopt_header(facts, declared)
        align_table(facts)
        yield _api_result(repo, path, facts, products, scratch, history)


def older_drafts(mirrors: list[Path], tags: list[str], release: str, products: ProductTable) -> History:
    """Every API's catalog draft at each of the older release `tags` (none given: the release tags
    every mirror has, older than `release`), for `--history`."""
    tags = (
        catalog_history.ordered(tags, release)
        if tags
        else catalog_history.released_tags(catalog_history.mirror_tags(mirrors, _git), release)
    )
    history = History(tags)
    for tag in tags:
        at = as_release(tag)
        for git_dir in mirrors:
            repo = repo_name(git_dir)
            paths = page_paths(git_dir, tag)
            declared = header_prototypes(git_dir, tag)
            for path, text in read_blobs(git_dir, tag, paths).items():
                category = category_of(Path(path))
                try:
                    found = read_markdown_apis(text, path, products)
                except Exception:  # noqa: BLE001 - a page the reader cannot read has no history
                    continue
                for facts in found:
                    facts.release, facts.category = at, category
                    adopt_header(facts, declared)
                    align_table(facts)
                    if facts.op is not None and _not_imported(facts) is None:
                        if (draft := catalog_draft(facts, products)) is not None:
                            history.add((repo, category, facts.op), at, draft)
    return history


def catalog_draft(facts: PageFacts, products: ProductTable) -> dict | None:
    """The binding-tier draft a catalog spec is written from (no TODO list, readable rows only);
    None where the page has a C type the spec language lacks (`facts.unsupported_types`)."""
    draft = build_draft(facts, products, tier="binding")
    if facts.unsupported_types:
        return None
    draft.pop("todo", None)
    keep_readable_rows(draft)
    return draft


def _api_result(
    repo: str, path: str, facts: PageFacts, products: ProductTable, scratch: Path, history: History | None = None
) -> ApiResult:
    result = ApiResult(repo, path, facts.op, facts.category)
    if facts.op is None:
        result.reason = "the page has no `# aclnn<Op>` title"
        return result
    if facts.unsupported_types or not facts.params or len(facts.prototypes) < 2:
        draft = build_draft(facts, products, tier="binding")  # records the unsupported types
        result.reason = _not_imported(facts)
        if result.reason is not None:
            return result
    draft = catalog_draft(facts, products)
    if draft is None:
        result.reason = facts.unsupported_types[0]
        return result
    result.stage, result.prototype = "imported", draft["prototypes"].get("get_workspace_size")
    for key, page_prototype in facts.page_prototypes.items():
        if draft["prototypes"].get(key, TODO) != TODO and result.page_parted is None:
            result.page_parted = where_they_part(page_prototype, draft["prototypes"][key])
    tensors = [p for p in draft.get("parameters") or [] if isinstance(p, dict) and "dtypes" in p]
    result.inputs = tuple(p["name"] for p in tensors if p.get("role") == "input")
    result.outputs = tuple(p["name"] for p in tensors if p.get("role") == "output" or p.get("inplace"))
    result.inplace = tuple(p["name"] for p in tensors if p.get("inplace"))
    head, key = draft, (repo, facts.category or "other", facts.op)
    if history is not None:
        draft = history.fold(key, head, facts.release)
    spec_path = scratch / f"{spec_stem(facts.op)}.yaml"
    try:
        result.spec_text, loaded = _written(draft, spec_path, products)
    except SpecError as exc:
        if history is None or draft is head:
            result.spec_text, result.reason = block_yaml(head), exc.problems[0].message
            return result
        # an older page's facts break a spec the newest page makes: it keeps the newest page alone
        history.verdicts[key] = "the merged spec does not validate"
        try:
            result.spec_text, loaded = _written(head, spec_path, products)
        except SpecError as exc:
            result.spec_text, result.reason = block_yaml(head), exc.problems[0].message
            return result
    result.stage = "valid"
    try:
        _render(loaded, products, scratch)
    except Exception as exc:  # noqa: BLE001 - counted as the reason the op does not generate
        result.reason = f"generate failed: {type(exc).__name__}: {' '.join(str(exc).split())[:120]}"
        return result
    result.stage = "generated"
    return result


def _written(draft: dict, spec_path: Path, products: ProductTable):
    """(the spec's text, the spec loaded from it); SpecError where it does not validate."""
    text = block_yaml(draft)
    spec_path.write_text(text, encoding="utf-8")
    return text, load_spec(spec_path, products)


def spec_stem(op: str) -> str:
    """The file name a spec of `op` must have (OpSpec.snake_name's rule)."""
    return re.sub(r"(?<!^)(?=[A-Z])", "_", op).lower()


def keep_readable_rows(draft: dict) -> None:
    """A catalog spec keeps what the spec language holds of what the importer read: rules that name
    no list, and the return-code rows the importer classified, each naming the parameters its check
    can test (a null-pointer row the required pointers, a rule's row those a rule of its kind names);
    the rest waits for a person, as the draft's TODOs say."""
    params = {p["name"]: p for p in draft.get("parameters") or [] if isinstance(p, dict)}
    lists = {n for n, p in params.items() if p.get("list")}
    rules = [r for r in draft.get("rules") or [] if not set(kind_of(r).names(r)) & lists]
    if "rules" in draft:
        draft["rules"] = rules
    rows = draft.get("return_codes")
    if not isinstance(rows, list):
        return
    covered: dict[str, set[str]] = {}
    for r in rules:
        covered.setdefault(r["kind"], set()).update(kind_of(r).names(r))
    pointers = set(required_pointers(list(params.values())))
    testable = {
        "null_pointer": lambda n: n in pointers,
        "dtype": lambda n: params.get(n, {}).get("role") in ("input", "output"),
    }
    kept = []
    for r in rows:
        check = r.get("check")
        if not isinstance(r.get("params"), list) or check == TODO:
            continue
        if check == "null_pointer" and r.get("status") != 161001:
            continue  # a misread row: a NULL is 161001 on every page
        can = testable.get(check) or (lambda n, c=check: n in covered.get(c, ()) and n not in lists)
        names = [n for n in r["params"] if can(n)]
        if names:
            kept.append({**r, "params": names, "condition": row_condition(check, names)})
    draft["return_codes"] = kept or TODO


def _not_imported(facts: PageFacts) -> str | None:
    if facts.unsupported_types:
        return facts.unsupported_types[0]
    if set(facts.prototypes) == {"launch"}:
        # a host-side helper (a size query, a weight transform): no executor, nothing to launch
        return "a one-phase API (no GetWorkspaceSize function): the spec language holds two-phase APIs"
    if len(facts.prototypes) < 2:
        return "the page prints no prototype pair"
    if not facts.params:
        return "the page has no parameter table the reader can read"
    return None


def _render(loaded, products: ProductTable, scratch: Path) -> None:
    """Every output of the op rendered in memory, as `generate --specs --out` would write them."""
    from . import generate

    layout = generate.package_layout(scratch / "pkg")
    generate._render_op(scratch, layout, loaded, products)


_COLUMNS = {"imported": "imported", "valid": "valid", "generated": "generated", "tested": "pass their tests"}


def _flags(report: CatalogReport) -> str:
    """The command line's options that decide the report's stages, so the page says how to redo it."""
    flags = " --run-tests" if "tested" in report.stages else ""
    if report.history is not None:
        flags += " --history" + "".join(f" {t}" for t in report.history.explicit)
    return flags


def _table(columns: tuple[str, ...], rows) -> list[str]:
    """A markdown table: its header, its rule and a line per row, a `|` inside a cell written `/`."""

    def line(cells) -> str:
        return "| " + " | ".join(str(c).replace("|", "/") for c in cells) + " |"

    return [line(columns), "|---" * len(columns) + "|", *(line(row) for row in rows)]


def markdown(report: CatalogReport) -> str:
    """docs/catalog.md: the counts per stage and every API left out with its reason (deterministic)."""
    lines = [
        "# The vendor catalog",
        "",
        f"<!-- Written by `aclnngen catalog{_flags(report)} --write docs/catalog.md`; do not edit by hand. -->",
        "",
        f"Every aclnn page of the vendor's repositories at `{report.tag}`, imported as binding-tier specs.",
        "",
    ]
    per_repo = []
    for repo, pages in sorted(report.pages.items()):
        mine = [r for r in report.results if r.repo == repo]
        counts = [sum(1 for r in mine if r.stage in STAGES[i:]) for i in range(len(report.stages))]
        per_repo.append((repo, pages, len(mine), *counts))
    lines += _table(("repository", "pages", "APIs", *(_COLUMNS[s] for s in report.stages)), per_repo)
    compared = report.headers()
    lines += ["", report.summary() + "."]
    if report.history is not None:
        counts = sorted(report.history.counts().items(), key=lambda kv: (-kv[1], kv[0]))
        lines += [
            "",
            f"History (`--history`, codegen/catalog_history.py): the pages of {', '.join(report.history.tags)} "
            "folded into each spec as versioned facts: " + ", ".join(f"{n} {k}" for k, n in counts) + ".",
        ]
    lines += [
        "",
        "First-phase prototypes of the imported APIs against the vendor's headers (`op_api/aclnn_*.h` at the same tag): "
        + ", ".join(f"{n} {what}" for what, n in sorted(compared.items()))
        + f". A {BUILT!r} API has an op definition (`op_host/<op>_def.cpp`) and no header in its"
        " folder: the vendor's build writes that header, so the repository has none to compare with;"
        " 'absent' has neither.",
    ]
    disagreeing = sorted((r for r in report.results if r.page_parted), key=lambda r: (r.repo, r.api))
    if disagreeing:
        lines += [
            "",
            "Where the header declares an API, its spec takes the header's prototypes (the ABI a binding"
            " must call); the page's own, where they differ, stay in the spec as `page_prototypes` with a"
            f" `prototype` defect. {len(disagreeing)} pages print a prototype that parts from the header's:",
            "",
            *_table(
                ("repository", "API", "where the page parts from the header"),
                [(r.repo, r.api, r.page_parted) for r in disagreeing],
            ),
        ]
    unequal = sorted((r for r in report.results if r.header in ("differs", "absent")), key=lambda r: (r.repo, r.api))
    if unequal:
        lines += [
            "",
            "Where a spec's prototype differs from the header's or no header declares it, the first"
            " parameter where they part.",
            "",
            *_table(
                ("repository", "API", "against the header", "where they part"),
                [(r.repo, r.api, r.header, r.parted or "-") for r in unequal],
            ),
        ]
    against_definitions = report.definitions()
    if against_definitions:
        differ = [r for r in sorted(report.results, key=lambda r: (r.repo, r.api or "")) if r.definition == "differs"]
        lines += [
            "",
            f"The {BUILT!r} APIs against their op definition (`op_host/<op>_def.cpp`, from which the"
            " build writes the header): the page's input tensors, in order, against the definition's"
            " inputs (names compared case, underscores and an Optional/Ref/Out suffix aside) and as"
            " many outputs: " + ", ".join(f"{n} {what}" for what, n in sorted(against_definitions.items())) + ".",
            "",
            *_table(
                ("repository", "API", "against the op definition", "where they part"),
                [(r.repo, r.api, r.definition, r.definition_parted or "-") for r in differ],
            ),
        ]
    reasons = sorted(report.reasons().items(), key=lambda kv: (-kv[1], kv[0]))
    lines += ["", "## Why APIs stop short", "", *_table(("APIs", "reason"), [(n, reason) for reason, n in reasons])]
    left_out = [
        (r.repo, r.page, r.api or "-", r.stage or "not imported", " ".join((r.reason or "").split())[:200])
        for r in sorted(report.results, key=lambda r: (r.repo, r.page, r.api or ""))
        if r.stage != report.stages[-1]
    ]
    lines += ["", "## Every API left out", "", *_table(("repository", "page", "API", "stage", "reason"), left_out)]
    return "\n".join(lines) + "\n"
