"""PageFacts -> a draft spec in the spec language. What the page does not say, or says two ways,
becomes the value `TODO` and an entry of the draft's `todo:` list (path and reason), which
`aclnngen validate` reports; contradictions also become `defects`. Nothing is guessed silently:
summaries and conditions are never copied from the page (they are ours to write)."""

from __future__ import annotations

import keyword
import re
from typing import Any, Mapping

from aclnngen.core.attribute_types import POINTER_C_TYPES
from aclnngen.core.dtypes import CATEGORY
from aclnngen.core.kinds import KINDS, kind_of
from aclnngen.core.kinds.broadcast import KIND as BROADCAST
from aclnngen.core.kinds.castable import KIND as CASTABLE
from aclnngen.core.kinds.empty import KIND as EMPTY
from aclnngen.core.kinds.max_rank import KIND as MAX_RANK
from aclnngen.core.kinds.min_rank import KIND as MIN_RANK
from aclnngen.core.kinds.non_contiguous import KIND as NON_CONTIGUOUS
from aclnngen.core.kinds.promote import KIND as PROMOTE
from aclnngen.core.kinds.same_dtype import KIND as SAME_DTYPE
from aclnngen.core.kinds.same_shape import KIND as SAME_SHAPE

from .. import names as reserved_names
from ..cdecl import PrototypeError, parse_prototype
from ..products import ProductTable
from aclnngen.core.tiers import BINDING, FULL
from .ctypes import spec_type
from .facts import PageFacts, PageParam, page_formats

TODO = "TODO"
_TRAILING = ("workspaceSize", "executor")
# Return-code descriptions -> the check they describe (Chinese and English keywords): the rule
# kinds' phrases (aclnngen/core/kinds) and these, tried by precedence (a narrower phrase first).
_NON_RULE_CHECKS = (
    (0, "null_pointer", ("空指针", "null")),
    (5, "dtype", ("数据类型不在", "不在支持", "not supported", "数据类型和数据格式")),
)
_CHECKS = tuple(
    (check, words)
    for _, check, words in sorted(
        _NON_RULE_CHECKS + tuple((k.row_precedence, k.name, k.row_phrases) for k in KINDS if k.row_phrases)
    )
)
_CONDITIONS = {
    "null_pointer": "One of {} is NULL.",
    "dtype": "A dtype of {} is not supported on the product in use.",
    "attribute_value": "{} is outside the values it may take.",
    **{k.name: k.row_condition for k in KINDS if k.row_condition},
}


def row_condition(check: str, params: list[str]) -> str:
    """A return-code row's condition in the project's words, from its check and parameters."""
    return _CONDITIONS[check].format(", ".join(params))


def snake(name: str) -> str:
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name).lower()


DRAFT_TIERS = ("full", "binding", "auto")


def draft_tier(facts: PageFacts, tier: str) -> str:
    """The tier of the draft: `auto` drafts a full-tier spec from a page that states a formula (a
    person writes it as an expression), a binding-tier spec from one that states none."""
    if tier == "auto":
        return FULL if facts.latex else BINDING
    return tier


