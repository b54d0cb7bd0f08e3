"""specs/abi.yaml agrees exactly with the ABI fact sheet, and its loader rejects bad copies.

The fact sheet (cann-abi.md in the external reference folder, see tests/external.py) is read with regexes: enum
members (1.3), ACL_* constants (1.1, 9) and ACLNN_* codes (2.4), typedefs (1.1, 2.2), and the
function prototypes of the code blocks and tables of 1.2, 2.2 and 9.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from external import external

from aclnngen.codegen.abi import Abi, DEFAULT_ABI_PATH, load_abi
from aclnngen.codegen.cdecl import normalize_prototype, parse_ctype, parse_prototype
from aclnngen.codegen.errors import SpecError
from repo_paths import REPO

ABI_YAML = REPO / "specs" / "abi.yaml"

# Prototypes the sheet prints that abi.yaml deliberately leaves out.
SKIPPED_FUNCTIONS = {"aclsysGetCANNVersion"}  # takes a struct by pointer; not needed
# Prototypes abi.yaml has beyond the sheet: the destructors of two array kinds, which the sheet
# omits and the vendor's opbase docs give (the bindings must free what aclCreateFloatArray and
# aclCreateBoolArray made).
EXTRA_FUNCTIONS = {
    "aclDestroyFloatArray": "aclnnStatus aclDestroyFloatArray(const aclFloatArray* array)",
    "aclDestroyBoolArray": "aclnnStatus aclDestroyBoolArray(const aclBoolArray* array)",
}


@pytest.fixture(scope="module")
def sheet() -> str:
    return external("reference", "cann-abi.md").read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def abi() -> Abi:
    return load_abi(ABI_YAML)


def section(sheet: str, number: str) -> str:
    """The text of `## N.` or `### N.M` up to the next heading of the same or a higher level."""
    level = "##" if "." not in number else "###"
    start = re.search(rf"^{level} {re.escape(number)}\.? ", sheet, re.M)
    assert start, f"section {number} not found in the fact sheet"
    end = re.compile(r"^##? " if level == "##" else r"^##?#? ", re.M).search(sheet, start.end())
    return sheet[start.start() : end.start() if end else len(sheet)]


def code_blocks(text: str) -> list[str]:
    return re.findall(r"^```[a-z]*\n(.*?)^```", text, re.M | re.S)


def prototypes_in(text: str) -> dict[str, str]:
    """name -> normalised prototype, from inline `...;` spans and from code blocks."""
    found: list[str] = re.findall(r"`([^`\n]*\([^`\n]*\)\s*;)`", text)
    for block in code_blocks(text):
        block = re.sub(r"//[^\n]*", "", block)
        for chunk in block.split(";"):
            chunk = chunk.strip()
            if "(" in chunk and not re.match(r"(typedef|constexpr|static)\b", chunk):
                found.append(chunk)
    result: dict[str, str] = {}
    for text_ in found:
        fn = parse_prototype(text_)
        assert fn.name not in result or result[fn.name] == str(fn), f"{fn.name} printed twice"
        result[fn.name] = str(fn)
    return result


# ---------------------------------------------------------------------------------------------
# Extraction


def sheet_enums(sheet: str) -> dict[str, tuple[str, dict[str, int]]]:
    text = section(sheet, "1.3")
    enums: dict[str, tuple[str, dict[str, int]]] = {}
    for match in re.finditer(r"^`(acl\w+)` \(\[WHL\] ([\w.]+)[^\n]*\n```\n(.*?)```", text, re.M | re.S):
        name, header, body = match.groups()
        members: dict[str, int] = {}
        for member, value in re.findall(r"(ACL_\w+)\s*=\s*(-?(?:0x[0-9A-Fa-f]+|\d+))", body):
            assert member not in members
            members[member] = int(value, 0)
        enums[name] = (f"acl/{header}", members)
    return enums


def sheet_status_codes(sheet: str) -> dict[str, int]:
    codes: dict[str, int] = {}

    def add(name: str, code: str) -> None:
        assert codes.get(name, int(code)) == int(code), f"{name} has two values in the sheet"
        codes[name] = int(code)

    s11 = section(sheet, "1.1")
    for name, code in re.findall(r"static const int (ACL_\w+) = (\d+);", s11):
        add(name, code)
    for name, code in re.findall(r"`(ACL_ERROR_RT_\w+) (\d+)`", s11):
        add(name, code)
    for name, code in re.findall(r"`(ACL_ERROR_\w+) = (\d+)`", section(sheet, "9")):
        add(name, code)
    (block,) = code_blocks(section(sheet, "2.4"))
    for line in block.splitlines():
        for name, code in re.findall(r"(ACLNN_\w+) (\d+)", line):
            add(name, code)
    return codes


def sheet_typedefs(sheet: str) -> dict[str, str | None]:
    """typedef name -> aliased type in canonical form, or None for an opaque struct."""
    typedefs: dict[str, str | None] = {}
    for number in ("1.1", "2.2"):
        for block in code_blocks(section(sheet, number)):
            for name in re.findall(r"typedef struct (\w+) \1;", block):
                typedefs[name] = None
            for target, name in re.findall(r"typedef (?!struct)([\w ]+?\s*\**)\s*(\w+);", block):
                typedefs[name] = str(parse_ctype(target))
    return typedefs


def sheet_functions(sheet: str) -> dict[str, tuple[str, str]]:
    """name -> (normalised prototype, section it comes from)."""
    functions: dict[str, tuple[str, str]] = {}
    for number in ("1.2", "2.2", "9"):
        for name, proto in prototypes_in(section(sheet, number)).items():
            assert name not in functions, f"{name} appears in two sections"
            functions[name] = (proto, number)
    return functions


# ---------------------------------------------------------------------------------------------
# Agreement


def test_the_sheet_is_where_the_test_expects_it() -> None:
    assert external("reference", "cann-abi.md").is_file()


def test_extraction_finds_what_the_sheet_lists(sheet: str) -> None:
    functions = sheet_functions(sheet)
    by_section: dict[str, int] = {}
    for _, number in functions.values():
        by_section[number] = by_section.get(number, 0) + 1
    assert by_section == {"1.2": 13, "2.2": 23, "9": 8}
    assert set(sheet_enums(sheet)) == {
        "aclrtMemMallocPolicy",
        "aclrtMemcpyKind",
        "aclDataType",
        "aclFormat",
    }
    codes = sheet_status_codes(sheet)
    assert sum(name.startswith("ACLNN_") for name in codes) == 28
    assert sum(name.startswith("ACL_ERROR_RT_") for name in codes) == 8


def test_enums_agree_exactly(sheet: str, abi: Abi) -> None:
    expected = sheet_enums(sheet)
    assert set(abi.enums) == set(expected)
    for name, (header, members) in expected.items():
        enum = abi.enums[name]
        assert enum.header == header, name
        assert enum.members == members, name
        assert list(enum.members) == list(members), f"{name}: members out of order"


def test_enum_values_with_minus_one_and_hex(abi: Abi) -> None:
    assert abi.enum_value("ACL_DT_UNDEFINED") == -1
    assert abi.enum_value("ACL_FORMAT_UNDEFINED") == -1
    assert abi.enum_value("ACL_MEM_TYPE_LOW_BAND_WIDTH") == 0x100
    assert abi.enum_value("ACL_MEM_TYPE_HIGH_BAND_WIDTH") == 0x1000
    assert abi.enum_value("ACL_MEM_ACCESS_USER_SPACE_READONLY") == 0x100000
    assert abi.enum_of("ACL_FRACTAL_Z_3D") == "aclFormat"
    assert abi.enum_member("aclDataType", 27) == "ACL_BF16"


def test_status_codes_agree_exactly(sheet: str, abi: Abi) -> None:
    expected = sheet_status_codes(sheet)
    in_yaml: dict[str, int] = {}
    for kind, codes in abi.status_codes.items():
        for name, status in codes.items():
            for alias in (name, *status.aliases):
                assert alias not in in_yaml
                in_yaml[alias] = status.code
                prefix = "ACLNN_" if kind == "aclnnStatus" else "ACL_"
                assert alias.startswith(prefix), f"{alias} filed under {kind}"
    assert in_yaml == expected


def test_status_names_aliases_and_meanings(abi: Abi) -> None:
    assert abi.status_name(561105) == "ACLNN_ERR_INNER_KEY_CONFLICT"
    assert abi.status("ACLNN_ERR_INNER_KEY_CONFILICT").name == "ACLNN_ERR_INNER_KEY_CONFLICT"
    assert abi.status_code("ACLNN_ERR_INNER_KEY_CONFILICT") == 561105
    assert abi.status_name(0, "aclError") == "ACL_SUCCESS"
    assert abi.status("ACL_ERROR_NONE").name == "ACL_SUCCESS"
    assert abi.status_name(0) == "ACLNN_SUCCESS"
    assert abi.status_name(161001) == "ACLNN_ERR_PARAM_NULLPTR"
    assert abi.status_name(100002, "aclError") == "ACL_ERROR_REPEAT_INITIALIZE"
    assert abi.status_name(12345) is None
    for codes in abi.status_codes.values():
        for name, status in codes.items():
            assert status.meaning.strip() and "\n" not in status.meaning, name


def test_typedefs_agree_exactly(sheet: str, abi: Abi) -> None:
    expected = sheet_typedefs(sheet)
    actual = {name: (None if t.opaque else t.type) for name, t in abi.typedefs.items()}
    assert actual == expected
    assert abi.typedef_decl("aclrtStream") == "typedef void* aclrtStream;"
    assert abi.typedef_decl("aclTensor") == "typedef struct aclTensor aclTensor;"


def test_functions_agree_exactly(sheet: str, abi: Abi) -> None:
    expected = {name: value for name, value in sheet_functions(sheet).items() if name not in SKIPPED_FUNCTIONS}
    assert set(abi.functions) == set(expected) | set(EXTRA_FUNCTIONS)
    for name, prototype in EXTRA_FUNCTIONS.items():
        assert abi.functions[name].prototype == prototype and abi.functions[name].library == "nnopbase"
    for name, (prototype, number) in expected.items():
        function = abi.functions[name]
        assert function.prototype == prototype, name
        assert normalize_prototype(function.prototype) == prototype
        library = "nnopbase" if number == "2.2" else "ascendcl"
        assert function.library == library, f"{name} (section {number}) is exported by {library}"


def test_empty_parameter_lists_are_void(sheet: str, abi: Abi) -> None:
    raw = re.findall(r"`[^`]*?(\w+)\(\);`", section(sheet, "1.2"))
    raw += [m for m in re.findall(r"(\w+)\(\);", section(sheet, "2.2"))]
    assert set(raw) == {"aclFinalize", "aclGetRecentErrMsg", "aclrtGetSocName", "aclnnFinalize"}
    for name in raw:
        assert abi.functions[name].prototype.endswith(f"{name}(void)")
        assert abi.functions[name].decl.params == ()


def test_function_headers_follow_the_sheet(sheet: str, abi: Abi) -> None:
    rows = re.findall(r"^\| (\w+) \| `[^`]*` \| (?:\*\*)?([\w.]+?)(?:\*\*)?:\d+", section(sheet, "1.2"), re.M)
    assert len(rows) == 13
    for name, header in rows:
        assert abi.functions[name].header == f"acl/{header}", name
    assert abi.functions["aclrtGetSocName"].header == "acl/acl_base_rt.h"
    for name in ("aclnnInit", "aclnnFinalize"):
        assert abi.functions[name].header == "aclnn/aclnn_base.h"


def test_libraries_follow_the_sheet(sheet: str, abi: Abi) -> None:
    assert abi.libraries["ascendcl"].search == ("libascendcl.so", "libacl_rt.so")
    assert abi.libraries["nnopbase"].search == ("libnnopbase.so",)
    lookup = re.search(r"op-plugin's lookup order.*?(?=\n- Derived)", section(sheet, "3"), re.S)
    assert lookup, "op-plugin lookup order not found in section 3"
    order: list[str] = []
    for lib in re.findall(r"`(?:[^`]*/)?(lib[\w*]+\.so)`", lookup.group(0)):
        if lib not in order:
            order.append(lib)
    order += [lib for lib in re.findall(r"(libaclnn_\w+\.so)", lookup.group(0)) if lib not in order]
    assert abi.libraries["opapi"].search == tuple(order)
    assert order[:3] == ["libcust_opapi.so", "libopapi_*.so", "libopapi.so"]
    assert abi.library_for("runtime") == "ascendcl"
    assert abi.library_for("tensors") == "nnopbase"
    assert abi.library_for("ops") == "opapi"
    assert [f.name for f in abi.functions_by_library("opapi")] == []
    assert {f.name for f in abi.functions_by_library("ascendcl")} >= {
        "aclrtGetSocName",
        "aclGetRecentErrMsg",
        "aclrtGetVersion",
        "aclsysGetVersionStr",
        "aclsysGetVersionNum",
        "aclrtCreateContext",
    }
    assert "aclsysGetCANNVersion" not in abi.functions


def test_dtype_table(abi: Abi) -> None:
    import ml_dtypes
    import numpy as np

    expected = {
        "ACL_FLOAT": "float32",
        "ACL_FLOAT16": "float16",
        "ACL_INT8": "int8",
        "ACL_INT32": "int32",
        "ACL_UINT8": "uint8",
        "ACL_INT16": "int16",
        "ACL_UINT16": "uint16",
        "ACL_UINT32": "uint32",
        "ACL_INT64": "int64",
        "ACL_UINT64": "uint64",
        "ACL_DOUBLE": "float64",
        "ACL_BOOL": "bool",
        "ACL_COMPLEX64": "complex64",
        "ACL_COMPLEX128": "complex128",
        "ACL_BF16": "bfloat16",
        "ACL_INT4": "int4",
        "ACL_HIFLOAT8": "hifloat8",
        "ACL_FLOAT8_E5M2": "float8_e5m2",
        "ACL_FLOAT8_E4M3FN": "float8_e4m3fn",
        "ACL_FLOAT8_E8M0": "float8_e8m0fnu",
        "ACL_FLOAT4_E2M1": "float4_e2m1fn",
        "ACL_FLOAT4_E1M2": "float4_e1m2",
    }
    assert {name: d.numpy for name, d in abi.dtypes.items()} == expected
    for acl_name, numpy_name in expected.items():
        info = abi.dtype_for_numpy(numpy_name)
        assert info.acl_name == acl_name
        assert info.acl_value == abi.enum_value(acl_name)
        dtype = info.numpy_dtype()
        assert (dtype.names or (dtype.name,))[0] == numpy_name and dtype.itemsize == info.itemsize
        assert abi.dtype_for_numpy(dtype) is info
        assert abi.dtype_for_acl(acl_name) is info
        assert abi.dtype_for_acl(info.acl_value) is info
    assert abi.dtype_for_numpy(np.float16).acl_name == "ACL_FLOAT16"
    assert abi.dtype_for_numpy(ml_dtypes.bfloat16).acl_value == 27
    with pytest.raises(KeyError):
        abi.dtype_for_numpy("float8_e4m3b11fnuz")
    with pytest.raises(KeyError):
        abi.dtype_for_acl("ACL_STRING")


def test_cdef_text_is_accepted_by_cffi(abi: Abi) -> None:
    cffi = pytest.importorskip("cffi")
    ffi = cffi.FFI()
    text = "\n".join(
        [abi.typedef_decl(name) for name in abi.typedefs]
        + [abi.enum_decl(name) for name in abi.enums]
        + [function.cdef_text for function in abi.functions.values()]
    )
    ffi.cdef(text)
    assert ffi.sizeof("aclDataType") == 4
    assert ffi.sizeof("aclnnStatus") == 4
    assert int(ffi.cast("aclFormat", -1)) == -1


def test_default_path_is_the_repository_file() -> None:
    assert DEFAULT_ABI_PATH == ABI_YAML


# ---------------------------------------------------------------------------------------------
# The loader rejects bad copies with the right line


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "abi.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def _line_of(text: str, needle: str, occurrence: int = 1) -> int:
    lines = text.splitlines()
    hits = [index + 1 for index, line in enumerate(lines) if needle in line]
    assert len(hits) >= occurrence, f"{needle!r} not found"
    return hits[occurrence - 1]


def _edit(original: str, old: str, new: str) -> str:
    assert original.count(old) == 1, f"{old!r} is not unique in abi.yaml"
    return original.replace(old, new)


def _reject(path: Path) -> SpecError:
    with pytest.raises(SpecError) as info:
        load_abi(path)
    return info.value


ORIGINAL = ABI_YAML.read_text(encoding="utf-8")


def test_unknown_key_is_rejected_with_its_line(tmp_path: Path) -> None:
    text = _edit(ORIGINAL, "aclrtFree: {library: ascendcl,", "aclrtFree: {library: ascendcl, colour: red,")
    path = _write(tmp_path, text)
    error = _reject(path)
    line = _line_of(text, "colour: red")
    assert str(error).startswith(f"{path}:{line}: ")
    assert "unknown key 'colour'" in str(error)
    assert "allowed: library, header, prototype, optional" in str(error)


def test_unknown_top_level_key_is_rejected(tmp_path: Path) -> None:
    text = ORIGINAL + "extras:\n  x: 1\n"
    path = _write(tmp_path, text)
    error = _reject(path)
    assert error.problems[0].line == _line_of(text, "extras:")
    assert "unknown key 'extras'" in error.problems[0].message


def test_unknown_nested_key_in_a_block_mapping(tmp_path: Path) -> None:
    text = _edit(ORIGINAL, "    purpose: tensors\n", "    purpose: tensors\n    paths: [/opt]\n")
    error = _reject(_write(tmp_path, text))
    assert error.problems[0].line == _line_of(text, "paths: [/opt]")
    assert "libraries.nnopbase: unknown key 'paths'" in error.problems[0].message


def test_duplicate_key_is_rejected_with_its_line(tmp_path: Path) -> None:
    text = _edit(ORIGINAL, "      ACL_FLOAT16: 1\n", "      ACL_FLOAT16: 1\n      ACL_FLOAT16: 1\n")
    path = _write(tmp_path, text)
    error = _reject(path)
    assert error.problems[0].line == _line_of(text, "ACL_FLOAT16: 1", occurrence=2)
    assert "duplicate key 'ACL_FLOAT16'" in str(error)


def test_duplicate_function_key_is_rejected(tmp_path: Path) -> None:
    entry = next(line for line in ORIGINAL.splitlines() if line.startswith("  aclrtFree:"))
    text = _edit(ORIGINAL, entry + "\n", entry + "\n" + entry + "\n")
    error = _reject(_write(tmp_path, text))
    assert error.problems[0].line == _line_of(text, "  aclrtFree:", occurrence=2)


@pytest.mark.parametrize("bad", ["zero", '"0"', "1.5", "true", "[0]", "null"])
def test_wrong_enum_value_type_is_rejected_with_its_line(tmp_path: Path, bad: str) -> None:
    text = _edit(ORIGINAL, "      ACL_INT8: 2\n", f"      ACL_INT8: {bad}\n")
    path = _write(tmp_path, text)
    error = _reject(path)
    line = _line_of(text, f"ACL_INT8: {bad}")
    assert [p.line for p in error.problems] == [line]
    assert str(error).startswith(f"{path}:{line}: enums.aclDataType.members.ACL_INT8: ")


def test_duplicate_enum_value_is_rejected(tmp_path: Path) -> None:
    text = _edit(ORIGINAL, "      ACL_MEMCPY_DEFAULT: 4\n", "      ACL_MEMCPY_DEFAULT: 3\n")
    error = _reject(_write(tmp_path, text))
    assert error.problems[0].line == _line_of(text, "ACL_MEMCPY_DEFAULT: 3")
    assert "value 3 is already used by ACL_MEMCPY_DEVICE_TO_DEVICE" in str(error)


def test_enum_value_out_of_int_range_is_rejected(tmp_path: Path) -> None:
    text = _edit(
        ORIGINAL, "ACL_MEM_ACCESS_USER_SPACE_READONLY: 0x100000", "ACL_MEM_ACCESS_USER_SPACE_READONLY: 0x100000000"
    )
    error = _reject(_write(tmp_path, text))
    assert error.problems[0].line == _line_of(text, "0x100000000")
    assert "does not fit a C int" in str(error)


def test_missing_key_is_rejected(tmp_path: Path) -> None:
    text = _edit(ORIGINAL, "aclrtFree: {library: ascendcl, header: acl/acl_rt.h, ", "aclrtFree: {library: ascendcl, ")
    error = _reject(_write(tmp_path, text))
    assert error.problems[0].line == _line_of(text, "  aclrtFree:")
    assert "functions.aclrtFree: missing required key 'header'" in str(error)


def test_non_canonical_prototype_is_rejected_with_the_expected_text(tmp_path: Path) -> None:
    text = _edit(ORIGINAL, '"aclError aclrtFree(void* devPtr)"', '"aclError aclrtFree(void *devPtr);"')
    error = _reject(_write(tmp_path, text))
    assert error.problems[0].line == _line_of(text, "  aclrtFree:")
    assert "functions.aclrtFree.prototype: prototype is not in canonical form" in str(error)
    assert "expected: aclError aclrtFree(void* devPtr)" in str(error)


def test_unparsable_prototype_is_rejected(tmp_path: Path) -> None:
    text = _edit(ORIGINAL, '"aclError aclrtFree(void* devPtr)"', '"aclError aclrtFree(void* devPtr, ...)"')
    error = _reject(_write(tmp_path, text))
    assert error.problems[0].line == _line_of(text, "  aclrtFree:")
    assert "varargs" in str(error)


def test_prototype_name_must_match_its_key(tmp_path: Path) -> None:
    text = _edit(ORIGINAL, '"aclError aclrtFree(void* devPtr)"', '"aclError aclrtRelease(void* devPtr)"')
    error = _reject(_write(tmp_path, text))
    assert "declares 'aclrtRelease' but the key is 'aclrtFree'" in str(error)


def test_undeclared_type_and_unknown_library_are_rejected(tmp_path: Path) -> None:
    text = _edit(ORIGINAL, '"aclError aclrtFree(void* devPtr)"', '"aclError aclrtFree(aclrtBlob* devPtr)"')
    text = _edit(text, "aclrtDestroyStream: {library: ascendcl,", "aclrtDestroyStream: {library: acl,")
    error = _reject(_write(tmp_path, text))
    messages = {p.line: p.message for p in error.problems}
    assert "'aclrtBlob' is not declared" in messages[_line_of(text, "  aclrtFree:")]
    assert "unknown library 'acl'" in messages[_line_of(text, "  aclrtDestroyStream:")]


def test_duplicate_status_code_and_name_are_rejected(tmp_path: Path) -> None:
    text = _edit(ORIGINAL, "ACLNN_ERR_INNER_NULLPTR: {code: 561103,", "ACLNN_ERR_INNER_NULLPTR: {code: 561101,")
    text = _edit(text, "aliases: [ACLNN_ERR_INNER_KEY_CONFILICT]", "aliases: [ACLNN_ERR_INNER]")
    error = _reject(_write(tmp_path, text))
    messages = {p.line: p.message for p in error.problems}
    assert (
        "code 561101 is already ACLNN_ERR_INNER_CREATE_EXECUTOR" in messages[_line_of(text, "ACLNN_ERR_INNER_NULLPTR:")]
    )
    assert "status name ACLNN_ERR_INNER is declared twice" in messages[_line_of(text, "aliases: [ACLNN_ERR_INNER]")]


def test_bad_typedef_and_dtype_entries_are_rejected(tmp_path: Path) -> None:
    text = _edit(ORIGINAL, 'aclrtEvent: {type: "void*",', 'aclrtEvent: {type: "void *",')
    text = _edit(text, "ACL_UINT32: {numpy: uint32,", "ACL_UINT33: {numpy: uint32,")
    error = _reject(_write(tmp_path, text))
    messages = {p.line: p.message for p in error.problems}
    assert "write it as 'void*'" in messages[_line_of(text, "aclrtEvent:")]
    assert "ACL_UINT33 is not a member of aclDataType" in messages[_line_of(text, "ACL_UINT33:")]


def test_missing_file_is_a_spec_error(tmp_path: Path) -> None:
    error = _reject(tmp_path / "nope.yaml")
    assert "no such file" in str(error)
