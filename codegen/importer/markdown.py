"""Reading the vendor's Markdown pages (`<category>/<op>/docs/aclnn<Op>.md`) in the variants the
vendor's repositories use across releases: the product section as a √/× pipe table or as
`<!-- npu="..." -->`-marked bullets, HTML parameter tables (name cell with or without the C type in
full-width parentheses), per-product dtype notes below the table (plain or marked), return-code
tables whose merged cells may overrun, Chinese or English headings.

Every pattern here is matched against one line or one cell, and none has two quantifiers that can
match the same text one after the other (docs/security.md): reading is linear in the page's size."""

from __future__ import annotations

import re

from ..products import ProductTable
from .facts import PageFacts, PageParam, PageReturnCode, cell_dtypes, page_formats, stated_dtypes
from .saved import read_param_bullets
from .text import MAX_PROTOTYPE_CHARS, between, dtype_note, family_of, html_tables, npu_families, outside, plain

# Section heading -> what the section holds; Chinese and English spellings.
_SECTION_WORDS = {
    "products": ("产品支持情况", "支持的产品型号", "supported products", "product support"),
    "function": ("功能说明", "功能描述", "function description", "description"),
    "prototypes": ("函数原型", "接口原型", "function prototype", "prototype"),
    "constraints": ("约束说明", "约束与限制", "constraints"),
    "example": ("调用示例", "example"),
}
# `#`s, blanks, the text; closing `#`s and blanks are stripped in Python (`(.*?)\s*#*\s*$` was cubic)
_HEADING = re.compile(r"(#{1,6})\s+(.*)")
_FENCE = re.compile(r"^\s*(```|~~~)")
# a fence with an info string ("```cpp") only opens a block: met inside one, the page left the
# block before it unclosed, and a new block starts (a closing fence has no info string)
_OPENING_FENCE = re.compile(r"^\s*(```|~~~)\s*[A-Za-z]")
_MARKER = re.compile(r"<!--\s*npu=\"([^\"<>]*)\"\s*(\w+)\s*-->")
_MARKER_END = re.compile(r"<!--\s*end\s+\w+\s*-->")
_YES = ("√", "支持", "supported", "yes", "✓")
_NO = ("×", "不支持", "not supported", "unsupported", "no", "✗")
_NAME_CELL = re.compile(r"\s*([A-Za-z_]\w*)\s*(?:[（(]([^）)]*)[）)])?")  # the type is stripped in Python
_DIRECTIONS = {
    # a tensor the op reads and writes (a `...Ref` parameter): the spec's in-place input
    "输入/输出": "inout",
    "输入输出": "inout",
    "input/output": "inout",
    "输入": "input",
    "输出": "output",
    "input": "input",
    "output": "output",
    "入参": "input",
    "出参": "output",
}


def sections(text: str) -> list[tuple[str, list[str]]]:
    """(heading, body lines) in page order; `#` lines inside code fences are not headings."""
    out: list[tuple[str, list[str]]] = [("", [])]
    fenced = False
    for line in text.splitlines():
        # the `in` tests skip the patterns on the lines they cannot match (most of a long page)
        if ("`" in line or "~" in line) and _FENCE.match(line):
            fenced = True if _OPENING_FENCE.match(line) else not fenced
        match = None if fenced or not line.startswith("#") else _HEADING.match(line)
        if match:
            out.append((match.group(2).rstrip().rstrip("#").strip(), []))
        else:
            out[-1][1].append(line)
    return out


def _kind(heading: str, op: str | None) -> str | None:
    lowered = heading.lower().replace("**", "").strip()
    if op and lowered == f"aclnn{op}getworkspacesize".lower():
        return "get_workspace_size"
    if op and lowered == f"aclnn{op}".lower():
        return "launch"
    for kind, words in _SECTION_WORDS.items():
        if any(word in lowered for word in words):
            return kind
    return None


def _yes_no(text: str) -> bool | None:
    value = plain(text).strip().strip("。.").lower()
    if value in _NO:
        return False
    if value in _YES:
        return True
    return None


