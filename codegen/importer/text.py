"""Small text helpers shared by the page readers: product names, HTML tables, dtype notes.

Every scan here is linear in the page's size (docs/security.md, "Limits on doc pages"): the HTML
tables are read by a tokenizer of our own (html.parser is quadratic on unclosed tags and comments),
spans between two markers are found with `str.find`, and no pattern has two quantifiers that can
match the same text one after the other."""

from __future__ import annotations

import html
import re
from collections import deque
from typing import Iterator

from ..products import ProductTable
from .facts import NPU_IDS, DtypeNote, first_dtype_at, page_dtypes

# Cells one table may expand to (spans filled in); a larger table is skipped and reported. The
# tables of one page together get MAX_PAGE_CELLS; the tables past that are skipped too.
MAX_TABLE_CELLS = 100_000
MAX_PAGE_CELLS = 200_000
# A prototype longer than this (500 parameters take ~20,000) is not one: reported, not parsed.
MAX_PROTOTYPE_CHARS = 65_536
# The largest spans HTML itself allows; a larger value is read as these.
MAX_COLSPAN = 1_000
MAX_ROWSPAN = 65_534

# `[^<>]`: a tag never spans another `<`, so each character is looked at by one `<` only
_TAG = re.compile(r"<[^<>]+>")
_BREAK = re.compile(r"<\s*(?:li|br|p)\b[^<>]*>", re.I)
# Suffixes some pages add to a product's name ("... AI处理器") that the product table does not carry.
_NAME_SUFFIXES = ("AI处理器", "AI 处理器", "。", ".")


def between(text: str, start: str, end: str) -> Iterator[str]:
    """The text between each `start` and the next `end` after it, left to right, without overlap:
    what `re.findall(start + "(.*?)" + end, text, re.S)` gives for two literals, in linear time (an
    unclosed `start` ends the scan: no later one can be closed either)."""
    at = text.find(start)
    while at >= 0:
        close = text.find(end, at + len(start))
        if close < 0:
            return
        yield text[at + len(start) : close]
        at = text.find(start, close + len(end))


def outside(text: str, start: str, end: str) -> str:
    """`text` without each `start`...`end` span (an unclosed `start` is kept as text), linearly."""
    parts, at = [], 0
    while True:
        open_ = text.find(start, at)
        close = text.find(end, open_ + len(start)) if open_ >= 0 else -1
        if close < 0:
            parts.append(text[at:])
            return "".join(parts)
        parts.append(text[at:open_])
        at = close + len(end)


def plain(text: str) -> str:
    """Markup-free text: list items and line breaks become newlines, `\\_` becomes `_`."""
    if "<" in text:  # the one character both patterns start with: most cells have no markup
        text = _TAG.sub("", _BREAK.sub("\n", text))
    lines = html.unescape(text).replace("\\_", "_").splitlines()
    if len(lines) == 1:
        return " ".join(lines[0].split())
    return "\n".join(" ".join(line.split()) for line in lines if line.strip())


_DOC_NAMES: list = [None, {}, {}]  # (the product table, its doc names without blanks -> family, seen)
# Names family_of remembers (a page names a handful of products; a hostile one, a product line
# 250,000 times); past this many the memory starts again
_SEEN_NAMES = 4096


def _doc_names(products: ProductTable) -> dict[str, str]:
    """What `products.family_of_doc_name` looks up, as one dict (a scan of every name per line of a
    page was the slowest part of reading a long product list)."""
    if _DOC_NAMES[0] is not products:
        names: dict[str, str] = {}
        for family in products.families:
            for doc_name in family.doc_names:
                names.setdefault("".join(doc_name.split()), family.id)
        _DOC_NAMES[:] = [products, names, {}]
    return _DOC_NAMES[1]


def family_of(products: ProductTable, name: str) -> str | None:
    """The product family a page's product name means, or None when the table does not know it."""
    names = _doc_names(products)
    seen = _DOC_NAMES[2]
    if name not in seen:
        if len(seen) >= _SEEN_NAMES:
            seen.clear()
        seen[name] = _family_of(names, name)
    return seen[name]


def _family_of(names: dict[str, str], name: str) -> str | None:
    name = plain(name).strip().strip("：:")
    for _ in range(2):
        family = names.get("".join(name.split()))
        if family is not None:
            return family
        for suffix in _NAME_SUFFIXES:
            if name.endswith(suffix):
                name = name[: -len(suffix)].strip()
    return None


def npu_families(ids: str) -> list[str]:
    """`950,A3` (a marker's npu attribute) -> families; unknown ids are dropped."""
    return [NPU_IDS[i.strip()] for i in ids.split(",") if i.strip() in NPU_IDS]


