"""A small model of C function prototypes: parse any spelling, print one canonical text.

Only the subset of C that the aclnn ABI uses is accepted: a return type, a name and a list of
named parameters, where each type is one base name (an identifier, a builtin such as `int`, or one
of a few two-word builtins) with an optional `const`, followed by pointer levels that may each be
`const`. Everything else (function pointers, arrays, varargs, default values, references, comments,
storage classes, `volatile`) is rejected with a message that says what was found.

Canonical text (what `str()` prints and what specs must contain):

* single spaces, the star attached to the type: `const aclTensor* const* value`;
* `const` written before the base type (`char const*` is read as `const char*`);
* `, ` between parameters, `(void)` for an empty list, no trailing `;`.

`CFunction.parse_canonical` is how specs load a prototype: the text must already be canonical, so
a spec can be compared, grepped and diffed without normalising it first.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Iterable

from .errors import FieldProblem, non_ascii

__all__ = [
    "ALLOWED_MULTIWORD_TYPES",
    "BUILTIN_TYPES",
    "C_KEYWORDS",
    "CFunction",
    "CParam",
    "CType",
    "PrototypeError",
    "diff_prototypes",
    "is_c_identifier",
    "normalize_prototype",
    "parse_ctype",
    "parse_prototype",
]


class PrototypeError(FieldProblem):
    """A prototype (or a type) that cannot be parsed, or is not in canonical form.

    A `FieldProblem`, so it is not a ValueError: raised inside a pydantic validator it propagates
    unchanged and the spec loader turns `loc` into `file:line`.
    """

    def __init__(self, loc: tuple, message: str):
        super().__init__(loc, message)

    def with_loc(self, loc: tuple) -> "PrototypeError":
        return PrototypeError(loc, self.message)


# C11 keywords plus the C23 ones; none of them may name a function, a parameter or a typedef.
C_KEYWORDS: frozenset[str] = frozenset(
    """
    auto break case char const continue default do double else enum extern float for goto if
    inline int long register restrict return short signed sizeof static struct switch typedef
    union unsigned void volatile while _Alignas _Alignof _Atomic _Bool _Complex _Generic
    _Imaginary _Noreturn _Static_assert _Thread_local alignas alignof bool constexpr false
    nullptr static_assert thread_local true typeof typeof_unqual _BitInt _Decimal32 _Decimal64
    _Decimal128
    """.split()
)

# Keywords that may stand alone as a base type.
BUILTIN_TYPES: frozenset[str] = frozenset(["void", "char", "short", "int", "long", "float", "double", "bool"])

# The only multi-word base types accepted; anything longer should use a fixed-width typedef.
ALLOWED_MULTIWORD_TYPES: tuple[str, ...] = ("unsigned char", "signed char", "unsigned int")

_TYPE_WORDS = BUILTIN_TYPES | {"unsigned", "signed"}

_UNSUPPORTED_WORDS: dict[str, str] = {
    "volatile": "'volatile' is not supported",
    "restrict": "'restrict' is not supported",
    "_Atomic": "'_Atomic' is not supported",
    "static": "storage class 'static' does not belong in a prototype",
    "extern": "storage class 'extern' does not belong in a prototype",
    "register": "storage class 'register' does not belong in a prototype",
    "auto": "storage class 'auto' does not belong in a prototype",
    "inline": "'inline' does not belong in a prototype",
    "typedef": "'typedef' does not belong in a prototype",
    "struct": "elaborated types ('struct X') are not supported; use the typedef name",
    "union": "elaborated types ('union X') are not supported; use the typedef name",
    "enum": "elaborated types ('enum X') are not supported; use the typedef name",
}

_IDENT_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


def is_c_identifier(name: object) -> bool:
    """True for an ASCII C identifier that is not a keyword."""
    return isinstance(name, str) and bool(_IDENT_RE.match(name)) and name not in C_KEYWORDS


def _check_name(name: object, what: str) -> None:
    if not isinstance(name, str):
        raise PrototypeError((), f"{what}: expected a string name, got {type(name).__name__}")
    if not _IDENT_RE.match(name):
        raise PrototypeError((), f"{what}: {name!r} is not a C identifier{non_ascii(name)}")
    if name in C_KEYWORDS:
        raise PrototypeError((), f"{what}: {name!r} is a C keyword and cannot be used as a name")


# ---------------------------------------------------------------------------------------------
# The model


@dataclass(frozen=True)
class CType:
    """A C type: a base name, whether the base is const, and one const flag per pointer level.

    `pointers[0]` is the level nearest the base: `const aclTensor* const* v` is
    `CType("aclTensor", const=True, pointers=(True, False))`.
    """

    base: str
    const: bool = False
    pointers: tuple[bool, ...] = ()

    def __post_init__(self) -> None:
        if not isinstance(self.pointers, tuple):
            object.__setattr__(self, "pointers", tuple(self.pointers))
        if not all(isinstance(p, bool) for p in self.pointers):
            raise PrototypeError((), f"pointer const flags must be booleans, got {self.pointers!r}")
        if not isinstance(self.const, bool):
            raise PrototypeError((), f"const must be a boolean, got {self.const!r}")
        if self.base in ALLOWED_MULTIWORD_TYPES or self.base in BUILTIN_TYPES:
            return
        _check_name(self.base, "type")

    # -- properties ----------------------------------------------------------------------------
    @property
    def pointer_depth(self) -> int:
        return len(self.pointers)

    @property
    def is_pointer(self) -> bool:
        return bool(self.pointers)

    @property
    def is_const(self) -> bool:
        """Whether the base type is const (`const aclTensor*` is; `aclTensor* const` is not)."""
        return self.const

    @property
    def top_const(self) -> bool:
        """Const of the outermost level: the pointer itself, or the base if not a pointer.

        Top-level const on a by-value parameter does not change the ABI.
        """
        return self.pointers[-1] if self.pointers else self.const

    @property
    def is_void(self) -> bool:
        return self.base == "void" and not self.pointers

    @property
    def pointee(self) -> "CType":
        """The type one pointer level down."""
        if not self.pointers:
            raise PrototypeError((), f"{self} is not a pointer")
        return CType(self.base, self.const, self.pointers[:-1])

    def pointer_to(self, const: bool = False) -> "CType":
        return CType(self.base, self.const, self.pointers + (const,))

    def without_top_const(self) -> "CType":
        if self.pointers:
            return CType(self.base, self.const, self.pointers[:-1] + (False,))
        return CType(self.base, False, ())

    @property
    def cdef_text(self) -> str:
        """How cffi should see the type. cffi reads the canonical text as is (top-level const
        included, which is ABI-neutral), so this is the canonical text."""
        return str(self)

    def __str__(self) -> str:
        text = f"const {self.base}" if self.const else self.base
        for const in self.pointers:
            text += "* const" if const else "*"
        return text

    # -- parsing -------------------------------------------------------------------------------
    @classmethod
    def parse(cls, text: str) -> "CType":
        return parse_ctype(text)

    @classmethod
    def parse_canonical(cls, text: str, loc: tuple = ()) -> "CType":
        try:
            result = parse_ctype(text)
        except PrototypeError as exc:
            raise exc.with_loc(loc) from None
        if str(result) != text:
            raise PrototypeError(loc, f"type {text!r} is not in canonical form; write it as {str(result)!r}")
        return result


@dataclass(frozen=True)
class CParam:
    type: CType
    name: str

    def __post_init__(self) -> None:
        if not isinstance(self.type, CType):
            raise PrototypeError((), f"parameter type must be a CType, got {self.type!r}")
        _check_name(self.name, "parameter")

    def __str__(self) -> str:
        return f"{self.type} {self.name}"


@dataclass(frozen=True)
class CFunction:
    returns: CType
    name: str
    params: tuple[CParam, ...] = field(default=())

    def __post_init__(self) -> None:
        if not isinstance(self.params, tuple):
            object.__setattr__(self, "params", tuple(self.params))
        if not isinstance(self.returns, CType):
            raise PrototypeError((), f"return type must be a CType, got {self.returns!r}")
        _check_name(self.name, "function name")
        seen: set[str] = set()
        for index, param in enumerate(self.params, 1):
            if not isinstance(param, CParam):
                raise PrototypeError((), f"parameter {index} must be a CParam, got {param!r}")
            if param.type.is_void:
                raise PrototypeError((), f"parameter {index} {param.name!r} has type void; only pointers to void")
            if param.name in seen:
                raise PrototypeError((), f"parameter {index}: duplicate name {param.name!r}")
            seen.add(param.name)

    @property
    def param_names(self) -> tuple[str, ...]:
        return tuple(p.name for p in self.params)

    def param(self, name: str) -> CParam:
        for p in self.params:
            if p.name == name:
                return p
        raise KeyError(f"{self.name} has no parameter {name!r}")

    @property
    def params_text(self) -> str:
        return ", ".join(map(str, self.params)) if self.params else "void"

    def __str__(self) -> str:
        return f"{self.returns} {self.name}({self.params_text})"

    @property
    def cdef_text(self) -> str:
        """A declaration for a C or cffi cdef: the canonical text and a `;`."""
        return f"{self};"

    @classmethod
    def parse(cls, text: str) -> "CFunction":
        return parse_prototype(text)

    @classmethod
    def parse_canonical(cls, text: str, loc: tuple = ()) -> "CFunction":
        """Parse `text` and require that it is already canonical (round trip).

        Raises `PrototypeError` (a `FieldProblem`) with `loc` on any problem; when the text
        parses but is spelt differently the message shows the canonical text to write.
        """
        if not isinstance(text, str):
            raise PrototypeError(loc, f"expected a prototype string, got {type(text).__name__}")
        try:
            result = parse_prototype(text)
        except PrototypeError as exc:
            raise exc.with_loc(loc) from None
        canonical = str(result)
        if canonical != text:
            raise PrototypeError(
                loc,
                f"prototype is not in canonical form (single spaces, star on the type, "
                f"(void) for no parameters, no ';'); expected: {canonical}",
            )
        return result


# ---------------------------------------------------------------------------------------------
# Tokenising and parsing


@dataclass(frozen=True)
class _Tok:
    kind: str  # "word", "punct", "ellipsis", "other"
    text: str
    col: int  # 1-based


_TOKEN_RE = re.compile(
    r"(?P<ws>\s+)|(?P<ellipsis>\.\.\.)|(?P<word>\w+)|(?P<punct>[*(),;\[\]=])|(?P<other>.)",
    re.S,
)


def _tokenize(text: str) -> list[_Tok]:
    tokens: list[_Tok] = []
    for match in _TOKEN_RE.finditer(text):
        kind = match.lastgroup
        if kind == "ws":
            continue
        tokens.append(_Tok(kind, match.group(), match.start() + 1))
    return tokens


def _join(tokens: Iterable[_Tok]) -> str:
    return " ".join(t.text for t in tokens).replace(" *", "*")


def _parse_type(tokens: list[_Tok], what: str, *, allow_void: bool) -> CType:
    """Parse the tokens of a type (no name)."""
    if not tokens:
        raise PrototypeError((), f"{what}: missing type")
    specifiers: list[_Tok] = []
    index = 0
    while index < len(tokens) and tokens[index].text != "*":
        specifiers.append(tokens[index])
        index += 1
    const = False
    words: list[str] = []
    for tok in specifiers:
        if tok.kind != "word":
            raise PrototypeError((), f"{what}: unexpected {tok.text!r} in the type")
        if tok.text == "const":
            if const:
                raise PrototypeError((), f"{what}: duplicate 'const'")
            const = True
        elif tok.text in _UNSUPPORTED_WORDS:
            raise PrototypeError((), f"{what}: {_UNSUPPORTED_WORDS[tok.text]}")
        else:
            words.append(tok.text)
    if not words:
        raise PrototypeError((), f"{what}: missing type before {_join(tokens)!r}")
    if len(words) > 1:
        joined = " ".join(words)
        if joined in ALLOWED_MULTIWORD_TYPES:
            base = joined
        elif all(w in _TYPE_WORDS for w in words):
            raise PrototypeError(
                (),
                f"{what}: multi-word type {joined!r} is not allowed; use a fixed-width type "
                f"such as int64_t or uint64_t (allowed multi-word types: "
                f"{', '.join(ALLOWED_MULTIWORD_TYPES)})",
            )
        else:
            raise PrototypeError((), f"{what}: expected one type name, found {joined!r} (unknown words in the type)")
    else:
        base = words[0]
        if base in ("unsigned", "signed"):
            raise PrototypeError((), f"{what}: write {base + ' int'!r} instead of a bare {base!r}")
        if base not in BUILTIN_TYPES:
            if not _IDENT_RE.match(base):
                raise PrototypeError((), f"{what}: type name {base!r} is not a C identifier")
            if base in C_KEYWORDS:
                raise PrototypeError((), f"{what}: {base!r} is a C keyword, not a type name")
    pointers: list[bool] = []
    while index < len(tokens):
        tok = tokens[index]
        if tok.text != "*":
            raise PrototypeError((), f"{what}: unexpected {tok.text!r} in type {_join(tokens)!r}")
        index += 1
        level_const = False
        while index < len(tokens) and tokens[index].text != "*":
            qual = tokens[index]
            if qual.text == "const":
                if level_const:
                    raise PrototypeError((), f"{what}: duplicate 'const'")
                level_const = True
            elif qual.text in _UNSUPPORTED_WORDS:
                raise PrototypeError((), f"{what}: {_UNSUPPORTED_WORDS[qual.text]}")
            else:
                raise PrototypeError((), f"{what}: unexpected {qual.text!r} after '*' in type {_join(tokens)!r}")
            index += 1
        pointers.append(level_const)
    result = CType(base, const, tuple(pointers))
    if result.is_void and not allow_void:
        raise PrototypeError((), f"{what}: type void is only allowed as a pointer or return type")
    return result


def _parse_declaration(tokens: list[_Tok], what: str, *, allow_void: bool) -> tuple[CType, str]:
    """Parse `type name`."""
    if not tokens:
        raise PrototypeError((), f"{what}: missing type and name")
    last = tokens[-1]
    if last.kind != "word":
        raise PrototypeError(
            (),
            f"{what}: missing name after type {_join(tokens)!r}"
            if last.text == "*"
            else f"{what}: unexpected {last.text!r}",
        )
    rest = tokens[:-1]
    has_base = any(t.kind == "word" and t.text != "const" for t in rest if t.text != "*")
    if not has_base:
        if last.text in _TYPE_WORDS or not rest:
            raise PrototypeError((), f"{what}: expected a type and a name, found only {_join(tokens)!r}")
        raise PrototypeError((), f"{what}: missing type before name {last.text!r}")
    name = last.text
    if name in C_KEYWORDS:
        if name in _TYPE_WORDS or name == "const":
            raise PrototypeError((), f"{what}: missing name after type {_join(tokens)!r}")
        raise PrototypeError((), f"{what}: {name!r} is a C keyword and cannot be used as a name")
    if not _IDENT_RE.match(name):
        raise PrototypeError((), f"{what}: name {name!r} is not a C identifier")
    return _parse_type(rest, what, allow_void=allow_void), name


def _check_tokens(tokens: list[_Tok]) -> None:
    for tok in tokens:
        if tok.kind == "other":
            raise PrototypeError((), f"unknown token {tok.text!r} at column {tok.col}")
        if tok.kind == "ellipsis":
            raise PrototypeError((), "varargs ('...') are not supported")
        if tok.text == "=":
            raise PrototypeError((), "default values ('= ...') are not C and not supported")
        if tok.text in ("[", "]"):
            raise PrototypeError((), "arrays ('[...]') are not supported; declare a pointer")
        if tok.text == ";":
            raise PrototypeError((), f"unexpected ';' at column {tok.col}; only one trailing ';' is allowed")


def parse_ctype(text: str) -> CType:
    """Parse a type alone, e.g. `const aclTensor *const *` or `void*`."""
    if not isinstance(text, str):
        raise PrototypeError((), f"expected a type string, got {type(text).__name__}")
    tokens = _tokenize(text)
    _check_tokens(tokens)
    for tok in tokens:
        if tok.text in ("(", ")", ","):
            raise PrototypeError((), f"unexpected {tok.text!r} in type {text!r}")
    return _parse_type(tokens, "type", allow_void=True)


def parse_prototype(text: str) -> CFunction:
    """Parse a C prototype written with any whitespace and star placement, `;` optional."""
    if not isinstance(text, str):
        raise PrototypeError((), f"expected a prototype string, got {type(text).__name__}")
    tokens = _tokenize(text)
    if tokens and tokens[-1].text == ";":
        tokens.pop()
    if not tokens:
        raise PrototypeError((), "empty prototype")
    _check_tokens(tokens)
    try:
        open_at = next(i for i, t in enumerate(tokens) if t.text == "(")
    except StopIteration:
        raise PrototypeError((), "expected '(' after the function name") from None
    if any(t.text in (")", ",") for t in tokens[:open_at]):
        bad = next(t for t in tokens[:open_at] if t.text in (")", ","))
        raise PrototypeError((), f"unexpected {bad.text!r} at column {bad.col} before '('")
    head = tokens[:open_at]
    after = tokens[open_at + 1 :]
    if after and after[0].text == "*":
        raise PrototypeError((), "function pointers are not supported")
    if not after or after[-1].text != ")":
        closes = [i for i, t in enumerate(after) if t.text == ")"]
        if not closes:
            raise PrototypeError((), "missing ')' at the end of the parameter list")
        extra = after[closes[-1] + 1 :]
        if any(t.text == "(" for t in after):
            raise PrototypeError((), "function pointers are not supported")
        raise PrototypeError((), f"unexpected {_join(extra)!r} after the parameter list")
    body = after[:-1]
    if any(t.text in ("(", ")") for t in body):
        raise PrototypeError((), "function pointers are not supported (parentheses inside the parameter list)")
    returns, name = _parse_declaration(head, "function", allow_void=True)
    params: list[CParam] = []
    if body and not (len(body) == 1 and body[0].text == "void"):
        chunks: list[list[_Tok]] = [[]]
        for tok in body:
            if tok.text == ",":
                chunks.append([])
            else:
                chunks[-1].append(tok)
        for index, chunk in enumerate(chunks, 1):
            what = f"parameter {index}"
            if not chunk:
                raise PrototypeError((), f"{what} is empty (stray ',')")
            if len(chunk) == 1 and chunk[0].text == "void":
                raise PrototypeError((), f"{what}: 'void' must be the only parameter")
            ctype, pname = _parse_declaration(chunk, what, allow_void=False)
            params.append(CParam(ctype, pname))
    return CFunction(returns, name, tuple(params))


def normalize_prototype(text: str) -> str:
    """The canonical text of any acceptable spelling of a prototype."""
    return str(parse_prototype(text))


# ---------------------------------------------------------------------------------------------
# Comparing two spellings of one function


def _const_difference(header: CType, page: CType) -> str | None:
    """Describe a difference in const qualifiers only, or None if the types differ otherwise."""
    if header.base != page.base or header.pointer_depth != page.pointer_depth:
        return None
    parts: list[str] = []
    # Levels from the base outwards: level 0 is the base, level k the k-th pointer.
    header_levels = (header.const,) + header.pointers
    page_levels = (page.const,) + page.pointers
    top = len(header_levels) - 1
    for level, (h, p) in enumerate(zip(header_levels, page_levels)):
        if h == p:
            continue
        where = (
            "top-level const"
            if level == top
            else ("const on the pointee" if level == 0 else f"const on pointer level {level}")
        )
        verb = "drops" if h else "adds"
        note = " (ABI-neutral)" if level == top else ""
        parts.append(f"page {verb} {where}{note}")
    return "; ".join(parts) if parts else None


def diff_prototypes(header: CFunction, page: CFunction) -> list[str]:
    """Human-readable differences between the header's prototype and a doc page's.

    An empty list means the two are the same function spelt the same way (after normalising).
    """
    out: list[str] = []
    if header.name != page.name:
        out.append(f"function name differs: header {header.name!r}, page {page.name!r}")
    if header.returns != page.returns:
        const_note = _const_difference(header.returns, page.returns)
        detail = f"; {const_note}" if const_note else ""
        out.append(f"return type differs: header '{header.returns}', page '{page.returns}'{detail}")
    if len(header.params) != len(page.params):
        out.append(f"parameter count differs: header has {len(header.params)}, page has {len(page.params)}")
    for index, (h, p) in enumerate(zip(header.params, page.params), 1):
        if h.name != p.name:
            out.append(f"parameter {index} renamed: header {h.name!r}, page {p.name!r}")
        if h.type != p.type:
            const_note = _const_difference(h.type, p.type)
            if const_note:
                out.append(f"parameter {index} {h.name!r}: {const_note}: header '{h.type}', page '{p.type}'")
            else:
                out.append(f"parameter {index} {h.name!r}: type differs: header '{h.type}', page '{p.type}'")
    for index, h in enumerate(header.params[len(page.params) :], len(page.params) + 1):
        out.append(f"parameter {index} '{h}' is missing on the page")
    for index, p in enumerate(page.params[len(header.params) :], len(header.params) + 1):
        out.append(f"parameter {index} '{p}' is only on the page")
    return out