_API = re.compile(r"aclnn[A-Za-z0-9_]+")


def _title(parts: list[tuple[str, list[str]]]) -> str | None:
    return next((h for h, _ in parts if h.startswith("aclnn") and not h.endswith("GetWorkspaceSize")), None)


def page_apis(text: str) -> list[str]:
    """The APIs a page documents, without the aclnn prefix: one for `# aclnn<Op>`, several for a
    shared page `# aclnn<Op>&aclnnInplace<Op>` (one prototype pair and parameter table each); none
    when the title is neither."""
    title = _title(sections(text))
    names = [part.strip() for part in (title or "").split("&")]
    if not title or not all(_API.fullmatch(n) for n in names):
        return []
    return [n[len("aclnn") :] for n in names]


def read_markdown_apis(text: str, path: str, products: ProductTable) -> list[PageFacts]:
    """One PageFacts per API the page documents: a shared page's APIs share its products, function
    and constraints sections, and each has its own prototypes and first-phase section."""
    apis = page_apis(text)
    if len(apis) < 2:
        return [read_markdown(text, path, products)]
    return [read_markdown(text, path, products, api=api) for api in apis]


def read_markdown(text: str, path: str, products: ProductTable, api: str | None = None) -> PageFacts:
    """The facts of the page's API, or with `api`, of that one of a shared page's APIs."""
    facts = PageFacts(path=path, form="markdown")
    parts = sections(text)
    title = _title(parts)
    if api is not None:
        facts.op, facts.shared_page = api, True
    elif title is None or not re.fullmatch(r"aclnn[A-Za-z0-9_]+", title):
        facts.todo("name", "the page has no `# aclnn<Op>` title")
    else:
        facts.op = title[len("aclnn") :]
    seen: set[str] = set()
    for heading, body in parts[1:]:
        kind = _kind(heading, facts.op)
        if kind is None or kind in seen:
            continue
        seen.add(kind)
        reader = _READERS.get(kind)
        if reader:
            reader(facts, body, products)
    for kind, what in (
        ("products", "product section"),
        ("prototypes", "function prototypes"),
        ("get_workspace_size", "first-phase section with the parameter table"),
    ):
        if kind not in seen:
            facts.unparsed.append(f"no {what} found")
    return facts


def _read_products(facts: PageFacts, body: list[str], products: ProductTable) -> None:
    npu: str | None = None
    for line in body:
        marker = _MARKER.search(line)
        if marker:
            npu = marker.group(1)
            facts.product_format = "markers"
            continue
        if _MARKER_END.search(line):
            npu = None
            continue
        stripped = line.strip()
        if stripped.startswith("|"):
            cells = [c.strip() for c in stripped.strip("|").split("|")]
            if (
                len(cells) < 2
                or re.fullmatch(r"[\s:\-|]*", stripped.replace("|", ""))
                or plain(cells[0]).lower() in ("产品", "product")
            ):
                continue
            facts.product_format = facts.product_format or "table"
            _product(facts, products, cells[0], _yes_no(cells[1]), None)
        elif stripped.startswith(("- ", "* ")):
            item = stripped[2:]
            colon = max(item.rfind("："), item.rfind(":"))  # the last colon: `name：support`
            value = _yes_no(item[colon + 1 :]) if colon >= 0 else None
            name, supported = (item[:colon], value) if value is not None else (item, True)
            facts.product_format = facts.product_format or "list"
            _product(facts, products, name, supported, npu)


def _product(facts: PageFacts, products: ProductTable, name: str, supported: bool | None, npu: str | None) -> None:
    by_name = family_of(products, name)
    by_marker = npu_families(npu) if npu else []
    family = by_name or (by_marker[0] if len(by_marker) == 1 else None)
    if by_name and len(by_marker) == 1 and by_marker[0] != by_name:
        facts.defect("product", f'the product marker npu="{npu}" wraps {plain(name)!r}, another family')
    if family is None:
        if supported:
            facts.todo("products", f"unknown product {plain(name)!r} is marked supported")
        else:
            facts.unparsed.append(f"unknown product {plain(name)!r} (marked unsupported; ignored)")
        return
    if supported is None:
        facts.todo("products", f"cannot read whether {family} is supported")
        return
    if family in facts.products and facts.products[family] != supported:
        facts.defect("product", f"the product section lists {family} twice, as supported and as not")
        facts.todo("products", f"{family}: the page says both supported and not supported")
    facts.products[family] = supported