def build_draft(facts: PageFacts, products: ProductTable, tier: str = FULL) -> dict[str, Any]:
    """The draft as plain data, keys in the spec's order, `todo` and `import` last. A binding-tier
    draft (aclnngen/core/tiers.py) has no formula or oracle, and its summaries are generated from
    the API's name and category (never the page's words), so only the page's gaps stay TODO."""
    binding = draft_tier(facts, tier) == BINDING
    draft: dict[str, Any] = {"name": facts.op or TODO, "summary": TODO}
    todo = list(facts.todos)
    if binding and facts.op:
        draft["summary"] = generated_summary(facts.op, facts.category)
    else:
        todo.append(("summary", "one sentence in our own words"))
    source: dict[str, Any] = {"title": f"aclnn{facts.op}" if facts.op else TODO}
    if facts.form == "saved":
        source["seed"] = facts.path.rsplit("/", 1)[-1]
    else:
        source["url"] = facts.path
    draft["source"] = source
    draft["cann_version"] = facts.release or TODO
    if not facts.release:
        todo.append(("cann_version", "the release the page describes (import --release VERSION)"))
    if binding:
        draft["tier"] = BINDING
    _products_named_by_notes(facts, todo)
    draft["products"] = [{"family": f} if ok else {"family": f, "supported": False} for f, ok in facts.products.items()]
    unmentioned = [f for f in products.ids if f not in facts.products]
    if unmentioned:
        todo.append(("products", f"the page says nothing about {', '.join(unmentioned)}"))
    functions = {}
    prototypes: dict[str, str] = {}
    for key in ("get_workspace_size", "launch"):
        text = facts.prototypes.get(key)
        if text is None:
            prototypes[key] = TODO
            todo.append((f"prototypes.{key}", "the page prints no such prototype"))
            continue
        try:
            functions[key] = parse_prototype(text)
            prototypes[key] = str(functions[key])
        except PrototypeError as exc:
            prototypes[key] = TODO
            todo.append((f"prototypes.{key}", f"the page's prototype does not parse: {exc.message}"))
    draft["prototypes"] = prototypes
    if facts.page_prototypes:
        draft["page_prototypes"] = dict(facts.page_prototypes)
    draft["parameters"] = _parameters(facts, functions.get("get_workspace_size"), todo, binding)
    draft["rules"] = _rules(facts, draft["parameters"])
    if draft["rules"]:
        todo.append(("rules", "hints read from the page's usage notes and dims column; confirm each"))
    if binding:
        draft["return_codes"] = _return_codes(facts, draft["parameters"], todo)
        draft["defects"] = [{"kind": kind, "note": note} for kind, note in facts.defects]
        draft["todo"] = [{"at": at, "note": note} for at, note in _unique(todo)]
        return draft
    outputs = {p["py_name"]: TODO for p in draft["parameters"] if p.get("role") == "output"} or {"out": TODO}
    draft["formula"] = {"latex": "\n\n".join(facts.latex) or TODO, "outputs": outputs}
    todo.append(("formula.outputs", "the formula as an expression of the formula language (docs/formula-language.md)"))
    draft["return_codes"] = _return_codes(facts, draft["parameters"], todo)
    draft["oracle"] = TODO
    todo.append(("oracle", "the CPU reference to compare with (aten op or recipe)"))
    draft["defects"] = [{"kind": kind, "note": note} for kind, note in facts.defects]
    if not facts.latex:  # recorded, so the op page and the audit say the formula is not the page's
        draft["defects"].append({"kind": "no_formula", "note": TODO})
        todo.append(("defects", "the page states no formula: say where the spec's formula comes from"))
    draft["todo"] = [{"at": at, "note": note} for at, note in _unique(todo)]
    return draft


def _products_named_by_notes(facts: PageFacts, todo: list) -> None:
    """A per-product dtype note about a family the product section leaves out: the page contradicts
    itself; the family is drafted as supported, with a defect and a TODO to confirm."""
    for note in facts.dtype_notes:
        for family in note.families:
            if family not in facts.products:
                facts.products[family] = True
                facts.defect("product", f"a dtype note names {family}, which the product section does not list")
                todo.append(("products", f"{family} is only named by a dtype note; confirm it is supported"))


def _unique(items):
    seen, out = set(), []
    for item in items:
        if item not in seen:
            seen.add(item)
            out.append(item)
    return out


def _role(param_name: str, c_type: str, page: PageParam | None, facts: PageFacts) -> str | None:
    typed = spec_type(c_type)
    if typed.kind == "tensor":
        if in_place(param_name, c_type, page):
            return "input"
        writable = typed.writable
        if page is not None and page.direction == "input" and writable:
            # the library writes through a non-const tensor: the page's "input" is a slip
            facts.defect(
                "prototype", f"the parameter table calls {param_name} an input; its C type {c_type} makes it an output"
            )
            return "output"
        if page is not None and page.direction in ("input", "output"):
            return page.direction
        return "output" if writable else "input"
    if typed.kind == "scalar":
        # a scalar list has no optional_scalar role: NULL is no default
        return "optional_scalar" if param_name.endswith("Optional") and not typed.is_list else "scalar"
    if typed.kind == "attribute":
        return "attribute"
    facts.unsupported(typed.unsupported)
    return None


def in_place(param_name: str, c_type: str, page: PageParam | None) -> bool:
    """A tensor the op reads and writes: the vendor's `...Ref` name or the page's input/output
    direction. The header often declares it const (the handle, not the data, is const)."""
    typed = spec_type(c_type)
    if typed.kind != "tensor":
        return False
    return param_name.endswith("Ref") or (page is not None and page.direction == "inout")


