"""Small text helpers shared by the page readers: product names, HTML tables, dtype notes."""

from __future__ import annotations

import html
import re
from html.parser import HTMLParser

from ..products import ProductTable
from .facts import NPU_IDS, DtypeNote, first_dtype_at, page_dtypes

_TAG = re.compile(r"<[^>]+>")
_TERM = re.compile(r"<term>(.*?)</term>", re.S)
# Suffixes some pages add to a product's name ("... AI处理器") that the product table does not carry.
_NAME_SUFFIXES = ("AI处理器", "AI 处理器", "。", ".")


def plain(text: str) -> str:
    """Markup-free text: list items and line breaks become newlines, `\\_` becomes `_`."""
    text = re.sub(r"<\s*(li|br|p)\b[^>]*>", "\n", text, flags=re.I)
    text = _TAG.sub("", text)
    text = html.unescape(text).replace("\\_", "_")
    return "\n".join(" ".join(line.split()) for line in text.splitlines() if line.strip())


def family_of(products: ProductTable, name: str) -> str | None:
    """The product family a page's product name means, or None when the table does not know it."""
    name = plain(name).strip().strip("：:")
    for _ in range(2):
        family = products.family_of_doc_name(name)
        if family is not None:
            return family.id
        for suffix in _NAME_SUFFIXES:
            if name.endswith(suffix):
                name = name[: -len(suffix)].strip()
    return None


def npu_families(ids: str) -> list[str]:
    """`950,A3` (a marker's npu attribute) -> families; unknown ids are dropped."""
    return [NPU_IDS[i.strip()] for i in ids.split(",") if i.strip() in NPU_IDS]


def split_names(text: str) -> list[str]:
    """Product names of a note's head: `<term>`-wrapped, or joined by 、 / ， when plain."""
    terms = _TERM.findall(text)
    if terms:
        return [t.strip() for t in terms]
    return [part.strip() for part in re.split(r"[、，,]", plain(text)) if part.strip()]


def dtype_note(products: ProductTable, head: str, body: str, npu: str | None = None) -> DtypeNote | None:
    """A per-product sentence `NAMES：...` -> a note, or None when the head names no product."""
    families = npu_families(npu) if npu else []
    if not families:
        families = [f for f in (family_of(products, n) for n in split_names(head)) if f]
    if not families:
        return None
    body_text = plain(body)
    dtypes = page_dtypes(body_text)
    if dtypes and re.search(r"不支持|not support", body_text, re.I):
        mode = "except"
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
        names = [n for n in _IDENTIFIER.findall(sentence[:first_dtype_at(sentence)])
                 if n not in ("if", "when", "and", "or", "the", "of", "is", "are", "support", "supports")]
        if not names:
            return {}
        for name in names:
            found[name] = dtypes
    return found


class _Tables(HTMLParser):
    """Collects every <table>: rows of (text, rowspan, colspan) cells."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=False)
        self.tables: list[list[list[tuple[str, int, int]]]] = []
        self._depth = 0
        self._cell: list[str] | None = None
        self._span = (1, 1)

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "table":
            self._depth += 1
            self.tables.append([])
        elif self._depth and tag == "tr":
            self.tables[-1].append([])
        elif self._depth and tag in ("td", "th"):
            if not self.tables[-1]:
                self.tables[-1].append([])
            self._cell = []
            self._span = (_int(attrs.get("rowspan")), _int(attrs.get("colspan")))
        elif self._cell is not None and tag in ("li", "br", "p"):
            self._cell.append(f"<{tag}>")

    def handle_endtag(self, tag):
        if tag in ("td", "th") and self._cell is not None:
            self.tables[-1][-1].append((plain("".join(self._cell)), *self._span))
            self._cell = None
        elif tag == "table" and self._depth:
            self._depth -= 1

    def handle_data(self, data):
        if self._cell is not None:
            self._cell.append(data)

    def handle_entityref(self, name):
        self.handle_data(f"&{name};")

    def handle_charref(self, name):
        self.handle_data(f"&#{name};")


def _int(value: str | None) -> int:
    try:
        return max(1, int(value or 1))
    except ValueError:
        return 1


def html_tables(text: str) -> list[tuple[list[list[str]], list[str]]]:
    """Every HTML table in `text` as a grid (row spans filled in, clipped to the rows that exist)
    and a list of span problems (a rowspan that overruns the table)."""
    parser = _Tables()
    # declarations and marked sections (`<!DOCTYPE`, `<![CDATA[`) never belong in a page's tables,
    # and html.parser asserts on malformed ones: read them as text
    text = re.sub(r"<!(?!--)", "&lt;!", text)
    try:
        parser.feed(text)
        parser.close()
    except (AssertionError, ValueError):  # markup html.parser cannot take: keep the rows read so far
        pass
    out = []
    for rows in parser.tables:
        rows = [r for r in rows if r]  # a doubled <tr> leaves an empty row behind
        grid: list[list[str]] = []
        carry: dict[int, tuple[str, int]] = {}  # column -> (text, rows still to fill)
        problems: list[str] = []
        for index, row in enumerate(rows):
            cells: list[str] = []
            queue = list(row)
            col = 0
            while queue or col in carry:
                if col in carry:
                    text_, left = carry.pop(col)
                    cells.append(text_)
                    if left > 1:
                        carry[col] = (text_, left - 1)
                    col += 1
                    continue
                text_, rowspan, colspan = queue.pop(0)
                remaining = len(rows) - index
                if rowspan > remaining and not any(p.startswith(f"row {index}:") for p in problems):
                    problems.append(f"row {index}: rowspan=\"{rowspan}\" on {text_!r} but the table has {remaining} row(s) from there")
                for _ in range(colspan):
                    cells.append(text_)
                    if rowspan > 1:
                        carry[col] = (text_, rowspan - 1)
                    col += 1
            grid.append(cells)
        out.append((grid, problems))
    return out