def split_names(text: str) -> list[str]:
    """Product names of a note's head: `<term>`-wrapped, or joined by 、 / ， when plain."""
    terms = list(between(text, "<term>", "</term>"))
    if terms:
        return [t.strip() for t in terms]
    return [part.strip() for part in re.split(r"[、，,]", plain(text)) if part.strip()]


_SENTENCES = re.compile(r"[。；;]|\.\s")
_NEGATION = re.compile(r"不支持|not support", re.I)


def dtype_note(products: ProductTable, head: str, body: str, npu: str | None = None) -> DtypeNote | None:
    """A per-product sentence `NAMES：...` -> a note, or None when the head names no product."""
    families = npu_families(npu) if npu else []
    if not families:
        families = [f for f in (family_of(products, n) for n in split_names(head)) if f]
    if not families:
        return None
    body_text = plain(body)
    dtypes = page_dtypes(body_text)
    # the dtypes of the sentences that exclude: another sentence naming dtypes is a condition ("when
    # self is INT8, at most 7 dims") or the product's own list ("supports X. no empty tensors")
    excluded = page_dtypes("。".join(s for s in _SENTENCES.split(body_text) if _NEGATION.search(s)))
    if excluded:
        mode, dtypes = "except", excluded
    elif dtypes and re.search(r"额外支持|additionally support|also support", body_text, re.I):
        mode = "extra"  # newer pages: the table's dtypes plus these on this product
    elif dtypes:
        mode = "only"
    else:
        mode = "text"
    return DtypeNote(families, dtypes, mode, body_text, _per_param(body_text))


_IDENTIFIER = re.compile(r"(?<![A-Za-z0-9_])[a-z][A-Za-z0-9_]*(?![A-Za-z0-9_])")


def _per_param(text: str) -> dict[str, list[str]]:
    """`a、b的数据类型支持X、Y。c的数据类型支持Z。` -> {a: [X, Y], b: [X, Y], c: [Z]}: the parameters
    each sentence names before its first dtype take that sentence's dtypes. Empty unless every
    sentence with dtypes names its parameters."""
    found: dict[str, list[str]] = {}
    for sentence in re.split(r"[。；;]|\.\s", text):
        dtypes = page_dtypes(sentence)
        if not dtypes:
            continue
        names = [
            n
            for n in _IDENTIFIER.findall(sentence[: first_dtype_at(sentence)])
            if n not in ("if", "when", "and", "or", "the", "of", "is", "are", "support", "supports")
        ]
        if not names:
            return {}
        for name in names:
            found[name] = dtypes
    return found


# One tag at a `<`: its name and its attributes, never past the next `<` (so linear). The name
# ends where a letter or digit does not follow: without that, `<` and 100,000 letters backtrack
# through every split of the letters between the name and the attributes (quadratic).
_TAG_AT = re.compile(r"<(/?)([A-Za-z][A-Za-z0-9]*)(?![A-Za-z0-9])([^<>]*)>")
# A comment opener or a tag, whichever comes first: the tokenizer jumps from one to the next, and
# the text between (a `<` that starts neither included) is a cell's text
_TOKEN = re.compile("<!--|" + _TAG_AT.pattern)
_SPAN_ATTR = re.compile(r"""\b(rowspan|colspan)\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s"'=<>`]*))""", re.I)
_NO_SPAN = (1, 1)


def _span(value: str) -> int:
    value = value.strip()
    if not value.isdigit() or not value.isascii():
        return 1
    return max(1, int(value[:12]))  # 12 digits: a value is never converted from thousands of them


def _spans(attrs: str) -> tuple[int, int]:
    """A cell's (rowspan, colspan) from its tag's attributes."""
    if "span" not in attrs.lower():  # most cells: no attribute to look at
        return _NO_SPAN
    found = {m.group(1).lower(): next(g for g in m.groups()[1:] if g is not None) for m in _SPAN_ATTR.finditer(attrs)}
    return _span(found.get("rowspan", "1")), _span(found.get("colspan", "1"))