_ROLE_WORDS = {
    "input": "Input tensor",
    "output": "Output tensor",
    "scalar": "Scalar",
    "optional_scalar": "Optional scalar",
    "attribute": "Attribute",
}


def generated_summary(op: str, category: str | None) -> str:
    """A binding-tier op's summary, made of its name and category alone (no page text)."""
    where = f"the vendor's {category} operators" if category else "the vendor's operators"
    return f"aclnn{op}, one of {where}; binding tier: inputs are checked, outputs are not computed."


def _generated_param_summary(name: str, role: str | None) -> str:
    return f"{_ROLE_WORDS.get(role or '', 'Parameter')} {name} (binding tier: described by name only)."


def _free_py_name(py_name: str, role: str | None) -> str:
    """`py_name`, or with a trailing `_` where generated code already uses the name (`self` is
    `self_`, as PEP 8 suggests for a clash)."""
    if reserved_names.python_clash(py_name, output=role == "output") and not reserved_names.python_clash(py_name + "_"):
        return py_name + "_"
    return py_name


def _parameters(facts: PageFacts, function, todo: list, binding: bool = False) -> list[dict[str, Any]]:
    page_params = {p.name: p for p in facts.params}
    if function is None:
        names = [p.name for p in facts.params if p.name not in _TRAILING]
        c_params = [(name, page_params[name].c_type or "") for name in names]
    else:
        trailing = {p.name for p in function.params[-2:]} if _ends_in_trailing_pair(function) else set(_TRAILING)
        c_params = [(p.name, str(p.type)) for p in function.params if p.name not in trailing]
        for page in facts.params:
            if page.name not in {n for n, _ in c_params} and page.name not in trailing | set(_TRAILING):
                facts.defect("name", f"the parameter table names {page.name!r}, which the prototype does not have")
    out = []
    for index, (name, c_type) in enumerate(c_params):
        page = page_params.get(name)
        at = f"parameters.{index}"
        role = _role(name, c_type, page, facts)
        py_name = _free_py_name(snake(name), role)
        entry: dict[str, Any] = {"name": name, "py_name": py_name if not keyword.iskeyword(py_name) else TODO}
        if keyword.iskeyword(py_name):
            todo.append((f"{at}.py_name", f"{py_name!r} is a Python keyword"))
        entry["role"] = role or TODO
        if role is not None and spec_type(c_type).is_list:
            entry["list"] = True
        if role == "input" and in_place(name, c_type, page):
            entry["inplace"] = True
        if binding:
            entry["summary"] = _generated_param_summary(name, role)
        else:
            entry["summary"] = TODO
            todo.append((f"{at}.summary", "one sentence in our own words"))
        if role is None:
            typed = spec_type(c_type)
            reason = typed.unsupported or f"cannot tell the role of C type {c_type!r}"
            todo.append((f"{at}.role", reason))
        if page is None:
            todo.append((at, f"{name} is in the prototype but not in the page's parameter table"))
        elif page.c_type and function is not None and page.c_type.replace(" ", "") not in c_type.replace(" ", ""):
            facts.defect("prototype", f"the parameter table types {name} as {page.c_type}; the prototype as {c_type}")
        if role in ("input", "output"):
            entry["dtypes"] = _tensor_dtypes(facts, page, at, todo)
            formats = _tensor_formats(facts, page, at, todo)
            if formats:
                entry["formats"] = formats
        elif role in ("scalar", "optional_scalar"):
            dtypes = page.dtypes if page else []
            # binding tier: a float dtype the page lists, else (an integer-only scalar) int64 or
            # the first integer it lists (the planner gives such a scalar whole values)
            floats = [d for d in ("float32", "float16", "bfloat16", "float64") if d in dtypes]
            whole = [d for d in dtypes if CATEGORY.get(d) == "integer"]
            whole = ["int64"] if "int64" in whole else whole
            entry["scalar_dtype"] = (
                "float32"
                if "float32" in dtypes or not dtypes
                else (floats or whole)[0]
                if (floats or whole) and binding
                else TODO
            )
            if entry["scalar_dtype"] == TODO:
                todo.append((f"{at}.scalar_dtype", "the aclDataType the binding creates for this scalar"))
            if dtypes:
                entry["scalar_dtypes"] = _scalar_dtypes(facts, page, at, todo)
            constraints = _constraints(name, _sentences_about(facts, name), f"{at}.constraints", todo)
            if constraints:
                entry["constraints"] = constraints
            if role == "optional_scalar":
                default = _default(page.text if page else "")
                entry["default"] = default if default is not None else TODO
                if default is None:
                    todo.append((f"{at}.default", "the value a NULL pointer means"))
        elif role == "attribute":
            entry["c_type"] = c_type.replace("const ", "").replace(" ", "")
            if entry["c_type"] == "char*":
                choices = _choices(page.text if page else "")
                if choices or not binding:  # binding tier: no choices read, any string goes
                    entry["choices"] = choices or TODO
                if not choices:
                    todo.append((f"{at}.choices", "the strings this attribute accepts"))
            if entry["c_type"] == "int64_t":
                tensor = _dim_of(facts, name)
                if tensor:
                    entry["dim_of"] = tensor
                    todo.append((f"{at}.dim_of", f"the page bounds {name} by the dims of {tensor}: confirm"))
            default = _attribute_default(page.text if page else "", entry["c_type"])
            if default is not None:
                entry["default"] = default
        out.append(entry)
    _inplace_by_name(facts.op or "", out)
    return out


