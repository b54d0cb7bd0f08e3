"""The one table of reserved names: what a spec's names may not be, because generated code uses them.

A spec's names become identifiers in generated code: an op's name becomes module names and the C
entry points `aclnn<Name>` and `aclnn<Name>GetWorkspaceSize`; a parameter's `name` becomes a C
parameter of those entry points; a `py_name` (and a formula's let and output names) becomes a Python
parameter or local of the generated binding and reference. Each kind is checked against the tables
that can clash with it (`clash`), and the spec model rejects a clash with the table's name.

The C tables are derived, not copied: every file-scope identifier of the simulator's sources
(runtime/sim/*.[ch]), every identifier of the C templates, and every name the ABI (specs/abi.yaml)
declares. docs/security.md states the rule.
"""

from __future__ import annotations

import functools
import keyword
import re
from pathlib import Path

import yaml

_CODEGEN = Path(__file__).resolve().parent
_RUNTIME_SIM = _CODEGEN.parent / "runtime" / "sim"
_TEMPLATES = _CODEGEN / "templates"
_ABI = _CODEGEN.parent / "specs" / "abi.yaml"

# The binding's own keyword arguments, after the op's parameters (codegen/pysig.py and
# binding.py.j2 render these). `out` takes the outputs; an output parameter may itself be named
# `out` (it is then the same argument), nothing else may.
BINDING_KEYWORDS: tuple[tuple[str, object], ...] = (
    ("out", None),
    ("stream", None),
    ("validate", True),
    ("formats", None),
)
OUTPUT_KEYWORD = "out"
# The reference's own keyword arguments (reference.py.j2 renders these).
REFERENCE_KEYWORDS: tuple[tuple[str, object], ...] = (
    ("out_dtypes", None),
    ("mode", "opmath"),
    ("formula", "spec"),
    ("family", None),  # whose `arithmetic` rows apply
)

# Names the generated binding and reference modules (where a spec's Python names are identifiers)
# define, import or call, besides the spec's own names. tests/codegen/test_reserved_names.py checks this list
# against every generated module, so a template that starts using a new name (or a builtin) fails it.
GENERATED_PYTHON = frozenset(
    {
        "annotations",
        "math",
        "bind",
        "META",
        "_CALL",
        "Reference",
        "FORMULAS",
        "_REFERENCE",
        "boundaries",
        "reference",
        "m",
        "FORWARDS",
        "ORACLE_EXPRESSIONS",
        "oracle_argument",
        "forward",
        "x",
    }
    # the binding's type hints (runtime/hints.py and the builtins its signature names)
    | {
        "Result",
        "TensorLike",
        "HostArray",
        "DeviceArray",
        "np",
        "overload",
        "bool",
        "float",
        "int",
        "str",
        "dict",
        "object",
        "tuple",
    }
)

# Generated files named after an op that would collide with an index or package file.
MODULE_FILES = frozenset({"__init__", "index", "conftest"})

C_KEYWORDS = frozenset(
    """auto break case char const continue default do double else enum extern float for goto if inline int
    long register restrict return short signed sizeof static struct switch typedef union unsigned void volatile
    while _Alignas _Alignof _Atomic _Bool _Complex _Generic _Imaginary _Noreturn _Static_assert _Thread_local
    bool true false NULL offsetof asm typeof""".split()
)
# Names the C standard reserves, and the standard integer types and limits (<stdint.h>, <stddef.h>).
C_RESERVED_PATTERNS = (
    re.compile(r"^__|^_[A-Z]"),
    re.compile(r"^u?int(8|16|32|64|ptr|max|_least\d+|_fast\d+)_t$|^(size|ptrdiff|wchar|max_align)_t$"),
    re.compile(r"^U?INT(8|16|32|64|PTR|MAX)_(MAX|MIN|C)$|^(SIZE|PTRDIFF)_MAX$"),
)

_C_COMMENT_OR_STRING = re.compile(r"/\*.*?\*/|//[^\n]*|\"(?:\\.|[^\"\\\n])*\"|'(?:\\.|[^'\\\n])*'", re.S)
_C_TOKEN = re.compile(r"[A-Za-z_]\w*|[{}()\[\];]|#[ \t]*\w+[^\n]*")
_IDENT = re.compile(r"[A-Za-z_]\w*")


def file_scope_identifiers(c_source: str) -> set[str]:
    """Identifiers a C file declares or names at file scope: types, functions, globals, enum constants,
    macros. Names inside function bodies, struct members and prototype parameters are local and skipped."""
    text = _C_COMMENT_OR_STRING.sub(" ", c_source)
    found: set[str] = set()
    braces, parens = 0, 0
    enum_depth: list[int] = []  # brace depths of the enum bodies we are in
    pending_enum = False
    for token in _C_TOKEN.findall(text):
        if token.startswith("#"):
            directive = token[1:].split(None, 2)
            if len(directive) > 1 and directive[0] == "define":
                found.add(_IDENT.match(directive[1]).group(0))
            continue
        if token == "{":
            braces += 1
            if pending_enum:
                enum_depth.append(braces)
                pending_enum = False
        elif token == "}":
            if enum_depth and enum_depth[-1] == braces:
                enum_depth.pop()
            braces -= 1
        elif token == "(":
            parens += 1
        elif token == ")":
            parens = max(0, parens - 1)
        elif token in ("[", "]", ";"):
            pending_enum = pending_enum and token != ";"
        else:
            if token == "enum":
                pending_enum = True
            if (braces == 0 and parens == 0) or (enum_depth and braces == enum_depth[-1] and parens == 0):
                found.add(token)
    return found