def _raw_tables(text: str) -> list[list[list[tuple[str, int, int]]]]:
    """Every <table>: rows of (text, rowspan, colspan) cells, in one pass over the text, one step
    per tag or comment. Comments are skipped (an unclosed one is text); `<li>`, `<br>` and `<p>` in
    a cell are kept as breaks."""
    tables: list[list[list[tuple[str, int, int]]]] = []
    depth = 0
    cell: list[str] | None = None
    span = _NO_SPAN
    token = _TOKEN  # _TAG_AT once a `<!--` has no `-->` after it: no later one has either
    at = 0
    while (found := token.search(text, at)) is not None:
        start = found.start()
        if cell is not None and start > at:
            cell.append(text[at:start])
        name = found.group(2)
        if name is None:  # a comment
            close = text.find("-->", start + 4)
            if close >= 0:
                at = close + 3
            else:  # unclosed: text, read again as such
                token, at = _TAG_AT, start
            continue
        at = found.end()
        name = name.lower()
        if found.group(1):
            if name in ("td", "th") and cell is not None:
                if not tables[-1]:  # closed inside a table opened after it: a row of its own
                    tables[-1].append([])
                tables[-1][-1].append((plain("".join(cell)), *span))
                cell = None
            elif name == "table" and depth:
                depth -= 1
            continue
        if name == "table":
            depth += 1
            tables.append([])
        elif depth and name == "tr":
            tables[-1].append([])
        elif depth and name in ("td", "th"):
            if not tables[-1]:
                tables[-1].append([])
            cell = []
            span = _spans(found.group(3))
        elif cell is not None and name in ("li", "br", "p"):
            cell.append(f"<{name}>")
    return tables


class _TooLarge(Exception):
    pass


def _grid(
    rows: list[list[tuple[str, int, int]]], notes: list[str], number: int, limit: int = MAX_TABLE_CELLS
) -> tuple[list[list[str]], list[str]]:
    """One table's grid (row spans filled in, clipped to the rows that exist) and its span problems,
    at most `limit` cells (else _TooLarge)."""
    rows = [r for r in rows if r]  # a doubled <tr> leaves an empty row behind
    grid: list[list[str]] = []
    carry: dict[int, tuple[str, int]] = {}  # column -> (text, rows still to fill)
    problems: list[str] = []
    cells_total = 0
    for index, row in enumerate(rows):
        if not carry and all(cell[1:] == _NO_SPAN for cell in row):  # most rows: nothing to fill in
            cells_total += len(row)
            if cells_total > limit:
                raise _TooLarge
            grid.append([cell[0] for cell in row])
            continue
        cells: list[str] = []
        queue = deque(row)
        col = 0
        overrun = False
        while queue or col in carry:
            if col in carry:
                text_, left = carry.pop(col)
                cells.append(text_)
                if left > 1:
                    carry[col] = (text_, left - 1)
                col += 1
            else:
                text_, rowspan, colspan = queue.popleft()
                remaining = len(rows) - index
                if rowspan > remaining and not overrun:
                    overrun = True
                    problems.append(
                        f'row {index}: rowspan="{rowspan}" on {text_!r} but the table has {remaining} row(s) from there'
                    )
                if colspan > MAX_COLSPAN:
                    if not any(n.startswith(f"table {number},") for n in notes[-1:]):  # one note a table
                        notes.append(f'table {number}, row {index}: colspan="{colspan}" read as {MAX_COLSPAN}')
                    colspan = MAX_COLSPAN
                rowspan = min(rowspan, remaining)
                if cells_total + len(cells) + colspan > limit:
                    raise _TooLarge
                for _ in range(colspan):
                    cells.append(text_)
                    if rowspan > 1:
                        carry[col] = (text_, rowspan - 1)
                    col += 1
            if cells_total + len(cells) > limit:
                raise _TooLarge
        cells_total += len(cells)
        grid.append(cells)
    return grid, problems


def html_tables(text: str, notes: list[str] | None = None) -> list[tuple[list[list[str]], list[str]]]:
    """Every HTML table in `text` as a grid (row spans filled in, clipped to the rows that exist)
    and a list of span problems (a rowspan that overruns the table). A table of more than
    MAX_TABLE_CELLS cells is read as empty, and `notes` (the page's 'not parsed' list) says so;
    a colspan over MAX_COLSPAN is read as that, and noted."""
    notes = notes if notes is not None else []
    out: list[tuple[list[list[str]], list[str]]] = []
    budget = MAX_PAGE_CELLS
    raw = _raw_tables(text)
    for number, rows in enumerate(raw, 1):
        try:
            grid, problems = _grid(rows, notes, number, min(MAX_TABLE_CELLS, budget))
        except _TooLarge:
            if budget >= MAX_TABLE_CELLS:  # this table alone is too large
                notes.append(f"table {number}: more than {MAX_TABLE_CELLS} cells with its spans filled in (not read)")
                out.append(([], []))
                continue
            notes.append(f"tables {number} to {len(raw)}: past the page's {MAX_PAGE_CELLS} table cells (not read)")
            out += [([], [])] * (len(raw) - number + 1)
            break
        budget -= sum(map(len, grid))
        out.append((grid, problems))
    return out