def _ends_in_trailing_pair(function) -> bool:
    """The first phase ends in `uint64_t*` and `aclOpExecutor**`, whatever the header names them."""
    last = [(p.type.base, p.type.pointer_depth) for p in function.params[-2:]]
    return last == [("uint64_t", 1), ("aclOpExecutor", 2)]


def _inplace_by_name(op: str, params: list[dict[str, Any]]) -> None:
    """An API named in place (`aclnnInplaceX`, `aclnnForeachXInplace`) that writes no tensor
    otherwise writes the input its out-of-place twin reads as `self`, `x` or `input` (else its first)."""
    if not (op.startswith("Inplace") or op.endswith("Inplace")):
        return
    tensors = [p for p in params if p.get("role") in ("input", "output")]
    if len(tensors) == 1 and tensors[0]["role"] == "output" and tensors[0]["name"] in _WRITTEN_NAMES:
        # `aclTensor* self` its one tensor, read and written: the in-place input, not an output
        entry = dict(tensors[0])
        tensors[0].clear()
        for key, value in entry.items():
            tensors[0][key] = "input" if key == "role" else value
            if key == "role":
                tensors[0]["inplace"] = True
        if entry.get("summary") == _generated_param_summary(entry["name"], "output"):
            tensors[0]["summary"] = _generated_param_summary(entry["name"], "input")
        return
    if any(p.get("role") == "output" or p.get("inplace") for p in params):
        return
    inputs = [p for p in params if p.get("role") == "input" and not p.get("optional")]
    written = next((p for name in _WRITTEN_NAMES for p in inputs if p["name"] == name), inputs[0] if inputs else None)
    if written is not None:
        written["inplace"] = True


_WRITTEN_NAMES = ("self", "x", "input")  # the tensor an in-place API writes, by the vendor's naming


_BOUNDS = (  # longest first: 大于等于 before 大于
    ("大于等于", ">="),
    ("小于等于", "<="),
    ("不等于", "!="),
    ("大于", ">"),
    ("小于", "<"),
    (">=", ">="),
    ("<=", "<="),
    ("!=", "!="),
    (">", ">"),
    ("<", "<"),
)
_NUMBER = r"\s*([-+]?\d+(?:\.\d+)?)"
_CONDITION = re.compile(r"如果|若|当|时|if |when ", re.I)
# "may not be negative" in the page's words: a bound >= 0
_NOT_NEGATIVE = re.compile(
    r"不(?:可以|能|可|应)(?:是|为)?负数?|非负|must not be negative|cannot be negative|non-negative", re.I
)
# "<name> is true/false" as a condition: `selfIsResult为true时`, `when selfIsResult is true`
# (a match starts only where a run of word characters starts, so no run is scanned twice)
_BOOL_CONDITION = re.compile(
    r"(?<![A-Za-z0-9_])[0-9]*([A-Za-z_][A-Za-z0-9_]*)\s*(?:为|是|==|is|=)\s*(true|false)", re.I
)
_WORD_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_")


def _subject(text: str) -> str | None:
    """The name `text` ends with (blanks after it allowed), or None: what `[A-Za-z_]\\w*\\s*$`
    finds, read from the end (a search from every start was quadratic on a long word)."""
    text = text.rstrip()
    start = len(text)
    while start and text[start - 1] in _WORD_CHARS:
        start -= 1
    while start < len(text) and text[start].isdigit():
        start += 1
    return text[start:] or None