def _read_function(facts: PageFacts, body: list[str], products: ProductTable) -> None:
    text = "\n".join(body)
    facts.latex += [block.strip() for block in between(text, "$$", "$$") if block.strip()]


def _read_prototypes(facts: PageFacts, body: list[str], products: ProductTable) -> None:
    blocks, current = [], None
    for line in body:
        if _FENCE.match(line):
            if current is None:
                current = []
            else:
                blocks.append("\n".join(current))
                current = [] if _OPENING_FENCE.match(line) else None
        elif current is not None:
            current.append(line)
    if not any("aclnnStatus" in block for block in blocks):
        # older pages print each prototype as inline code in a bullet: `aclnnStatus aclnnX(...)`
        blocks = [m.group(1) for line in body for m in _INLINE_PROTOTYPE.finditer(line)]
    if facts.shared_page:
        _read_own_prototypes(facts, blocks)
        return
    for block in blocks:
        if "aclnnStatus" not in block and "(" not in block:
            continue
        key = "get_workspace_size" if "GetWorkspaceSize" in block else "launch"
        if len(block) > MAX_PROTOTYPE_CHARS:
            facts.unparsed.append(
                f"a {key} prototype block of {len(block)} characters (over {MAX_PROTOTYPE_CHARS}; not read)"
            )
            continue
        if key in facts.prototypes:
            facts.unparsed.append(f"a second {key} prototype block (ignored)")
            continue
        facts.prototypes[key] = " ".join(block.split())


_INLINE_PROTOTYPE = re.compile(r"`(aclnnStatus\s[^`]*)`")
_FUNCTION_NAME = re.compile(r"(aclnn[A-Za-z0-9_]*)\s*\(")


def _read_own_prototypes(facts: PageFacts, blocks: list[str]) -> None:
    """A shared page prints every API's prototypes, often in one block: each declaration is
    picked by its function's name."""
    own = {f"aclnn{facts.op}GetWorkspaceSize": "get_workspace_size", f"aclnn{facts.op}": "launch"}
    for block in blocks:
        for declaration in block.split(";"):
            match = _FUNCTION_NAME.search(declaration)
            key = own.get(match.group(1)) if match else None
            if key is None or key in facts.prototypes:
                continue
            if len(declaration) > MAX_PROTOTYPE_CHARS:
                facts.unparsed.append(f"a {key} prototype of {len(declaration)} characters (not read)")
                continue
            facts.prototypes[key] = " ".join(declaration.split())


def _read_get_workspace_size(facts: PageFacts, body: list[str], products: ProductTable) -> None:
    text = "\n".join(body)
    tables = html_tables(text, facts.unparsed)
    param_grid = next((g for g, _ in tables if g and _header_has(g[0], ("参数名", "parameter"))), None)
    codes = next(((g, p) for g, p in tables if g and _header_has(g[0], ("错误码", "error code"))), None)
    if param_grid is not None:
        _read_param_table(facts, param_grid)
    else:  # older pages list the parameters as bullets, `name (type, direction)：...`, as saved pages do
        lines = [line.replace("\\*", "*") for line in body]
        own = read_param_bullets(facts, lines, products)
        _dtypes_by_reference(facts, {})
        if not facts.params:
            facts.unparsed.append("no parameter table in the first-phase section")
        text = "\n".join(line for line in lines if line not in own)  # a parameter's notes are its own
        _read_notes(facts, "\n".join(line for line in lines if line in own), products, fallback=True)
    _read_notes(facts, text, products)
    if codes is None:
        _read_return_code_text(facts, body)
        if not facts.return_codes:
            facts.todo("return_codes", "the page has no return-code table")
    else:
        grid, problems = codes
        for problem in problems:
            facts.defect("return_code", f"return-code table: {problem}; rows were counted from the <tr>s")
        for row in grid[1:]:
            if len(row) < 3 or not row[1].strip().isdigit():
                facts.unparsed.append(f"return-code row {row!r}")
                continue
            facts.return_codes.append(PageReturnCode(int(row[1]), row[0].strip(), row[2].strip()))


