"""The shared ABI table (specs/abi.yaml): models, loader and lookups.

`load_abi(path)` reads the file strictly (duplicate keys are YAML errors), validates it with frozen
pydantic models that forbid unknown keys, parses every prototype and typedef in canonical form
(see `cdecl`), and checks cross references: unique names and enum values, libraries that exist,
prototype types that are declared. Every problem is reported as `path:line: message`.
"""

from __future__ import annotations

import functools
import types
import typing
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal, Union

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    StrictBool,
    StrictInt,
    StrictStr,
    StringConstraints,
    ValidationError,
    model_validator,
)

from .cdecl import ALLOWED_MULTIWORD_TYPES, BUILTIN_TYPES, CFunction, CType, PrototypeError
from .errors import FieldProblem, Problem, SpecError
from .tables import table_path
from .yamlio import LineMap, read_yaml

__all__ = [
    "Abi",
    "AbiProblems",
    "DType",
    "DTypeInfo",
    "Enum",
    "Function",
    "Library",
    "StatusCode",
    "StatusInfo",
    "Typedef",
    "DEFAULT_ABI_PATH",
    "STDINT_TYPES",
    "abi_from_data",
    "default_abi",
    "load_abi",
]

DEFAULT_ABI_PATH = table_path(None, "abi.yaml")

# Fixed-width and size types a prototype may use without declaring them (from <stdint.h>,
# <stddef.h>, <stdbool.h>).
STDINT_TYPES: frozenset[str] = frozenset(
    "int8_t int16_t int32_t int64_t uint8_t uint16_t uint32_t uint64_t size_t intptr_t uintptr_t".split()
)

_INT32_MIN, _INT32_MAX = -(2**31), 2**31 - 1