def _sentences_about(facts: PageFacts, name: str) -> list[str]:
    """The sentences that may bound scalar `name`: every sentence of its own row, and the sentences
    of other rows that name it (a page often states a bound in the row of the parameter that sets
    the condition)."""
    found: list[str] = []
    for param in facts.params:
        for sentence in re.split(r"[。；;\n]", param.text):
            if param.name == name or re.search(rf"(?<![A-Za-z0-9_]){re.escape(name)}(?![A-Za-z0-9_])", sentence):
                found.append(sentence)
    return found


def _bound(name: str, sentence: str) -> tuple[str, float | int, str] | None:
    """(op, value, the words) of a bound the sentence puts on `name`, or None. A comparison whose
    left side is another name (`self < 0` in the slope's row) says nothing about `name`."""
    for word, op in _BOUNDS:
        match = re.search(re.escape(word) + _NUMBER, sentence)
        if not match:
            continue
        subject = _subject(sentence[: match.start()])
        if subject and subject != name:
            return None
        number = float(match.group(1))
        return op, int(number) if number.is_integer() else number, f"{word}{match.group(1)}"
    if _NOT_NEGATIVE.search(sentence):
        return ">=", 0, "not negative"
    return None


def _constraints(name: str, sentences: list[str], at: str, todo: list) -> list[dict[str, Any]]:
    """`取值范围应大于等于0` -> {op: ">=", value: 0}; under a condition on a bool parameter
    (`selfIsResult为true时，...不可以是负数`) the bound gets `when`; any other condition is a TODO."""
    found: list[dict[str, Any]] = []
    for sentence in sentences:
        bound = _bound(name, sentence)
        if bound is None:
            continue
        op, value, words = bound
        constraint: dict[str, Any] = {"op": op, "value": value}
        if _CONDITION.search(sentence):
            condition = [m for m in _BOOL_CONDITION.finditer(sentence) if m.group(1) != name]
            if len(condition) != 1:
                todo.append((at, f"a bound under a condition the draft cannot express: {words} ({sentence.strip()!r})"))
                continue
            constraint["when"] = {condition[0].group(1): condition[0].group(2).lower() == "true"}
        if constraint not in found:
            found.append(constraint)
    return found


_DIM_RANGE = re.compile(r"维度范围|维度的范围|dim(?:ension)? range|out of range|超出", re.I)


def _dim_of(facts: PageFacts, name: str) -> str | None:
    """The tensor whose dims an int64_t attribute picks, when a sentence of the page bounds the
    attribute by that tensor's dim range (`dim值不在gradOutput维度范围内`)."""
    tensors = [p.name for p in facts.params if p.name != name]
    texts = [r.description for r in facts.return_codes] + [p.text for p in facts.params]
    for text in texts:
        for sentence in re.split(r"[。；;\n]", text):
            if not (_mentions(sentence, name) and _DIM_RANGE.search(sentence)):
                continue
            named = [t for t in tensors if _mentions(sentence, t)]
            if len(named) == 1:
                return named[0]
    return None


def _mentions(text: str, name: str) -> bool:
    return re.search(rf"(?<![A-Za-z0-9_]){re.escape(name)}(?![A-Za-z0-9_])", text) is not None


def _attribute_default(text: str, c_type: str) -> bool | int | float | str | None:
    """The default a page states for an attribute (`默认值为true`, `defaults to 1`), typed by its C type."""
    match = re.search(
        r"默认值?(?:为|是)?\s*[\"“]?([A-Za-z0-9_.+-]+)|defaults? (?:to|is)\s*[\"“]?([A-Za-z0-9_.+-]+)", text, re.I
    )
    if not match:
        return None
    word = next(g for g in match.groups() if g)
    if c_type == "bool":
        return {"true": True, "false": False}.get(word.lower())
    try:
        if c_type == "int64_t":
            return int(word)
        if c_type == "double":
            return float(word)
    except ValueError:
        return None
    return word if c_type == "char*" else None


def _choices(text: str) -> list[str]:
    """The quoted words a char* attribute's text lists, in page order, e.g. "none" and "tanh"."""
    found = re.findall(r'["“]([A-Za-z_][A-Za-z0-9_]*)["”]', text)
    return list(dict.fromkeys(found))