# older pages: `返回161001 (ACLNN_ERR_PARAM_NULLPTR): 1. ...` then `2. ...` on the lines below
_CODE_LINE = re.compile(r"返回\s*(\d{6})\s*[（(]\s*(ACLNN_[A-Z_]+)\s*[)）]\s*[:：](.*)")
_ITEM = re.compile(r"(?:^|\s)\d{1,2}[.、]\s*")


def _read_return_code_text(facts: PageFacts, body: list[str]) -> None:
    """Return codes written as text: one row per numbered condition of each status."""
    current: tuple[int, str, list[str]] | None = None
    found: list[tuple[int, str, list[str]]] = []
    for line in body:
        match = _CODE_LINE.search(line)
        if match:
            current = (int(match.group(1)), match.group(2), [match.group(3)])
            found.append(current)
        elif current is not None and line.strip() and not _FENCE.match(line) and not line.lstrip().startswith("#"):
            current[2].append(line)
        elif current is not None and _FENCE.match(line):
            current = None
    for status, name, lines in found:
        for item in _ITEM.split(" ".join(part.strip() for part in lines)):
            if item.strip():
                facts.return_codes.append(PageReturnCode(status, name, item.strip()))


def _header_has(row: list[str], words: tuple[str, ...]) -> bool:
    return any(w in cell.lower() for cell in row for w in words)


def _read_param_table(facts: PageFacts, grid: list[list[str]]) -> None:
    dtype_cells: dict[str, str] = {}
    for row in grid[1:]:
        match = _NAME_CELL.match(row[0]) if row else None
        if not match:
            facts.unparsed.append(f"parameter row {row[:2]!r}")
            continue
        at = _dtype_cell(row)
        cells = row + [""] * (at + 4 - len(row))
        param = PageParam(name=match.group(1), c_type=(match.group(2) or "").strip() or None)
        param.direction = _DIRECTIONS.get(cells[1].strip().lower())
        param.text = "\n".join(c for c in cells[2:at] if c.strip() and c.strip() != "-")
        param.dtypes = cell_dtypes(cells[at]) if len(row) > at else []
        param.formats, param.dims, param.non_contiguous = (c.strip() for c in cells[at + 1 : at + 4])
        facts.params.append(param)
        dtype_cells[param.name] = cells[at]
    _dtypes_by_reference(facts, dtype_cells)


_DTYPE_COLUMN = 4  # name, direction, description, usage, dtypes, formats, dims, non-contiguous


def _dtype_cell(row: list[str]) -> int:
    """The index of a row's dtype cell: the fifth, or, in a row split into more cells than the header
    has (a usage note over two cells), the first after it that lists dtypes."""
    if len(row) <= _DTYPE_COLUMN or cell_dtypes(row[_DTYPE_COLUMN]):
        return _DTYPE_COLUMN
    if _names_formats_only(row[_DTYPE_COLUMN]) and cell_dtypes(row[_DTYPE_COLUMN - 1]):
        return _DTYPE_COLUMN - 1  # a row one cell short (no usage note): the dtypes sit one cell early
    return next((k for k in range(_DTYPE_COLUMN + 1, len(row)) if cell_dtypes(row[k])), _DTYPE_COLUMN)


def _names_formats_only(cell: str) -> bool:
    formats, unknown = page_formats(cell)
    return bool(formats) and not unknown


