"""Reading a saved web page of an aclnn op (text as a browser copies it), scrape damage included:
formulas lost or doubled (KaTeX text beside its LaTeX source), tables replaced by `[object Object]`,
links by `undefined`, bullets flattened to lines with or without their `•`/`-`.

Every pattern is matched against one line, and none has two quantifiers that can match the same
text one after the other (docs/security.md): blanks around a captured part are stripped in Python."""

from __future__ import annotations

import re

from ..products import ProductTable
from .facts import PageFacts, PageParam, page_dtypes
from .text import MAX_PROTOTYPE_CHARS, between, dtype_note, family_of

_TITLE = re.compile(r"^\s*aclnn([A-Za-z0-9_]+)\s*$")
_BULLET = re.compile(r"^\s*(?:[-•*·]\s*)?")
# `name(C type, direction)：text`
_PARAM = re.compile(r"\s*(?:[-•*·]\s*)?([A-Za-z_]\w*)\s*[（(]([^,，)）]+)[,，]([^)）]*)[)）]\s*[:：](.*)")
# `products：... 数据类型 ...` (the 数据类型 is looked for in Python)
_NOTE = re.compile(r"\s*(?:[-•*·]\s*)?([^:：()（）]+)[:：](.*)")
# `BFLOAT16(仅<products>支持)`; a match starts only where a run of capitals and digits starts
_ONLY_ON = re.compile(r"(?<![A-Z0-9])([A-Z0-9]+)\s*[（(]\s*仅([^()（）]+?)支持\s*[)）]")
_DIRECTIONS = (("输出", "output"), ("出参", "output"), ("输入", "input"), ("入参", "input"))
_DAMAGE = ("[object Object]", "undefined")
_HEADS = {
    "products": ("支持的产品型号", "产品支持情况"),
    "prototypes": ("接口原型", "函数原型"),
    "function": ("功能描述", "功能说明"),
    "constraints": ("约束与限制", "约束说明"),
    "example": ("调用示例",),
}


def read_saved(text: str, path: str, products: ProductTable) -> PageFacts:
    facts = PageFacts(path=path, form="saved")
    lines = [line.rstrip() for line in text.splitlines()]
    for mark in _DAMAGE:
        count = sum(line.count(mark) for line in lines)
        if count:
            facts.unparsed.append(f"{count} x {mark!r} (content the scrape lost)")
    titles = [m.group(1) for m in map(_TITLE.match, lines) if m and not m.group(1).endswith("GetWorkspaceSize")]
    if not titles:
        facts.todo("name", "no `aclnn<Op>` title line on the page")
        return facts
    facts.op = titles[0]
    blocks = _blocks(lines, facts.op)
    _products(facts, blocks.get("products", []), products)
    for line in lines:
        if "aclnnStatus" in line and "(" in line:
            proto = line[line.index("aclnnStatus") :].strip()
            key = "get_workspace_size" if "GetWorkspaceSize(" in proto else "launch"
            if len(proto) > MAX_PROTOTYPE_CHARS:
                facts.unparsed.append(
                    f"a {key} prototype line of {len(proto)} characters (over {MAX_PROTOTYPE_CHARS}; not read)"
                )
                continue
            facts.prototypes.setdefault(key, proto)
    read_param_bullets(facts, blocks.get("get_workspace_size", []), products)
    function = "\n".join(blocks.get("function", []))
    facts.latex += [m.strip() for m in between(function, "$$", "$$") if m.strip()]
    if not facts.latex:
        facts.todo("formula.latex", "the scrape lost the formula (KaTeX output only); retype it from the page")
    if "[object Object]" in "\n".join(blocks.get("get_workspace_size", [])) or not facts.return_codes:
        facts.todo("return_codes", "the scrape lost the return-code table; complete it from the page or the ABI facts")
    if blocks.get("launch_title_mismatch"):
        facts.defect(
            "name", f"the second-phase section is titled {blocks['launch_title_mismatch'][0]}, not aclnn{facts.op}"
        )
    return facts