def _default(text: str) -> float | None:
    match = re.search(
        r"以\s*([-+]?\d+(?:\.\d+)?)\s*(?:进行)?计算|默认值?为?\s*([-+]?\d+(?:\.\d+)?)|defaults? to\s*([-+]?\d+(?:\.\d+)?)",
        text,
    )
    if not match:
        return None
    number = next(g for g in match.groups() if g)
    return float(number)


def _scalar_dtypes(facts: PageFacts, page: PageParam, at: str, todo: list) -> Any:
    """One list when every supported family takes the same dtypes, else entries per family."""
    groups = _tensor_dtypes(facts, page, at, todo)
    if isinstance(groups, list) and len(groups) == 1:
        return groups[0]["dtypes"]
    return groups


def _tensor_dtypes(facts: PageFacts, page: PageParam | None, at: str, todo: list) -> Any:
    supported = [f for f, ok in facts.products.items() if ok]
    per_family: dict[str, list[str]] = {}
    for family in supported:
        dtypes = list(page.dtypes) if page else []
        if page and family in page.family_dtypes:
            dtypes = page.family_dtypes[family]
        for note in facts.dtype_notes:
            own = note.dtypes_for(page.name) if page else note.dtypes
            if family not in note.families or own is None:
                continue  # the note is about other products, or lists other parameters' dtypes
            if note.fallback and page and (page.dtypes or family in page.family_dtypes):
                continue  # another parameter's note: this one states its own dtypes
            if note.mode == "only":
                dtypes = own
            elif note.mode == "except":
                dtypes = [d for d in dtypes if d not in own]
            elif note.mode == "extra":
                dtypes = dtypes + [d for d in own if d not in dtypes]
            else:
                todo.append(
                    (f"{at}.dtypes", f"{family}: a per-product condition the draft cannot express: {note.text!r}")
                )
        if dtypes:
            per_family[family] = dtypes
        else:
            todo.append((f"{at}.dtypes", f"the page gives no dtypes for {family}"))
    groups: list[dict[str, Any]] = []
    for family, dtypes in per_family.items():
        same = next((g for g in groups if g["dtypes"] == dtypes), None)
        if same:
            same["families"].append(family)
        else:
            groups.append({"families": [family], "dtypes": dtypes})
    if not groups:
        return TODO
    return groups


def _tensor_formats(facts: PageFacts, page: PageParam | None, at: str, todo: list) -> list[dict[str, Any]]:
    """The page's format column for every supported family; nothing when it says ND alone (what
    a spec without formats means) or nothing at all."""
    if page is None:
        return []
    formats, unknown = page_formats(page.formats)
    for word in unknown:
        todo.append((f"{at}.formats", f"the page's format {word!r} names no aclFormat"))
    supported = [f for f, ok in facts.products.items() if ok]
    if not formats or formats == ["ND"] or not supported:
        return []
    return [{"families": supported, "formats": formats}]


def _rules(facts: PageFacts, params: list[dict[str, Any]]) -> list[dict[str, Any]]:
    page = {p.name: p for p in facts.params}
    tensors = [p["name"] for p in params if p.get("role") in ("input", "output")]
    rules: list[dict[str, Any]] = []
    ranks = {}
    for name in tensors:
        match = re.fullmatch(r"\s*(\d+)\s*-\s*(\d+)\s*", page[name].dims) if name in page else None
        if match:
            ranks.setdefault(int(match.group(2)), []).append(name)
    lowest = {}
    for name in tensors:
        match = re.fullmatch(r"\s*(\d+)\s*-\s*(\d+)\s*", page[name].dims) if name in page else None
        if match and int(match.group(1)) > 0:  # "1-8": at least one dim
            lowest.setdefault(int(match.group(1)), []).append(name)
    for rank, names in ranks.items():
        rules.append({"kind": MAX_RANK.name, "params": names, "rank": rank})
    for rank, names in lowest.items():
        rules.append({"kind": MIN_RANK.name, "params": names, "rank": rank})
    rules += _relation_hints(params, page)
    empty_no = [
        n
        for n in tensors
        if n in page and re.search(r"不支持空Tensor|empty tensors? (is|are) not supported", page[n].text, re.I)
    ]
    empty_yes = [
        n
        for n in tensors
        if n in page and n not in empty_no and re.search(r"支持空Tensor|empty tensors? supported", page[n].text, re.I)
    ]
    for names, allowed in ((empty_no, False), (empty_yes, True)):
        if names:
            rules.append({"kind": EMPTY.name, "params": names, "allowed": allowed})
    rules += _sameness_hints(tensors, page, {p["name"]: _listed_dtypes(p) for p in params})
    non_contiguous = [n for n in tensors if n in page and page[n].non_contiguous.strip() == "√"]
    if non_contiguous:
        rules.append({"kind": NON_CONTIGUOUS.name, "params": non_contiguous, "allowed": True})
    for kind in KINDS:  # the kinds that read the parameters' dtype lists (output_dtype)
        rules += kind.drafts(params, _related(rules))
    return rules


