"""Bounded input in the page readers and the header scanner (docs/security.md, "Limits on doc pages
and headers"): every public parse entry point takes hostile text of about 50 KB (long runs of
blanks, `#`, `|`, `<`, `*`, backticks, unclosed tags and comments, very long lines, 10,000 rows)
in well under the bound here, which is generous for a loaded 2-core machine; each input is put
where each reader looks (a heading, a table cell, a product line, a note, a parameter bullet).
50 KB is enough for a quadratic reader to fail: the gentlest one below (html.parser's, 22 s at
96 KB) would take 6 s there, three times the bound; a header is scanned at 100 KB, a page once more
at the size limit (1 MiB).

On the code before these limits, a heading followed by 4,000 blanks took 101 s, 16,000 unclosed
`<a x='` 22 s in html.parser, one colspan of 300,000,000 took 4.7 GB, and a 4.5 MB header 49 s:
each case here stops at the bound (an alarm), so a regression fails instead of hanging."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st

from aclnngen.audit import headers
from aclnngen.codegen.importer import text as page_text
from aclnngen.codegen.importer.draft import build_draft
from aclnngen.codegen.importer.pages import MAX_PAGE_BYTES, read_page
from aclnngen.codegen.loader import load_products
from repo_paths import PAGES

FIXTURES = ("table_variant.md", "marker_variant.md", "english_variant.md", "saved_variant.txt")
PRODUCTS = load_products()
BOUND_SECONDS = 2.0
CLI = [sys.executable, "-m", "aclnngen.codegen.cli"]
N = 50_000  # a page payload's size (the docstring says why this is enough)
HEADER_N = 100_000
# the scalars the fixtures name, so a payload's sentences are read as bounds on them
SCALARS = "alpha betaOptional beta lambd "

PAYLOADS = {
    "blanks": " " * N + "x",
    "tabs": "\t" * N + "x",
    "blank lines": (" " * 99 + "\n") * (N // 100) + "x",
    "hashes": "#" * N,
    "hash blanks": "# " * (N // 2) + "x",
    "pipes": "|" * N,
    "pipe rows": "| <term>Atlas A2 训练系列产品</term> | √ |\n" * (N // 40),
    "less-thans": "<" * N,
    "unclosed table tags": "<table" * (N // 6),
    "unclosed cells": "<table><tr>" + "<td>" * (N // 4),
    "unclosed attributes": "<a x='" * (N // 6),
    "unclosed end tags": "</" * (N // 2),
    "unclosed comments": "<!--" * (N // 4),
    "unclosed marker": '<!-- npu="' * (N // 10),
    "open tags": "<a" * (N // 2),
    "one long tag name": "<" + "a" * N,
    "breaks": "<p" * (N // 2),
    "terms": "<term>" * (N // 6),
    "stars": "*" * N,
    "backticks": "`" * N,
    "fences": "```\n" * (N // 4),
    "one long word": "a" * N + "-",
    "letters and digits": "a9" * (N // 2) + "-",
    "formula markers": "$$" + "x" * N,
    "bullet blanks": "- " + " " * N + "x",
    "bullet colons": "- " + "a：" * (N // 2) + "：",
    "parameter bullet blanks": "x(" + " " * N + "y",
    "parameter bullet commas": "x(a," + " " * N + "y",
    "note blanks": "- a" + " " * N + "b：" + " " * N + "x",
    "dtype words": "数据类型" * (N // 4),
    "dtype word blanks": "dtype " * (N // 6),
    "only-on remarks": "A(仅" * (N // 3),
    "only-on capitals": "A" * N + "(仅",
    "bound subject": SCALARS + "a" * N + "-大于1",
    "bound condition": SCALARS + "当" + "a" * N + "-大于1",
    "bool conditions": SCALARS + "当" + "a9" * (N // 2) + " is 大于1",
    "entities": "&" * N,
    "10000 rows": "<table>" + "<tr><td>x</td><td>输入</td><td>a</td></tr>\n" * 10_000 + "</table>",
    "10000 return codes": "<table><tr><th>错误码</th></tr>"
    + "<tr><td>E</td><td>161001</td><td>alpha空指针</td></tr>\n" * 3_000
    + "</table>",
    "colspan": '<table><tr><td colspan="300000000">x</td></tr></table>',
    "rowspan": '<table><tr><td rowspan="300000000">x</td></tr>' + "<tr><td>y</td></tr>" * 100 + "</table>",
    "spans": "<table>" + '<tr><td colspan="1000" rowspan="65534">x</td></tr>' * 2_000 + "</table>",
    "long prototype": "aclnnStatus aclnnDemoBackwardGetWorkspaceSize("
    + "const aclTensor* a, " * 5_000
    + "uint64_t* w)",
}


class TooSlow(Exception):
    pass


@contextmanager
def bounded(what: str, seconds: float = BOUND_SECONDS):
    """Fails the test when the block uses more than `seconds` of this process's CPU time (a
    profiling timer interrupts even a regex). CPU time, not wall time: other processes' load on a
    shared machine does not count against the parser."""

    def alarm(*_):
        raise TooSlow(f"{what}: over {seconds} s of CPU time")

    previous = signal.signal(signal.SIGPROF, alarm)
    signal.setitimer(signal.ITIMER_PROF, seconds)
    start = time.process_time()
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_PROF, 0)
        signal.signal(signal.SIGPROF, previous)
    assert time.process_time() - start < seconds, what


def _sites(lines: list[str]) -> dict[str, int]:
    """Where each reader looks, as line indexes of the page."""

    def first(test):
        return next((i for i, line in enumerate(lines) if test(line)), None)

    def last(test):
        return next((i for i in range(len(lines) - 1, -1, -1) if test(lines[i])), None)

    sites = {
        "title": first(lambda ln: ln.lstrip("# ").startswith("aclnn")),
        "first cell": first(lambda ln: "<td" in ln),
        "last cell": last(lambda ln: "<td" in ln),
        "product": first(lambda ln: ln.strip().startswith(("|", "•", "- ", "* "))),
        "note": last(lambda ln: ln.strip().startswith(("- ", "* ", "•"))),
        "parameter": first(lambda ln: "(aclTensor" in ln),
        "fence": first(lambda ln: ln.strip().startswith("```")),
    }
    return {k: v for k, v in sites.items() if v is not None}


def _hostile_page(name: str, site: int, payload: str) -> str:
    lines = (PAGES / name).read_text(encoding="utf-8").splitlines()
    line = lines[site]
    cell = line.find("<td")
    if cell >= 0 and ">" in line[cell:]:  # inside the cell
        at = line.index(">", cell) + 1
        lines[site] = line[:at] + payload + line[at:]
    else:
        lines[site] = line + payload
    return "\n".join(lines) + "\n"


def _read(tmp_path: Path, name: str, text: str):
    page = tmp_path / name
    page.write_text(text, encoding="utf-8")
    facts = read_page(page, PRODUCTS)
    return facts, build_draft(facts, PRODUCTS)


SITES = {name: _sites((PAGES / name).read_text(encoding="utf-8").splitlines()) for name in FIXTURES}


# one test per payload, every page and reader inside: a thousand tiny items would cost the suite
# more in bookkeeping than in reading
@pytest.mark.parametrize("payload", PAYLOADS)
def test_each_hostile_text_where_each_reader_looks_is_read_in_linear_time(tmp_path, payload):
    for name, sites in SITES.items():
        for site, index in sites.items():
            text = _hostile_page(name, index, PAYLOADS[payload])
            with bounded(f"{payload!r} at the {site} of {name}"):
                facts, draft = _read(tmp_path, name, text)
            assert draft["todo"] and "name" in draft, f"{payload!r} at the {site} of {name}"


@pytest.mark.parametrize("payload", PAYLOADS)
def test_each_hostile_text_alone_is_a_page_read_in_linear_time(tmp_path, payload):
    for name in ("alone.md", "alone.txt"):
        with bounded(f"{payload!r} as {name}"):
            _read(tmp_path, name, PAYLOADS[payload])


ATOMS = [
    " ",
    "\t",
    "\n",
    "#",
    "|",
    "<",
    ">",
    "*",
    "`",
    "(",
    ")",
    "（",
    "：",
    ":",
    "-",
    "a",
    "9",
    '"',
    "'",
    "=",
    "<table",
    "<tr>",
    "<td>",
    "</td>",
    "<!--",
    "-->",
    "<term>",
    "$$",
    "数据类型",
    "支持",
    "仅",
    "大于",
    "当",
    "aclnnStatus ",
    "aclnnFoo",
    " is true",
    'colspan="99999"',
    "# aclnnFoo",
    "## aclnnFooGetWorkspaceSize\n",
]


@settings(max_examples=25, deadline=None)
@given(
    atoms=st.lists(st.sampled_from(ATOMS), min_size=1, max_size=4),
    repeat=st.integers(2_000, 20_000),
    tail=st.sampled_from(["", "x", "\n", ")", "。"]),
)
def test_runs_of_hostile_atoms_are_read_in_linear_time(tmp_path_factory, atoms, repeat, tail):
    """A run of a few hostile pieces, repeated up to about 50 KB, read as both kinds of page."""
    unit = "".join(atoms)
    text = unit * max(1, min(repeat, N // len(unit))) + tail
    folder = tmp_path_factory.mktemp("atoms")
    for name in ("atoms.md", "atoms.txt"):
        with bounded(f"{atoms!r} x {repeat} as {name}"):
            _read(folder, name, text)


def test_a_colspan_of_300_million_is_read_as_1000_and_said_so():
    notes: list[str] = []
    [(grid, problems)] = page_text.html_tables(
        '<table><tr><td colspan="300000000">x</td><td>y</td></tr></table>', notes
    )
    assert grid == [["x"] * page_text.MAX_COLSPAN + ["y"]]
    assert notes == ['table 1, row 0: colspan="300000000" read as 1000']


def test_a_table_over_the_cell_limit_is_skipped_and_reported_not_parsed(tmp_path):
    rows = '<tr><td colspan="1000">x</td></tr>' * (page_text.MAX_TABLE_CELLS // 1000 + 1)
    notes: list[str] = []
    small, large = page_text.html_tables("<table><tr><td>a</td></tr></table><table>" + rows + "</table>", notes)
    assert small == ([["a"]], []) and large == ([], [])
    assert notes == [f"table 2: more than {page_text.MAX_TABLE_CELLS} cells with its spans filled in (not read)"]
    # through the importer: the draft's 'not parsed' list says so
    text = (
        (PAGES / "table_variant.md")
        .read_text(encoding="utf-8")
        .replace("<table", "<table>" + rows + "</table><table", 1)
    )
    facts, _ = _read(tmp_path, "table_variant.md", text)
    assert any("cells with its spans filled in (not read)" in u for u in facts.unparsed)


def test_rowspans_fill_only_the_rows_that_exist():
    [(grid, problems)] = page_text.html_tables(
        '<table><tr><td rowspan="300000000">x</td></tr><tr><td>y</td></tr></table>'
    )
    assert grid == [["x"], ["x", "y"]] and len(problems) == 1


def test_a_cell_closed_inside_a_table_opened_after_it_is_read_not_an_exception():
    # a table inside a cell: the tokenizer keeps no stack, so the cell ends in the inner table
    assert page_text.html_tables("<table><tr><td>a<table></td><td>b</td></tr></table></table>") == [
        ([], []),
        ([["a", "b"]], []),
    ]


def test_unclosed_markup_is_text_and_closed_markup_after_it_still_counts():
    [(grid, _)] = page_text.html_tables("<table><tr><td>a <!-- b</td><td>c &lt; d <x y='</td></tr></table>")
    assert grid == [["a <!-- b", "c < d <x y='"]]
    assert list(page_text.between("$$a$$b$$c", "$$", "$$")) == ["a"]
    assert page_text.outside("x<table>y</table>z<table>w", "<table", "</table>") == "xz<table>w"


# --- the C header scanner (audit --headers) ---

PROTO = (
    "ACLNN_API aclnnStatus aclnnFoo{}GetWorkspaceSize(const aclTensor* self, aclTensor* out,\n"
    '    uint64_t* workspaceSize, aclOpExecutor** executor) __attribute__((visibility("default")));\n'
)


def _header(tmp_path: Path, text: str) -> Path:
    folder = tmp_path / "include" / "aclnnop"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "aclnn_foo.h").write_text(text, encoding="utf-8")
    return tmp_path / "include"


HEADER_PAYLOADS = {
    "unclosed comments": "/* " * 33_000,
    "comment openers": "/*" * 50_000,
    "line comments": "//\n" * 30_000,
    "declarations without a semicolon": "aclnnStatus aclnnX(" * 5_000,
    "names without a parenthesis": "aclnnStatus aclnnX " * 5_000,
    "unclosed attributes": "aclnnStatus aclnnX(" + "__attribute__((" * 7_000 + ");",
    "blanks": "aclnnStatus" + " " * HEADER_N,
    "blank lines": "\n" * HEADER_N,
}


@pytest.mark.parametrize("payload", HEADER_PAYLOADS)
def test_each_hostile_header_is_scanned_in_linear_time(tmp_path, payload):
    include = _header(tmp_path, PROTO.format(1) + HEADER_PAYLOADS[payload] + "\n" + PROTO.format(2))
    with bounded(f"header with {payload}", 1.0):
        found = headers.declarations(include)
    assert "aclnnFoo1GetWorkspaceSize" in found


def test_a_4_5_mb_header_is_scanned_in_seconds_and_its_lines_are_right(tmp_path):
    include = _header(tmp_path, "".join(PROTO.format(i) for i in range(25_000)))
    assert (include / "aclnnop" / "aclnn_foo.h").stat().st_size > 4_500_000
    with bounded("a 4.5 MB header", 5.0):
        found = headers.declarations(include)
    assert len(found) == 25_000
    text, where = found["aclnnFoo24999GetWorkspaceSize"]
    assert where.endswith(f"aclnn_foo.h:{2 * 24_999 + 1}")
    assert text.startswith("aclnnStatus aclnnFoo24999GetWorkspaceSize(") and "__attribute__" not in text
    assert "ACLNN_API" not in text and text.endswith("executor)")


def test_a_header_over_the_limit_or_a_fifo_is_refused_by_name(tmp_path):
    include = tmp_path / "include"
    (include / "aclnnop").mkdir(parents=True)
    fifo = include / "aclnnop" / "aclnn_pipe.h"
    os.mkfifo(fifo)
    with bounded("a FIFO header", 1.0), pytest.raises(OSError, match="aclnn_pipe.h: is a FIFO"):
        headers.declarations(include)
    fifo.unlink()
    with open(include / "aclnnop" / "aclnn_big.h", "wb") as f:
        f.truncate(headers.MAX_HEADER_BYTES + 1)
    with pytest.raises(OSError, match=f"aclnn_big.h: {headers.MAX_HEADER_BYTES + 1} bytes, over the"):
        headers.declarations(include)


def test_a_symlink_loop_in_the_header_folder_is_still_held(tmp_path):
    include = _header(tmp_path, PROTO.format(1))
    (include / "aclnnop" / "loop").symlink_to(include / "aclnnop", target_is_directory=True)
    with bounded("a symlink loop", 1.0):
        assert list(headers.declarations(include)) == ["aclnnFoo1GetWorkspaceSize"]


# --- the command line: one line, quickly ---


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=60)


def test_import_answers_hostile_pages_quickly_with_a_draft_or_one_line(forked_cli, tmp_path):
    heading = tmp_path / "h.md"
    heading.write_text("# aclnnFoo" + " " * 4000 + "x\n", encoding="utf-8")
    colspan = tmp_path / "c.md"
    colspan.write_text(
        (PAGES / "table_variant.md").read_text(encoding="utf-8").replace("<td>", '<td colspan="300000000">', 1)
    )
    start = time.monotonic()
    done = _cli("import", str(heading), str(colspan), "-o", str(tmp_path / "drafts"))
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    assert time.monotonic() - start < 20  # the interpreter's start-up included
    assert 'colspan="300000000" read as 1000' in done.stdout
    big = tmp_path / "big.md"
    with open(big, "wb") as f:
        f.truncate(MAX_PAGE_BYTES + 1)
    fifo = tmp_path / "fifo.md"
    os.mkfifo(fifo)
    for page, message in ((big, f"over the {MAX_PAGE_BYTES}-byte limit"), (fifo, "is a FIFO")):
        done = forked_cli("import", str(page), "-o", str(tmp_path / "drafts"), timeout=60)
        assert done.returncode == 1 and message in done.stderr, done.stderr
        assert len(done.stderr.strip().splitlines()) == 1, done.stderr


@pytest.mark.parametrize("payload", ["less-thans", "unclosed cells", "fences", "rowspan", "pipe rows"])
def test_a_hostile_page_at_the_size_limit_is_read_in_under_two_seconds(tmp_path, payload):
    """The bound holds at MAX_PAGE_BYTES, not only at 50 KB: linear, and fast per line."""
    unit = PAYLOADS[payload]
    for name in FIXTURES:
        lines = (PAGES / name).read_text(encoding="utf-8").splitlines()
        for site in ("first cell", "product"):
            index = _sites(lines).get(site)
            if index is None:
                continue
            text = _hostile_page(name, index, unit * ((MAX_PAGE_BYTES - 10_000) // len(unit.encode())))
            with bounded(f"{payload!r} at the {site} of {name}, {len(text.encode())} bytes"):
                _read(tmp_path, name, text)


def test_the_tables_of_one_page_share_a_cell_budget_and_a_long_prototype_is_not_read(tmp_path):
    table = '<table><tr><td colspan="1000">x</td></tr></table>'
    notes: list[str] = []
    tables = page_text.html_tables(table * 300, notes)
    assert len(tables) == 300 and sum(1 for grid, _ in tables if grid) == page_text.MAX_PAGE_CELLS // 1000
    assert notes[-1] == f"tables 201 to 300: past the page's {page_text.MAX_PAGE_CELLS} table cells (not read)"
    long = "aclnnStatus aclnnDemoBackwardGetWorkspaceSize(" + "const aclTensor* a, " * 4_000 + "uint64_t* w)"
    text = (PAGES / "table_variant.md").read_text(encoding="utf-8")
    start = text.index("aclnnStatus aclnnDemoBackwardGetWorkspaceSize(")
    text = text[:start] + long + text[text.index(")", start) + 1 :]
    facts, draft = _read(tmp_path, "table_variant.md", text)
    assert draft["prototypes"]["get_workspace_size"] == "TODO"
    assert any("prototype block of" in u and "not read" in u for u in facts.unparsed)