# a dtype cell that names another parameter instead of listing dtypes: "与self一致", "same as self"
# ("和selfRef一致", "与输入x保持一致", "与“varRef”参数一致", "数据类型与weight相同")
_SAME_AS = re.compile(
    r"(?:与|和)\s*(?:输入)?\s*[“\"']?([A-Za-z_][A-Za-z0-9_]*)[”\"']?\s*(?:参数)?\s*(?:的)?\s*(?:数据)?\s*(?:类型)?"
    r"\s*(?:保持)?\s*(?:一致|相同)|same as ([A-Za-z_][A-Za-z0-9_]*)",
    re.I,
)


# a description that says so: "数据类型必须与input相同", "the dtype must be the same as input"
_SAME_DTYPE_TEXT = re.compile(
    r"数据类型[^，。；,;]{0,6}?与\s*([A-Za-z_][A-Za-z0-9_]*)\s*(?:的数据类型)?\s*(?:保持)?\s*(?:一致|相同)"
    r"|dtype (?:must be |is )?(?:the )?same as ([A-Za-z_][A-Za-z0-9_]*)",
    re.I,
)


def _dtypes_by_reference(facts: PageFacts, cells: dict[str, str]) -> None:
    """A parameter whose dtype cell says "the same as X", or with no dtype cell whose description says
    its dtype is X's, takes X's dtypes (X listing its own, or taking them the same way)."""
    by_name = {p.name: p for p in facts.params}
    progressed = True
    while progressed:  # a chain (totalWeight as weight, weight as self) resolves link by link
        progressed = False
        for param in facts.params:
            if param.dtypes:
                continue
            cell, text = plain(cells.get(param.name, "")), plain(param.text or "")
            match = _SAME_AS.search(cell) or _SAME_DTYPE_TEXT.search(text)
            other = by_name.get(next((g for g in match.groups() if g), "")) if match else None
            if other is not None and other.dtypes:
                param.dtypes = list(other.dtypes)
                progressed = True
            elif match is None and stated_dtypes(text):
                param.dtypes = stated_dtypes(text)
                progressed = True


_NOTE = re.compile(r"^\s*[-*]\s+(.+?)[：:](.+)$")
_BULLET = re.compile(r"^(\s*)[-*]\s+(.*)$")
_EXTRA = re.compile(r"额外支持|additionally support", re.I)


def _nested_notes(lines: list[str]) -> list[str]:
    """A product bullet with nothing after its colon and its sentences as sub-bullets below (newer
    pages) becomes one line `- NAMES：first；second`, as older pages write it."""
    out: list[str] = []
    at = 0
    while at < len(lines):
        line, at = lines[at], at + 1
        head = _BULLET.match(line)
        if head and not _NOTE.match(line) and head.group(2).rstrip().endswith(("：", ":")):
            parts, end = [], at
            while end < len(lines) and (sub := _BULLET.match(lines[end])) and len(sub.group(1)) > len(head.group(1)):
                parts.append(sub.group(2).strip().rstrip("；;。"))
                end += 1
            # only lists of extra dtypes: other sub-bullets are conditions the draft cannot express
            if parts and all(_EXTRA.search(part) for part in parts):
                line, at = line.rstrip() + "；".join(parts), end
        out.append(line)
    return out


def _read_notes(facts: PageFacts, text: str, products: ProductTable, fallback: bool = False) -> None:
    """Per-product bullets outside the tables, plain or inside npu markers."""
    npu = None
    for line in _nested_notes(outside(text, "<table", "</table>").splitlines()):
        marker = _MARKER.search(line)
        if marker:
            npu = marker.group(1)
            continue
        if _MARKER_END.search(line):
            npu = None
            continue
        match = _NOTE.match(line)
        if not match or "**" in match.group(1):
            continue
        note = dtype_note(products, match.group(1), match.group(2), npu)
        if note is not None:
            note.fallback = fallback
            facts.dtype_notes.append(note)


_READERS = {
    "products": _read_products,
    "function": _read_function,
    "prototypes": _read_prototypes,
    "get_workspace_size": _read_get_workspace_size,
}