def _related(rules: list[dict[str, Any]]) -> dict[str, list[set[str]]]:
    """relation -> the tensors each drafted rule of that relation names."""
    found: dict[str, list[set[str]]] = {}
    for rule in rules:
        kind = kind_of(rule)
        found.setdefault(kind.relation, []).append(set(kind.names(rule)))
    return found


_BROADCAST = re.compile(BROADCAST.note_pattern, re.I)
_PROMOTE = re.compile(PROMOTE.note_pattern, re.I)
_CASTABLE = re.compile(CASTABLE.note_pattern, re.I)


def _relation_hints(params: list[dict[str, Any]], page: dict[str, PageParam]) -> list[dict[str, Any]]:
    """Broadcasting and dtype promotion, from the inputs' usage notes ("shape broadcasts with
    self", "dtypes follow the promotion rules"): a broadcast rule to the one output, and a promote
    rule, or a castable one when the output's note says its dtype is one the promoted dtype casts
    to. With several outputs there is no telling which one: no hint (the TODO on rules stands)."""
    inputs = [p["name"] for p in params if p.get("role") == "input"]
    outputs = [p["name"] for p in params if p.get("role") == "output"]
    text = {n: page[n].text if n in page else "" for n in inputs + outputs}
    found: list[dict[str, Any]] = []
    if len(outputs) != 1:
        return found
    out = outputs[0]
    broadcasting = _with_named([n for n in inputs if _BROADCAST.search(text[n])], inputs, text)
    if len(broadcasting) >= 2:
        found.append({"kind": BROADCAST.name, "inputs": broadcasting, "output": out})
    promoting = _with_named([n for n in inputs if _PROMOTE.search(text[n])], inputs, text)
    lists = {p["name"]: _listed_dtypes(p) for p in params}
    shared = set.intersection(*(lists[n] for n in promoting)) if promoting else set()
    if lists[out] and _categories(shared) - _categories(lists[out]):
        # an index output (int32/int64 beside float inputs) cannot hold the promoted dtype
        promoting = []
    if len(promoting) >= 2:
        kind = (CASTABLE if _CASTABLE.search(text[out]) else PROMOTE).name
        found.append({"kind": kind, "inputs": promoting, "output": out})
    return found


def _categories(dtypes: set[str]) -> set[str]:
    """The dtype categories (float, integer, bool, complex) among `dtypes`."""
    return {CATEGORY[d] for d in dtypes if d in CATEGORY}


def _same_dtype_members(named: list[str], lead: str, lists: Mapping[str, set[str]]) -> list[str]:
    """The tensors a same_dtype note names that can share a dtype: those whose dtype lists hold the
    same categories as most of them (the lead's, on a tie); a tensor without a list stays. An int64
    index a note names beside float data for their shapes is no member."""
    groups: dict[frozenset, list[str]] = {}
    for name in named:
        if lists.get(name):
            groups.setdefault(frozenset(_categories(lists[name])), []).append(name)
    if len(groups) <= 1:
        return named
    lead_key = frozenset(_categories(lists[lead])) if lists.get(lead) else None
    best = max(groups, key=lambda k: (len(groups[k]), k == lead_key))
    return [n for n in named if not lists.get(n) or n in groups[best]]


def _listed_dtypes(param: Mapping[str, Any]) -> set[str]:
    """Every dtype a drafted parameter's rows list (empty when it has none, or a TODO)."""
    rows = param.get("dtypes")
    if not isinstance(rows, list):
        return set()
    return {d for row in rows if isinstance(row, Mapping) for d in row.get("dtypes", ()) if isinstance(d, str)}