# C templates that never write a spec's name as a bare identifier (codegen/formula_c.py prefixes each):
# only what they declare at file scope can clash with one
_PREFIXED_TEMPLATES = frozenset({"sim_kernels.c.j2", "sim_kernel_op.c.j2"})


def _template_text(source: str) -> str:
    """A template's literal text, without its jinja2 expressions, statements and comments."""
    return re.sub(r"\{\{.*?\}\}|\{%.*?%\}|\{#.*?#\}", " ", source, flags=re.S)


def _abi_names() -> set[str]:
    if not _ABI.is_file():
        return set()
    data = yaml.load(_ABI.read_text(encoding="utf-8"), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    names: set[str] = set(data.get("typedefs", {})) | set(data.get("functions", {}))
    for enum, body in data.get("enums", {}).items():
        names |= {enum, *body.get("members", {})}
    for kind, codes in data.get("status_codes", {}).items():
        names.add(kind)
        for name, code in codes.items():
            names |= {name, *code.get("aliases", ())}
    return names


@functools.lru_cache(maxsize=None)
def c_identifiers() -> frozenset[str]:
    """Every identifier the simulator and the generated C declare or use at file scope (derived)."""
    names: set[str] = set()
    for path in sorted(_RUNTIME_SIM.glob("*.[ch]")):
        names |= file_scope_identifiers(path.read_text(encoding="utf-8"))
    for path in sorted(_TEMPLATES.glob("*.[ch].j2")):
        text = _template_text(path.read_text(encoding="utf-8"))
        if path.name in _PREFIXED_TEMPLATES:  # spec names appear there only prefixed (t_x, in_x, sc_x)
            names |= file_scope_identifiers(text)
        else:  # spec names are bare identifiers beside the template's own, in the same functions
            names |= set(_IDENT.findall(_C_COMMENT_OR_STRING.sub(" ", text)))
    return frozenset(names | _abi_names())


@functools.lru_cache(maxsize=None)
def _python_tables() -> dict[str, frozenset[str]]:
    from . import formula

    return {
        "the formula language's functions, constants and numerics object": frozenset(
            {*formula.FUNCTIONS, *formula.CONSTANTS, formula.NUMERICS_NAME}
        ),
        "Python keywords": frozenset(keyword.kwlist),
        "the binding's keyword arguments": frozenset(name for name, _ in BINDING_KEYWORDS),
        "the reference's keyword arguments": frozenset(name for name, _ in REFERENCE_KEYWORDS),
        "names of the generated modules": GENERATED_PYTHON,
    }


def reserved_python_names() -> list[str]:
    """Every name of the Python tables, sorted (for the JSON Schema of `py_name`; `out` is left out
    because an output may take it, which a schema cannot say)."""
    return sorted(set().union(*_python_tables().values()) - {OUTPUT_KEYWORD})


def python_clash(name: str, *, output: bool = False) -> str | None:
    """Why `name` cannot be a Python name of a spec (py_name, let, formula output), or None.
    `output`: the name is an output parameter's, which may be `out`."""
    if name.startswith("_"):
        return "names starting with '_' are reserved for generated code"
    if output and name == OUTPUT_KEYWORD:
        return None
    for table, names in _python_tables().items():
        if name in names:
            return f"reserved: it clashes with {table}"
    return None


def c_clash(name: str) -> str | None:
    """Why `name` cannot be a C identifier in generated C (a parameter's C name), or None."""
    if name in C_KEYWORDS:
        return "reserved: it clashes with the C keywords"
    if any(p.search(name) for p in C_RESERVED_PATTERNS):
        return "reserved: the C standard reserves it (leading '__' or '_' and a capital, or a standard integer type)"
    if name in c_identifiers():
        return "reserved: it clashes with an identifier of the simulator's C sources or the ABI"
    return None


def op_clash(name: str, snake: str) -> str | None:
    """Why an op called `name` (module `snake`) would clash in generated Python or C, or None."""
    if snake in MODULE_FILES:
        return f"reserved: its module name {snake!r} clashes with the names of the generated modules"
    if keyword.iskeyword(snake) or not snake.isidentifier():
        return f"reserved: its module name {snake!r} is a Python keyword or not an identifier"
    for symbol in (f"aclnn{name}", f"aclnn{name}GetWorkspaceSize"):
        if symbol in c_identifiers() or symbol in C_KEYWORDS:
            return f"reserved: its C entry point {symbol} clashes with an identifier of the simulator's C sources or the ABI"
    return None


@functools.lru_cache(maxsize=None)
def imported_modules() -> frozenset[str]:
    """The top-level modules generated Python imports (scanned from the Python templates)."""
    found: set[str] = set()
    for path in sorted(_TEMPLATES.glob("*.py.j2")):
        found |= set(re.findall(r"^\s*(?:from|import)\s+([A-Za-z_]\w*)", path.read_text(encoding="utf-8"), re.M))
    return frozenset(found)


def package_clash(name: str) -> str | None:
    """Why a stand-alone package cannot be called `name` (its generated modules import it by name)."""
    if not name.isidentifier() or keyword.iskeyword(name):
        return "it must be a Python identifier and not a keyword"
    if name in imported_modules() or name in ("numpy", "ml_dtypes", "cffi"):
        return f"generated code imports a module of that name ({', '.join(sorted(imported_modules()))}, numpy, ...)"
    return None