CIdent = Annotated[StrictStr, StringConstraints(pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")]
HeaderPath = Annotated[StrictStr, StringConstraints(pattern=r"^[A-Za-z0-9_]+(/[A-Za-z0-9_.]+)*\.h$")]
LibFile = Annotated[StrictStr, StringConstraints(pattern=r"^lib[A-Za-z0-9_.*-]*\.so$")]
OneLine = Annotated[StrictStr, StringConstraints(pattern=r"^[^\n]+$")]


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Typedef(_Model):
    """`typedef <type> <name>;` or, with `opaque: true`, `typedef struct <name> <name>;`."""

    type: StrictStr | None = None
    opaque: StrictBool = False
    header: HeaderPath

    _ctype: CType | None = PrivateAttr(default=None)

    @property
    def ctype(self) -> CType | None:
        """The aliased type, or None for an opaque struct."""
        if self.type is None:
            return None
        if self._ctype is None:
            self._ctype = CType.parse_canonical(self.type)
        return self._ctype

    def c_decl(self, name: str) -> str:
        if self.opaque:
            return f"typedef struct {name} {name};"
        return f"typedef {self.ctype} {name};"


class Enum(_Model):
    header: HeaderPath
    members: dict[CIdent, StrictInt] = Field(min_length=1)

    def name_of(self, value: int) -> str:
        for name, member_value in self.members.items():
            if member_value == value:
                return name
        raise KeyError(f"no member with value {value}")

    def c_decl(self, name: str) -> str:
        body = ", ".join(f"{member} = {value}" for member, value in self.members.items())
        return f"typedef enum {{ {body} }} {name};"


class StatusCode(_Model):
    code: StrictInt
    meaning: OneLine
    aliases: tuple[CIdent, ...] = ()


class Library(_Model):
    purpose: Literal["runtime", "tensors", "ops"]
    search: tuple[LibFile, ...] = Field(min_length=1)
    note: StrictStr = ""


class Function(_Model):
    library: CIdent
    header: HeaderPath
    prototype: StrictStr
    optional: StrictBool = False

    _decl: CFunction | None = PrivateAttr(default=None)

    @property
    def decl(self) -> CFunction:
        """The parsed prototype."""
        if self._decl is None:
            self._decl = CFunction.parse_canonical(self.prototype)
        return self._decl

    @property
    def name(self) -> str:
        return self.decl.name

    @property
    def cdef_text(self) -> str:
        return self.decl.cdef_text


class DType(_Model):
    numpy: CIdent
    itemsize: StrictInt = Field(gt=0)
    module: Literal["numpy", "ml_dtypes", "bits"] = "numpy"


@dataclass(frozen=True)
class DTypeInfo:
    """One row of the dtype table joined with its aclDataType value."""

    acl_name: str
    acl_value: int
    numpy: str
    itemsize: int
    module: str

    def numpy_dtype(self) -> Any:
        """The `numpy.dtype` (imports ml_dtypes for the types only it provides)."""
        import numpy

        if self.module == "ml_dtypes":
            import ml_dtypes

            return numpy.dtype(getattr(ml_dtypes, self.numpy))
        if self.module == "bits":  # a record of raw bytes named after the dtype (runtime.shapes.storage_dtype)
            return numpy.dtype([(self.numpy, f"u{self.itemsize}")])
        return numpy.dtype(self.numpy)


@dataclass(frozen=True)
class StatusInfo:
    name: str
    code: int
    kind: str  # the typedef that carries it: aclError or aclnnStatus
    meaning: str
    aliases: tuple[str, ...]


class AbiProblems(FieldProblem):
    """Several semantic problems at once; `problems` holds one FieldProblem each."""

    def __init__(self, problems: list[FieldProblem]):
        self.problems = list(problems)
        first = self.problems[0]
        super().__init__(first.loc, "; ".join(p.message for p in self.problems))


class _Found(list):
    """The problems one check of the ABI tables found, in the order it found them."""

    def add(self, loc: tuple, message: str) -> None:
        self.append(FieldProblem(loc, message))


class Abi(_Model):
    typedefs: dict[CIdent, Typedef] = Field(min_length=1)
    enums: dict[CIdent, Enum] = Field(min_length=1)
    status_codes: dict[CIdent, dict[CIdent, StatusCode]] = Field(min_length=1)
    libraries: dict[CIdent, Library] = Field(min_length=1)
    functions: dict[CIdent, Function] = Field(min_length=1)
    dtypes: dict[CIdent, DType] = Field(min_length=1)

    _enum_of_member: dict[str, str] = PrivateAttr(default_factory=dict)
    _status_by_name: dict[str, StatusInfo] = PrivateAttr(default_factory=dict)
    _status_by_code: dict[tuple[str, int], StatusInfo] = PrivateAttr(default_factory=dict)
    _dtype_by_numpy: dict[str, DTypeInfo] = PrivateAttr(default_factory=dict)
    _dtype_by_acl: dict[str, DTypeInfo] = PrivateAttr(default_factory=dict)

    @model_validator(mode="after")
    def _check(self) -> "Abi":
        problems = _Found()
        type_names = self._check_typedefs(problems)
        enum_of_member = self._check_enums(problems)
        status_by_name, status_by_code = self._check_status_codes(problems, enum_of_member)
        self._check_libraries(problems)
        self._check_functions(problems, type_names)
        dtype_by_numpy, dtype_by_acl = self._check_dtypes(problems)
        if problems:
            raise problems[0] if len(problems) == 1 else AbiProblems(problems)
        self._enum_of_member = enum_of_member
        self._status_by_name = status_by_name
        self._status_by_code = status_by_code
        self._dtype_by_numpy = dtype_by_numpy
        self._dtype_by_acl = dtype_by_acl
        return self

    def _check_typedefs(self, problems: _Found) -> set[str]:
        """Typedefs: opaque or an alias of a canonical C type; no name declared twice or taken
        from standard C. Returns the names of the declared types (typedefs and enums)."""
        for name, typedef in self.typedefs.items():
            loc = ("typedefs", name)
            if typedef.opaque and typedef.type is not None:
                problems.add(loc + ("type",), "an opaque struct has no 'type'; remove one of the two")
            elif not typedef.opaque and typedef.type is None:
                problems.add(loc, "give either 'type' (the aliased C type) or 'opaque: true'")
            elif typedef.type is not None:
                try:
                    typedef._ctype = CType.parse_canonical(typedef.type, loc + ("type",))
                except PrototypeError as exc:
                    problems.append(exc)
        type_names = set(self.typedefs)
        for name in self.enums:
            if name in type_names:
                problems.add(("enums", name), f"{name!r} is also declared under typedefs")
        type_names |= set(self.enums)
        for name in sorted(type_names & (BUILTIN_TYPES | STDINT_TYPES)):
            problems.add(
                ("typedefs", name) if name in self.typedefs else ("enums", name),
                f"{name!r} is a standard C type and cannot be redeclared",
            )
        return type_names

    def _check_enums(self, problems: _Found) -> dict[str, str]:
        """Enums: values fit a C int, unique per enum; member names unique across enums.
        Returns member -> its enum."""
        enum_of_member: dict[str, str] = {}
        for enum_name, enum in self.enums.items():
            seen_values: dict[int, str] = {}
            for member, value in enum.members.items():
                loc = ("enums", enum_name, "members", member)
                if not _INT32_MIN <= value <= _INT32_MAX:
                    problems.add(loc, f"value {value} does not fit a C int")
                if value in seen_values:
                    problems.add(loc, f"value {value} is already used by {seen_values[value]}")
                else:
                    seen_values[value] = member
                if member in enum_of_member:
                    problems.add(loc, f"{member} is already a member of {enum_of_member[member]}")
                else:
                    enum_of_member[member] = enum_name
        return enum_of_member

    def _check_status_codes(
        self, problems: _Found, enum_of_member: dict[str, str]
    ) -> tuple[dict[str, StatusInfo], dict[tuple[str, int], StatusInfo]]:
        """Status codes: carried by an integer typedef; codes unique per kind; names (and aliases)
        unique, also against enum members. Returns them by name and by (kind, code)."""
        status_by_name: dict[str, StatusInfo] = {}
        status_by_code: dict[tuple[str, int], StatusInfo] = {}
        for kind, codes in self.status_codes.items():
            typedef = self.typedefs.get(kind)
            if typedef is None or typedef.opaque or (typedef.ctype is not None and typedef.ctype.is_pointer):
                problems.add(("status_codes", kind), f"{kind!r} must be an integer typedef declared under typedefs")
            for name, status in codes.items():
                loc = ("status_codes", kind, name)
                if not _INT32_MIN <= status.code <= _INT32_MAX:
                    problems.add(loc + ("code",), f"code {status.code} does not fit a 32-bit int")
                info = StatusInfo(name, status.code, kind, status.meaning, status.aliases)
                if (kind, status.code) in status_by_code:
                    other = status_by_code[(kind, status.code)].name
                    problems.add(
                        loc + ("code",),
                        f"code {status.code} is already {other}; list {name} under its 'aliases' instead",
                    )
                else:
                    status_by_code[(kind, status.code)] = info
                for index, alias in enumerate((name,) + status.aliases):
                    where = loc if index == 0 else loc + ("aliases", index - 1)
                    if alias in status_by_name or alias in enum_of_member:
                        problems.add(where, f"status name {alias} is declared twice")
                    else:
                        status_by_name[alias] = info
        return status_by_name, status_by_code

    def _check_libraries(self, problems: _Found) -> None:
        """Libraries: one per purpose; no file listed twice in one search list."""
        purposes: dict[str, str] = {}
        for lib_name, library in self.libraries.items():
            if library.purpose in purposes:
                problems.add(
                    ("libraries", lib_name, "purpose"),
                    f"purpose {library.purpose!r} is already served by {purposes[library.purpose]}",
                )
            else:
                purposes[library.purpose] = lib_name
            seen_files: set[str] = set()
            for index, file in enumerate(library.search):
                if file in seen_files:
                    problems.add(("libraries", lib_name, "search", index), f"{file} is listed twice")
                seen_files.add(file)

    def _check_functions(self, problems: _Found, type_names: set[str]) -> None:
        """Functions: canonical prototypes, key == name, known library and types."""
        known_types = type_names | BUILTIN_TYPES | set(ALLOWED_MULTIWORD_TYPES) | STDINT_TYPES
        for key, function in self.functions.items():
            loc = ("functions", key)
            if function.library not in self.libraries:
                problems.add(
                    loc + ("library",),
                    f"unknown library {function.library!r}; expected one of {', '.join(self.libraries)}",
                )
            try:
                decl = CFunction.parse_canonical(function.prototype, loc + ("prototype",))
            except PrototypeError as exc:
                problems.append(exc)
                continue
            function._decl = decl
            if decl.name != key:
                problems.add(loc + ("prototype",), f"the prototype declares {decl.name!r} but the key is {key!r}")
            for ctype in [decl.returns] + [p.type for p in decl.params]:
                if ctype.base not in known_types:
                    problems.add(loc + ("prototype",), f"type {ctype.base!r} is not declared under typedefs or enums")

    def _check_dtypes(self, problems: _Found) -> tuple[dict[str, DTypeInfo], dict[str, DTypeInfo]]:
        """Dtypes: members of the aclDataType enum, each NumPy dtype mapped from one of them.
        Returns them by NumPy name and by aclDataType member."""
        data_types = self.enums.get("aclDataType")
        dtype_by_numpy: dict[str, DTypeInfo] = {}
        dtype_by_acl: dict[str, DTypeInfo] = {}
        if data_types is None:
            problems.add(("enums",), "the dtype table needs an 'aclDataType' enum")
            return dtype_by_numpy, dtype_by_acl
        for acl_name, dtype in self.dtypes.items():
            loc = ("dtypes", acl_name)
            if acl_name not in data_types.members:
                problems.add(loc, f"{acl_name} is not a member of aclDataType")
                continue
            info = DTypeInfo(acl_name, data_types.members[acl_name], dtype.numpy, dtype.itemsize, dtype.module)
            if dtype.numpy in dtype_by_numpy:
                problems.add(
                    loc + ("numpy",),
                    f"numpy dtype {dtype.numpy} is already mapped from {dtype_by_numpy[dtype.numpy].acl_name}",
                )
            else:
                dtype_by_numpy[dtype.numpy] = info
            dtype_by_acl[acl_name] = info
        return dtype_by_numpy, dtype_by_acl

    # -- enums ---------------------------------------------------------------------------------
    def enum(self, name: str) -> Enum:
        return self.enums[name]

    def enum_value(self, member: str) -> int:
        """The value of an enum member, looked up across all enums (C enums share names)."""
        return self.enums[self._enum_of_member[member]].members[member]

    def enum_of(self, member: str) -> str:
        """The name of the enum that declares `member`."""
        return self._enum_of_member[member]

    def enum_member(self, enum: str, value: int) -> str:
        return self.enums[enum].name_of(value)

    # -- status codes --------------------------------------------------------------------------
    def status(self, name: str) -> StatusInfo:
        """A status by its name or one of its aliases."""
        return self._status_by_name[name]

    def status_code(self, name: str) -> int:
        return self._status_by_name[name].code

    def status_name(self, code: int, kind: str = "aclnnStatus") -> str | None:
        """The (main) name of `code` among the codes of `kind` (aclnnStatus or aclError)."""
        if kind not in self.status_codes:
            raise KeyError(f"no status kind {kind!r}; expected one of {', '.join(self.status_codes)}")
        info = self._status_by_code.get((kind, code))
        return info.name if info else None

    # -- functions and libraries ---------------------------------------------------------------
    def function(self, name: str) -> Function:
        return self.functions[name]

    def functions_by_library(self, library: str) -> tuple[Function, ...]:
        if library not in self.libraries:
            raise KeyError(f"no library {library!r}; expected one of {', '.join(self.libraries)}")
        return tuple(f for f in self.functions.values() if f.library == library)

    def library(self, name: str) -> Library:
        return self.libraries[name]

    def library_for(self, purpose: str) -> str:
        """The key of the library that serves `purpose` (runtime, tensors or ops)."""
        for name, library in self.libraries.items():
            if library.purpose == purpose:
                return name
        raise KeyError(f"no library serves {purpose!r}")

    # -- dtypes --------------------------------------------------------------------------------
    def dtype_for_numpy(self, name: Any) -> DTypeInfo:
        """The aclDataType for a NumPy dtype, given by name ('float32') or as a dtype / type."""
        if not isinstance(name, str):
            import numpy

            dt = numpy.dtype(name)
            name = dt.names[0] if dt.names else dt.name  # a `bits` dtype is a record named after it
        try:
            return self._dtype_by_numpy[name]
        except KeyError:
            raise KeyError(
                f"no aclDataType for numpy dtype {name!r}; known: {', '.join(self._dtype_by_numpy)}"
            ) from None

    def dtype_for_acl(self, name_or_value: str | int) -> DTypeInfo:
        """The NumPy side of an aclDataType member, given by name or value."""
        if isinstance(name_or_value, int):
            name_or_value = self.enum_member("aclDataType", name_or_value)
        try:
            return self._dtype_by_acl[name_or_value]
        except KeyError:
            raise KeyError(f"NumPy cannot hold {name_or_value}") from None

    # -- C text --------------------------------------------------------------------------------
    def typedef_decl(self, name: str) -> str:
        return self.typedefs[name].c_decl(name)

    def enum_decl(self, name: str) -> str:
        return self.enums[name].c_decl(name)


# ---------------------------------------------------------------------------------------------
# Loading


def _unwrap(annotation: Any) -> Any:
    while typing.get_origin(annotation) is Annotated:
        annotation = typing.get_args(annotation)[0]
    origin = typing.get_origin(annotation)
    if origin in (Union, types.UnionType):
        for arg in typing.get_args(annotation):
            if arg is not type(None):
                return _unwrap(arg)
    return annotation


def _model_at(loc: tuple) -> type[BaseModel] | None:
    """The model class that validates the node at `loc` (None if not a model)."""
    current: Any = Abi
    for part in loc:
        current = _unwrap(current)
        if isinstance(current, type) and issubclass(current, BaseModel):
            field = current.model_fields.get(part) if isinstance(part, str) else None
            if field is None:
                return None
            current = field.annotation
        elif typing.get_origin(current) is dict:
            current = typing.get_args(current)[1]
        elif typing.get_origin(current) in (tuple, list):
            current = typing.get_args(current)[0]
        else:
            return None
    current = _unwrap(current)
    return current if isinstance(current, type) and issubclass(current, BaseModel) else None


def _dotted(loc: tuple) -> str:
    return ".".join(str(part) for part in loc) or "(top level)"


def _message(error: dict) -> str:
    loc = tuple(error["loc"])
    kind = error["type"]
    if kind == "extra_forbidden":
        model = _model_at(loc[:-1])
        allowed = f" (allowed: {', '.join(model.model_fields)})" if model else ""
        return f"{_dotted(loc[:-1])}: unknown key {loc[-1]!r}{allowed}"
    if kind == "missing":
        return f"{_dotted(loc[:-1])}: missing required key {loc[-1]!r}"
    if loc and loc[-1] == "[key]":
        return f"{_dotted(loc[:-2])}: key {loc[-2]!r} is not valid: {error['msg']}"
    return f"{_dotted(loc)}: {error['msg']} (got {error.get('input')!r})"


def load_abi(path: str | Path = DEFAULT_ABI_PATH) -> Abi:
    """Load and check the ABI table; raise SpecError naming `path:line` for every problem."""
    path = Path(path)
    data, lines = read_yaml(path)
    return abi_from_data(data, lines, path)


def abi_from_data(data: Any, lines: LineMap, path: str | Path) -> Abi:
    if not isinstance(data, dict):
        raise SpecError.at(path, 1, f"expected a mapping at the top level, got {type(data).__name__}")
    try:
        return Abi.model_validate(data)
    except ValidationError as exc:
        problems = [Problem(str(path), lines.line_of(tuple(error["loc"])), _message(error)) for error in exc.errors()]
        raise SpecError(problems) from None
    except FieldProblem as exc:
        found = exc.problems if isinstance(exc, AbiProblems) else [exc]
        raise SpecError(
            [Problem(str(path), lines.line_of(p.loc), f"{_dotted(p.loc)}: {p.message}") for p in found]
        ) from None


@functools.lru_cache(maxsize=None)
def _default_abi(path: str) -> Abi:
    return load_abi(path)


def default_abi() -> Abi:
    """specs/abi.yaml of this repository, loaded once."""
    return _default_abi(str(DEFAULT_ABI_PATH))