def _blocks(lines: list[str], op: str) -> dict[str, list[str]]:
    """Lines per section; a section starts at a line that is exactly its heading."""
    out: dict[str, list[str]] = {}
    current = None
    heads = {word: kind for kind, words in _HEADS.items() for word in words}
    other_title = re.compile(rf"aclnn{re.escape(op)}\w+")
    for line in lines:
        stripped = line.strip()
        kind = heads.get(stripped)
        if not stripped.startswith("aclnn"):
            pass
        elif stripped == f"aclnn{op}GetWorkspaceSize":
            kind = "get_workspace_size"
        elif stripped == f"aclnn{op}" and "get_workspace_size" in out:
            kind = "launch"
        elif other_title.fullmatch(stripped) and "get_workspace_size" in out and "launch" not in out:
            kind = "launch"
            out["launch_title_mismatch"] = [stripped]
        if kind is not None and kind not in out:
            out[kind] = []
            current = kind
            continue
        if current is not None:
            out[current].append(line)
    return out


def _products(facts: PageFacts, block: list[str], products: ProductTable) -> None:
    facts.product_format = "list"
    for line in block:
        name = _BULLET.sub("", line).strip()
        if not name:
            continue
        family = family_of(products, name)
        if family is None:
            facts.todo("products", f"unknown product {name!r}")
        else:
            facts.products[family] = True
    if not facts.products:
        facts.todo("products", "no product list on the page")


def read_param_bullets(facts: PageFacts, block: list[str], products: ProductTable) -> set[str]:
    """The parameters listed as bullets, `name (C type, direction)：description`, with per-product
    dtype notes below each; a saved page's form, and older Markdown pages'. Returns the lines read
    as one parameter's notes (so no page-wide reader takes them for every parameter)."""
    own_notes: set[str] = set()
    current: PageParam | None = None
    names_seen: set[str] = set()
    for line in block:
        if line.strip() in ("返回值:", "返回值：", "返回值"):
            break
        match = _PARAM.match(line)
        if match:
            name, c_type, direction, rest = (
                match.group(1),
                match.group(2).strip(),
                match.group(3),
                match.group(4).strip(),
            )
            if name in names_seen:
                facts.unparsed.append(f"parameter {name} is listed twice (the repeat is ignored)")
                current = None
                continue
            names_seen.add(name)
            current = PageParam(name=name, c_type=" ".join(c_type.split()), text=rest)
            current.direction = next((d for word, d in _DIRECTIONS if word in direction), None)
            current.dtypes = page_dtypes(_dtype_sentence(rest))
            # "BFLOAT16(仅<products>支持)": that dtype holds only for the products named
            restricted: dict[str, list[str]] = {}
            for dtype_word, where in _ONLY_ON.findall(rest):
                families = [f for f in (family_of(products, n) for n in re.split(r"[、，,]", where)) if f]
                for dtype in page_dtypes(dtype_word):
                    restricted[dtype] = families
            if restricted:
                for family in facts.products:
                    current.family_dtypes[family] = [
                        d for d in current.dtypes if d not in restricted or family in restricted[d]
                    ]
            facts.params.append(current)
            continue
        note = _NOTE.match(line)
        if note and current is not None and note.group(1).strip() and _lists_dtypes(note.group(2)):
            parsed = dtype_note(products, note.group(1).strip(), note.group(2).strip())
            own_notes.add(line)
            if parsed is not None and parsed.mode == "only":
                for family in parsed.families:
                    current.family_dtypes[family] = parsed.dtypes
            elif parsed is not None:
                facts.todo(
                    f"parameters.{current.name}.dtypes", f"a per-product note that is not a dtype list: {parsed.text!r}"
                )
    return own_notes


def _lists_dtypes(body: str) -> bool:
    """A note under a parameter about its dtypes: it says so, or (older pages) only lists them."""
    return "数据类型" in body or bool(page_dtypes(body))


def _dtype_sentence(text: str) -> str:
    """The part of a description that lists dtypes ("数据类型支持..." up to the sentence's end)."""
    for sentence in re.split(r"[。;；]", text):  # per sentence: a search per word was quadratic
        found = [at for at in (sentence.find("数据类型"), sentence.find("dtype")) if at >= 0]
        if found:
            start = sentence.find("支持", min(found))
            if start >= 0:
                return sentence[start + 2 :]
    return ""
