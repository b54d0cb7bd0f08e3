"""What one doc page says, before it becomes a draft spec: the readers fill these, the draft
writer turns them into the spec language. Nothing here interprets; it only records."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from aclnngen.core.formats import FORMATS

# The vendor's dtype spellings on doc pages -> the spec's (NumPy) names.
PAGE_DTYPES = {
    "FLOAT": "float32",
    "FLOAT32": "float32",
    "FP32": "float32",
    "FLOAT16": "float16",
    "FP16": "float16",
    "BFLOAT16": "bfloat16",
    "BF16": "bfloat16",
    "DOUBLE": "float64",
    "FLOAT64": "float64",
    "INT8": "int8",
    "INT16": "int16",
    "INT32": "int32",
    "INT64": "int64",
    "UINT8": "uint8",
    "UINT16": "uint16",
    "UINT32": "uint32",
    "UINT64": "uint64",
    "BOOL": "bool",
    "COMPLEX64": "complex64",
    "COMPLEX128": "complex128",
    "INT4": "int4",
    "HIFLOAT8": "hifloat8",
    "FLOAT8_E5M2": "float8_e5m2",
    "FLOAT8_E4M3FN": "float8_e4m3fn",
    "FLOAT8_E8M0": "float8_e8m0fnu",
    "FLOAT4_E2M1": "float4_e2m1fn",
    "FLOAT4_E1M2": "float4_e1m2",
    # short spellings of the narrow floats some pages use
    "HIF8": "hifloat8",
    "FP8_E5M2": "float8_e5m2",
    "FP8_E4M3": "float8_e4m3fn",
    "FP8_E4M3FN": "float8_e4m3fn",
    "FP8_E8M0": "float8_e8m0fnu",
    "FP4_E2M1": "float4_e2m1fn",
}
# a footnote mark flattened into the word ("FLOAT32¹" read as "FLOAT321", "FLOAT¹" as "FLOAT1"): one
# digit after a name that ends in one, so "INT8" is never "INT" and a mark, or a small mark (1-3)
# after a name that ends in a letter ("FLOAT8" stays no dtype: it is no mark)
_DTYPE_WORD = re.compile(
    r"(?<![A-Za-z0-9_])("
    + "|".join(sorted(PAGE_DTYPES, key=len, reverse=True))
    + r")(?:(?<=[0-9])[0-9]|(?<=[A-Z])[1-3])?(?![A-Za-z0-9_])"
)

# The vendor's format spellings on doc pages that are not the spec's (aclFormat's member names
# without their prefix, aclnngen.core.formats): pages write the fractal formats short.
PAGE_FORMAT_ALIASES = {"NZ": "FRACTAL_NZ"}
_FORMAT_SEPARATORS = re.compile(r"[、,，/\s]+")


def page_formats(text: str) -> tuple[list[str], list[str]]:
    """The formats of a page's format column ("ND、NCHW"), as the spec's names, and the words that
    name no format (for a TODO). "-" or an empty cell: none."""
    found: list[str] = []
    unknown: list[str] = []
    for word in _FORMAT_SEPARATORS.split(text.replace("<br>", " ")):
        word = word.strip().upper()
        if not word or word == "-":
            continue
        name = PAGE_FORMAT_ALIASES.get(word, word)
        if name not in FORMATS:
            unknown.append(word)
        elif name not in found:
            found.append(name)
    return found, unknown


# The product-marker ids of newer vendor Markdown (`<!-- npu="910b" id3 -->`) -> product families.
NPU_IDS = {
    "950": "ascend950",
    "A3": "a3",
    "910b": "a2",
    "310b": "atlas_200i_500_a2",
    "310p": "inference",
    "910": "training",
}


def first_dtype_at(text: str) -> int:
    """Where the first dtype word of `text` starts (len(text) when there is none)."""
    match = _DTYPE_WORD.search(text)
    return match.start() if match else len(text)


def page_dtypes(text: str) -> list[str]:
    """Every dtype a piece of page text names, in page order, without repeats."""
    out: list[str] = []
    for word in _DTYPE_WORD.findall(text):
        name = PAGE_DTYPES[word]
        if name not in out:
            out.append(name)
    return out


_C_INTEGER = re.compile(r"\b(u?int(?:8|16|32|64))_t\b", re.I)


def cell_dtypes(cell: str) -> list[str]:
    """The dtypes a table's dtype cell lists: as page_dtypes, or, where it names none in the usual
    capitals, as it names them in lower case or as C integer types (`float16/bfloat16`, `uint8_t`)."""
    return page_dtypes(cell) or page_dtypes(_C_INTEGER.sub(r"\1", cell).upper())


_DTYPE_IS = re.compile(
    r"数据类型(?:为|是)\s*((?:[A-Z][A-Z0-9_]*\s*[、,，或/]?\s*)+)|dtype is ((?:[A-Z][A-Z0-9_]*[, /]*)+)"
)


def stated_dtypes(text: str) -> list[str]:
    """The dtypes a description states plainly for its own tensor ("数据类型为BOOL", "dtype is
    BOOL"), when its dtype cell lists none."""
    match = _DTYPE_IS.search(text)
    return page_dtypes(next(g for g in match.groups() if g)) if match else []


@dataclass
class PageParam:
    """One row of the first function's parameter table (or one bullet of a saved page)."""

    name: str
    direction: str | None = None  # "input" / "output" as the page says
    c_type: str | None = None  # the type the table prints beside the name, when it does
    dtypes: list[str] = field(default_factory=list)  # the dtype column, spec names
    text: str = ""  # description and usage notes, joined
    formats: str = ""  # the format column as the page writes it ("ND、NCHW")
    dims: str = ""
    non_contiguous: str = ""
    # family -> dtypes, from per-product notes (inline or below the table)
    family_dtypes: dict[str, list[str]] = field(default_factory=dict)


@dataclass
class PageReturnCode:
    status: int
    name: str
    description: str


@dataclass
class DtypeNote:
    """A per-product exception: families, and either a list, an exclusion or free text."""

    families: list[str]
    dtypes: list[str]
    # "only" (positive list), "except" (exclusion), "extra" (the table's dtypes and these), "text"
    # (a condition without dtypes)
    mode: str
    text: str
    # Parameter -> its own dtypes, when the note lists them per parameter ("a and b take X. c takes
    # Y."); empty when the note speaks of every parameter alike.
    per_param: dict[str, list[str]] = field(default_factory=dict)
    # Read under one parameter's bullet (older pages): for the others only where they state no dtypes
    fallback: bool = False

    def dtypes_for(self, name: str) -> list[str] | None:
        """The note's dtypes for parameter `name`, or None when the note names others only."""
        if not self.per_param:
            return self.dtypes
        return self.per_param.get(name)


@dataclass
class PageFacts:
    path: str
    form: str  # "markdown" or "saved"
    op: str | None = None  # without the aclnn prefix
    release: str | None = None
    products: dict[str, bool] = field(default_factory=dict)
    product_format: str = ""  # "table", "markers", "list"
    prototypes: dict[str, str] = field(default_factory=dict)  # get_workspace_size / launch
    # the page's own prototypes where the vendor header's replaced them (importer/header.py)
    page_prototypes: dict[str, str] = field(default_factory=dict)
    params: list[PageParam] = field(default_factory=list)
    dtype_notes: list[DtypeNote] = field(default_factory=list)
    return_codes: list[PageReturnCode] = field(default_factory=list)
    latex: list[str] = field(default_factory=list)
    todos: list[tuple[str, str]] = field(default_factory=list)  # (where in the draft, what is missing)
    defects: list[tuple[str, str]] = field(default_factory=list)  # (defect kind, note)
    unparsed: list[str] = field(default_factory=list)  # what the reader saw but could not read
    # C types of the prototype the spec language has no form for yet (importer/ctypes.py), reasons
    unsupported_types: list[str] = field(default_factory=list)
    shared_page: bool = False  # the page documents several APIs (`aclnnX&aclnnInplaceX.md`); this is one
    category: str | None = None  # the vendor's category folder (activation, math, ...), when known
    # what todos and defects hold, for the repeat check (a list scan per entry was quadratic)
    _seen: set = field(default_factory=set, repr=False, compare=False)

    def todo(self, at: str, note: str) -> None:
        if ("todo", at, note) not in self._seen:
            self._seen.add(("todo", at, note))
            self.todos.append((at, note))

    def unsupported(self, reason: str) -> None:
        if reason not in self.unsupported_types:
            self.unsupported_types.append(reason)

    def defect(self, kind: str, note: str) -> None:
        if ("defect", kind, note) not in self._seen:
            self._seen.add(("defect", kind, note))
            self.defects.append((kind, note))