def _with_named(noted: list[str], inputs: list[str], text: Mapping[str, str]) -> list[str]:
    """The inputs whose note states the relation, and the inputs those notes name ("self's dtype
    promotes with gradOutput's" relates both), in parameter order."""
    named = {t for n in noted for t in inputs if t != n and _names(t, text[n])}
    return [n for n in inputs if n in noted or n in named]


def _names(tensor: str, text: str) -> bool:
    return re.search(rf"(?<![A-Za-z0-9_]){re.escape(tensor)}(?![A-Za-z0-9_])", text) is not None


_SAMENESS = tuple((k.name, re.compile(k.note_pattern, re.I)) for k in (SAME_SHAPE, SAME_DTYPE))


def _sameness_hints(
    tensors: list[str], page: dict[str, PageParam], lists: Mapping[str, set[str]] | None = None
) -> list[dict[str, Any]]:
    """`X、Y和Z的shape一致` in a usage note -> same_shape(X, Y, Z) (the row's own tensor included).
    A same_dtype keeps the tensors whose dtype lists (`lists`) can share a dtype
    (`_same_dtype_members`)."""
    lists = lists or {}
    found: list[dict[str, Any]] = []
    for name in tensors:
        for line in page[name].text.splitlines() if name in page else []:
            for kind, pattern in _SAMENESS:
                # "the shape after broadcasting equals ..." is a broadcast rule, not sameness
                if not pattern.search(line) or _BROADCAST.search(line):
                    continue
                named = {name} | {
                    t for t in tensors if re.search(rf"(?<![A-Za-z0-9_]){re.escape(t)}(?![A-Za-z0-9_])", line)
                }
                params = [t for t in tensors if t in named]
                if kind == SAME_DTYPE.name:
                    params = _same_dtype_members(params, name, lists)
                rule = {"kind": kind, "params": params}
                if len(rule["params"]) >= 2 and rule not in found:
                    found.append(rule)
    return found


def required_pointers(params: list[dict[str, Any]]) -> list[str]:
    """Parameters a NULL of which is an error: tensors and scalars that are not optional, pointer
    attributes with no default."""
    return [
        p["name"]
        for p in params
        if (p.get("role") in ("input", "output", "scalar") and not p.get("optional"))
        or (p.get("role") == "attribute" and p.get("c_type") in POINTER_C_TYPES and "default" not in p)
    ]


# a row that names no parameter ("a tensor passed is NULL", "the dtype is not supported") is about
# every parameter its check can apply to
_GENERIC_ROWS = {
    "null_pointer": required_pointers,
    "dtype": lambda params: [p["name"] for p in params if p.get("role") in ("input", "output")],
}


def _return_codes(facts: PageFacts, params: list[dict[str, Any]], todo: list) -> list[dict[str, Any]]:
    names = [p["name"] for p in params]
    out = []
    for index, row in enumerate(facts.return_codes):
        mentioned = [
            n for n in names if re.search(rf"(?<![A-Za-z0-9_]){re.escape(n)}(?![A-Za-z0-9_])", row.description)
        ]
        check = next((c for c, words in _CHECKS if any(w.lower() in row.description.lower() for w in words)), None)
        dims = [p["name"] for p in params if p.get("dim_of") and _mentions(row.description, p["name"])]
        if dims and _DIM_RANGE.search(row.description):  # "dim is outside gradOutput's dims"
            check, mentioned = "attribute_value", dims
        if check == "dtype":  # a dtype row tests the tensors' dtype lists; a scalar it mentions is context
            mentioned = [
                n for n in mentioned if any(p["name"] == n and p.get("role") in ("input", "output") for p in params)
            ]
        if not mentioned and check in _GENERIC_ROWS:  # "a tensor passed is NULL": every one it can be
            mentioned = _GENERIC_ROWS[check](params)
        if row.status not in (161001, 161002):
            todo.append((f"return_codes.{index}", f"status {row.status} ({row.name}) is not one a spec can name yet"))
            continue
        entry: dict[str, Any] = {"status": row.status, "check": check or TODO, "params": mentioned or TODO}
        entry["condition"] = row_condition(check, mentioned) if check and mentioned else TODO
        if check is None or not mentioned:
            todo.append(
                (f"return_codes.{len(out)}", f"the row for {row.status} names no check or parameter the draft can read")
            )
        out.append(entry)
    return out or TODO
