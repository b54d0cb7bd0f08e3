"""The C prototype model: canonical text, round trips, rejections and page-vs-header diffs."""

from __future__ import annotations

import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from aclnngen.codegen.cdecl import (
    CFunction,
    CParam,
    CType,
    PrototypeError,
    diff_prototypes,
    normalize_prototype,
    parse_ctype,
    parse_prototype,
)
from aclnngen.codegen.errors import FieldProblem

# (canonical text, the vendor's own spelling) for every prototype in cann-abi.md sections 1.2,
# 2.2, 3 and 9.
RECORDED_FACT_PROTOTYPES: list[tuple[str, str]] = [
    # 1.2 runtime
    ("aclError aclInit(const char* configPath)", "aclError aclInit(const char *configPath);"),
    ("aclError aclFinalize(void)", "aclError aclFinalize();"),
    ("const char* aclGetRecentErrMsg(void)", "const char *aclGetRecentErrMsg();"),
    ("aclError aclrtSetDevice(int32_t deviceId)", "aclError aclrtSetDevice(int32_t deviceId);"),
    ("aclError aclrtResetDevice(int32_t deviceId)", "aclError aclrtResetDevice(int32_t deviceId);"),
    ("aclError aclrtGetDevice(int32_t* deviceId)", "aclError aclrtGetDevice(int32_t *deviceId);"),
    (
        "aclError aclrtMalloc(void** devPtr, size_t size, aclrtMemMallocPolicy policy)",
        "aclError aclrtMalloc(void **devPtr, size_t size, aclrtMemMallocPolicy policy);",
    ),
    ("aclError aclrtFree(void* devPtr)", "aclError aclrtFree(void *devPtr);"),
    (
        "aclError aclrtMemcpy(void* dst, size_t destMax, const void* src, size_t count, aclrtMemcpyKind kind)",
        "aclError aclrtMemcpy(void *dst, size_t destMax, const void *src, size_t count, aclrtMemcpyKind kind);",
    ),
    (
        "aclError aclrtCreateStream(aclrtStream* stream)",
        "aclError aclrtCreateStream(aclrtStream *stream);",
    ),
    (
        "aclError aclrtDestroyStream(aclrtStream stream)",
        "aclError aclrtDestroyStream(aclrtStream stream);",
    ),
    (
        "aclError aclrtSynchronizeStream(aclrtStream stream)",
        "aclError aclrtSynchronizeStream(aclrtStream stream);",
    ),
    ("const char* aclrtGetSocName(void)", "const char *aclrtGetSocName();"),
    # 2.2 tensor descriptors
    (
        "aclTensor* aclCreateTensor(const int64_t* viewDims, uint64_t viewDimsNum, "
        "aclDataType dataType, const int64_t* stride, int64_t offset, aclFormat format, "
        "const int64_t* storageDims, uint64_t storageDimsNum, void* tensorData)",
        "aclTensor* aclCreateTensor(const int64_t* viewDims, uint64_t viewDimsNum, aclDataType dataType,\n"
        "                           const int64_t* stride, int64_t offset, aclFormat format,\n"
        "                           const int64_t* storageDims, uint64_t storageDimsNum, void* tensorData);",
    ),
    (
        "aclScalar* aclCreateScalar(void* value, aclDataType dataType)",
        "aclScalar* aclCreateScalar(void* value, aclDataType dataType);",
    ),
    (
        "aclIntArray* aclCreateIntArray(const int64_t* value, uint64_t size)",
        "aclIntArray* aclCreateIntArray(const int64_t* value, uint64_t size);",
    ),
    (
        "aclFloatArray* aclCreateFloatArray(const float* value, uint64_t size)",
        "aclFloatArray* aclCreateFloatArray(const float* value, uint64_t size);",
    ),
    (
        "aclBoolArray* aclCreateBoolArray(const bool* value, uint64_t size)",
        "aclBoolArray* aclCreateBoolArray(const bool* value, uint64_t size);",
    ),
    (
        "aclTensorList* aclCreateTensorList(const aclTensor* const* value, uint64_t size)",
        "aclTensorList* aclCreateTensorList(const aclTensor* const* value, uint64_t size);",
    ),
    (
        "aclScalarList* aclCreateScalarList(const aclScalar* const* value, uint64_t size)",
        "aclScalarList* aclCreateScalarList(const aclScalar* const* value, uint64_t size);",
    ),
    (
        "aclnnStatus aclDestroyTensor(const aclTensor* tensor)",
        "aclnnStatus aclDestroyTensor(const aclTensor* tensor);",
    ),
    (
        "aclnnStatus aclDestroyScalar(const aclScalar* scalar)",
        "aclnnStatus aclDestroyScalar(const aclScalar* scalar);",
    ),
    (
        "aclnnStatus aclDestroyIntArray(const aclIntArray* array)",
        "aclnnStatus aclDestroyIntArray(const aclIntArray* array);",
    ),
    (
        "aclnnStatus aclDestroyTensorList(const aclTensorList* array)",
        "aclnnStatus aclDestroyTensorList(const aclTensorList* array);",
    ),
    (
        "aclnnStatus aclDestroyScalarList(const aclScalarList* array)",
        "aclnnStatus aclDestroyScalarList(const aclScalarList* array);",
    ),
    (
        "aclnnStatus aclGetViewShape(const aclTensor* tensor, int64_t** viewDims, uint64_t* viewDimsNum)",
        "aclnnStatus aclGetViewShape(const aclTensor* tensor, int64_t** viewDims, uint64_t* viewDimsNum);",
    ),
    (
        "aclnnStatus aclGetStorageShape(const aclTensor* tensor, int64_t** storageDims, uint64_t* storageDimsNum)",
        "aclnnStatus aclGetStorageShape(const aclTensor* tensor, int64_t** storageDims, uint64_t* storageDimsNum);",
    ),
    (
        "aclnnStatus aclGetViewStrides(const aclTensor* tensor, int64_t** stridesValue, uint64_t* stridesNum)",
        "aclnnStatus aclGetViewStrides(const aclTensor* tensor, int64_t** stridesValue, uint64_t* stridesNum);",
    ),
    (
        "aclnnStatus aclGetViewOffset(const aclTensor* tensor, int64_t* offset)",
        "aclnnStatus aclGetViewOffset(const aclTensor* tensor, int64_t* offset);",
    ),
    (
        "aclnnStatus aclGetFormat(const aclTensor* tensor, aclFormat* format)",
        "aclnnStatus aclGetFormat(const aclTensor* tensor, aclFormat* format);",
    ),
    (
        "aclnnStatus aclGetDataType(const aclTensor* tensor, aclDataType* dataType)",
        "aclnnStatus aclGetDataType(const aclTensor* tensor, aclDataType* dataType);",
    ),
    (
        "aclnnStatus aclInitTensor(aclTensor* tensor, const int64_t* viewDims, uint64_t viewDimsNum, "
        "aclDataType dataType, const int64_t* stride, int64_t offset, aclFormat format, "
        "const int64_t* storageDims, uint64_t storageDimsNum, void* tensorDataAddr)",
        "aclnnStatus aclInitTensor(aclTensor* tensor, const int64_t* viewDims, uint64_t viewDimsNum, aclDataType dataType,\n"
        "                          const int64_t* stride, int64_t offset, aclFormat format,\n"
        "                          const int64_t* storageDims, uint64_t storageDimsNum, void* tensorDataAddr);",
    ),
    (
        "aclnnStatus aclSetAclOpExecutorRepeatable(aclOpExecutor* executor)",
        "aclnnStatus aclSetAclOpExecutorRepeatable(aclOpExecutor* executor);",
    ),
    (
        "aclnnStatus aclDestroyAclOpExecutor(aclOpExecutor* executor)",
        "aclnnStatus aclDestroyAclOpExecutor(aclOpExecutor* executor);",
    ),
    ("aclnnStatus aclnnInit(const char* configPath)", "aclnnStatus aclnnInit(const char* configPath);"),
    ("aclnnStatus aclnnFinalize(void)", "aclnnStatus aclnnFinalize();"),
    # 3 per-op headers
    (
        "aclnnStatus aclnnGeluBackwardGetWorkspaceSize(const aclTensor* gradOutput, "
        "const aclTensor* self, const aclTensor* gradInput, uint64_t* workspaceSize, "
        "aclOpExecutor** executor)",
        "aclnnStatus aclnnGeluBackwardGetWorkspaceSize(const aclTensor* gradOutput, const aclTensor* self,\n"
        "                                              const aclTensor* gradInput, uint64_t* workspaceSize,\n"
        "                                              aclOpExecutor** executor);",
    ),
    (
        "aclnnStatus aclnnGeluBackward(void* workspace, uint64_t workspace_size, "
        "aclOpExecutor* executor, const aclrtStream stream)",
        "aclnnStatus aclnnGeluBackward(void* workspace, uint64_t workspace_size, aclOpExecutor* executor,\n"
        "                              const aclrtStream stream);",
    ),
    (
        "aclnnStatus aclnnGeluBackwardV2GetWorkspaceSize(const aclTensor* gradOutput, "
        "const aclTensor* self, char* approximate, aclTensor* gradInput, uint64_t* workspaceSize, "
        "aclOpExecutor** executor)",
        "aclnnStatus aclnnGeluBackwardV2GetWorkspaceSize(const aclTensor* gradOutput, const aclTensor* self, "
        "char* approximate, aclTensor* gradInput, uint64_t* workspaceSize, aclOpExecutor** executor)",
    ),
    (
        "aclnnStatus aclnnHardtanhBackwardGetWorkspaceSize(const aclTensor* gradOutput, "
        "const aclTensor* self, const aclScalar* min, const aclScalar* max, aclTensor* out, "
        "uint64_t* workspaceSize, aclOpExecutor** executor)",
        "aclnnStatus aclnnHardtanhBackwardGetWorkspaceSize(const aclTensor* gradOutput, const aclTensor* self,\n"
        "                                                  const aclScalar* min, const aclScalar* max, aclTensor* out,\n"
        "                                                  uint64_t* workspaceSize, aclOpExecutor** executor);",
    ),
    (
        "aclnnStatus aclnnHardtanhBackward(void* workspace, uint64_t workspaceSize, "
        "aclOpExecutor* executor, aclrtStream stream)",
        "aclnnStatus aclnnHardtanhBackward(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor,\n"
        "                                  aclrtStream stream);",
    ),
    (
        "aclnnStatus aclnnSoftshrinkBackwardGetWorkspaceSize(const aclTensor* gradOutput, "
        "const aclTensor* self, const aclScalar* lambda, aclTensor* gradInput, "
        "uint64_t* workspaceSize, aclOpExecutor** executor)",
        "aclnnStatus aclnnSoftshrinkBackwardGetWorkspaceSize(const aclTensor* gradOutput, const aclTensor* self,\n"
        "                                                    const aclScalar* lambda, aclTensor* gradInput,\n"
        "                                                    uint64_t* workspaceSize, aclOpExecutor** executor);",
    ),
    (
        "aclnnStatus aclnnSoftshrinkBackward(void* workspace, uint64_t workspaceSize, "
        "aclOpExecutor* executor, const aclrtStream stream)",
        "aclnnStatus aclnnSoftshrinkBackward(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor,\n"
        "                                    const aclrtStream stream);",
    ),
    (
        "aclnnStatus aclnnPreluBackwardGetWorkspaceSize(const aclTensor* gradOutput, "
        "const aclTensor* self, const aclTensor* weight, aclTensor* gradInput, "
        "aclTensor* gradWeight, uint64_t* workspaceSize, aclOpExecutor** executor)",
        "aclnnStatus aclnnPreluBackwardGetWorkspaceSize(const aclTensor* gradOutput, const aclTensor* self,\n"
        "                                               const aclTensor* weight, aclTensor* gradInput,\n"
        "                                               aclTensor* gradWeight, uint64_t* workspaceSize,\n"
        "                                               aclOpExecutor** executor);",
    ),
    (
        "aclnnStatus aclnnPreluBackward(void* workspace, uint64_t workspace_size, "
        "aclOpExecutor* executor, aclrtStream stream)",
        "aclnnStatus aclnnPreluBackward(void* workspace, uint64_t workspace_size, aclOpExecutor* executor,\n"
        "                               aclrtStream stream);",
    ),
    (
        "aclnnStatus aclnnSwishBackwardGetWorkspaceSize(const aclTensor* gradOutput, "
        "const aclTensor* self, const aclScalar* betaOptional, aclTensor* gradInput, "
        "uint64_t* workspaceSize, aclOpExecutor** executor)",
        "aclnnStatus aclnnSwishBackwardGetWorkspaceSize(const aclTensor* gradOutput, const aclTensor* self,\n"
        "                                               const aclScalar* betaOptional, aclTensor* gradInput,\n"
        "                                               uint64_t* workspaceSize, aclOpExecutor** executor);",
    ),
    (
        "aclnnStatus aclnnSwishBackward(void* workspace, uint64_t workspaceSize, "
        "aclOpExecutor* executor, aclrtStream stream)",
        "aclnnStatus aclnnSwishBackward(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor,\n"
        "                               aclrtStream stream);",
    ),
    (
        "aclnnStatus aclnnSiluBackwardGetWorkspaceSize(const aclTensor* gradOutput, "
        "const aclTensor* self, aclTensor* gradInput, uint64_t* workspaceSize, "
        "aclOpExecutor** executor)",
        "aclnnStatus aclnnSiluBackwardGetWorkspaceSize(const aclTensor* gradOutput, const aclTensor* self, "
        "aclTensor* gradInput, uint64_t* workspaceSize, aclOpExecutor** executor)",
    ),
    # 9 versions and contexts
    (
        "aclError aclrtGetVersion(int32_t* majorVersion, int32_t* minorVersion, int32_t* patchVersion)",
        "aclError aclrtGetVersion(int32_t *majorVersion, int32_t *minorVersion, int32_t *patchVersion);",
    ),
    (
        "aclError aclsysGetCANNVersion(aclCANNPackageName name, aclCANNPackageVersion* version)",
        "aclError aclsysGetCANNVersion(aclCANNPackageName name, aclCANNPackageVersion *version);",
    ),
    (
        "aclError aclsysGetVersionStr(char* pkgName, char* versionStr)",
        "aclError aclsysGetVersionStr(char *pkgName, char *versionStr);",
    ),
    (
        "aclError aclsysGetVersionNum(char* pkgName, int32_t* versionNum)",
        "aclError aclsysGetVersionNum(char *pkgName, int32_t *versionNum);",
    ),
    (
        "aclError aclrtCreateContext(aclrtContext* context, int32_t deviceId)",
        "aclError aclrtCreateContext(aclrtContext *context, int32_t deviceId);",
    ),
    (
        "aclError aclrtDestroyContext(aclrtContext context)",
        "aclError aclrtDestroyContext(aclrtContext context);",
    ),
    (
        "aclError aclrtSetCurrentContext(aclrtContext context)",
        "aclError aclrtSetCurrentContext(aclrtContext context);",
    ),
    (
        "aclError aclrtGetCurrentContext(aclrtContext* context)",
        "aclError aclrtGetCurrentContext(aclrtContext *context);",
    ),
]

CANONICAL = [canonical for canonical, _ in RECORDED_FACT_PROTOTYPES]


def _name(text: str) -> str:
    return re.search(r"(\w+)\s*\(", text).group(1)


@pytest.mark.parametrize("canonical, vendor", RECORDED_FACT_PROTOTYPES, ids=[_name(c) for c in CANONICAL])
def test_vendor_spelling_normalises_to_canonical(canonical: str, vendor: str) -> None:
    assert normalize_prototype(vendor) == canonical
    parsed = CFunction.parse_canonical(canonical)
    assert str(parsed) == canonical
    assert parsed == parse_prototype(vendor)
    assert parsed.cdef_text == canonical + ";"


@pytest.mark.parametrize("canonical", CANONICAL, ids=[_name(c) for c in CANONICAL])
def test_canonical_text_is_a_fixed_point(canonical: str) -> None:
    assert normalize_prototype(normalize_prototype(canonical)) == canonical
    assert normalize_prototype(canonical + " ;") == canonical


def test_model_fields_of_a_prototype() -> None:
    fn = parse_prototype("aclTensorList *aclCreateTensorList(const aclTensor *const *value, uint64_t size);")
    assert fn.name == "aclCreateTensorList"
    assert fn.returns == CType("aclTensorList", pointers=(False,))
    value = fn.param("value")
    assert value.type == CType("aclTensor", const=True, pointers=(True, False))
    assert value.type.pointer_depth == 2 and value.type.is_const
    assert str(value) == "const aclTensor* const* value"
    assert fn.param_names == ("value", "size")
    assert fn.param("size").type.pointer_depth == 0


def test_ctype_properties() -> None:
    stream = parse_ctype("const aclrtStream")
    assert stream == CType("aclrtStream", const=True)
    assert stream.is_const and stream.top_const and stream.pointer_depth == 0
    assert str(stream) == "const aclrtStream" == stream.cdef_text
    assert stream.without_top_const() == CType("aclrtStream")
    east = parse_ctype("char const * const")
    assert str(east) == "const char* const"
    assert east.top_const and east.is_const and east.pointee == CType("char", const=True)
    assert CType("void").pointer_to().pointer_to() == parse_ctype("void **")
    assert CType.parse_canonical("void*") == CType("void", pointers=(False,))
    with pytest.raises(PrototypeError, match=r"write it as 'void\*'"):
        CType.parse_canonical("void *", loc=("typedefs", "x"))
    assert parse_ctype("unsigned int") == CType("unsigned int")


def test_empty_parameter_list_is_void() -> None:
    assert str(parse_prototype("aclError aclFinalize()")) == "aclError aclFinalize(void)"
    assert str(parse_prototype("aclError aclFinalize( void ) ;")) == "aclError aclFinalize(void)"
    assert parse_prototype("int f()").params == ()
    assert str(CFunction(CType("int"), "f", ())) == "int f(void)"


def test_constructed_model_prints_canonically() -> None:
    fn = CFunction(
        CType("aclnnStatus"),
        "aclnnDemoBackward",
        [
            CParam(CType("void", pointers=(False,)), "workspace"),
            CParam(CType("uint64_t"), "workspaceSize"),
            CParam(CType("aclOpExecutor", pointers=(False,)), "executor"),
            CParam(CType("aclrtStream"), "stream"),
        ],
    )
    assert isinstance(fn.params, tuple)
    assert str(fn) == (
        "aclnnStatus aclnnDemoBackward(void* workspace, uint64_t workspaceSize, "
        "aclOpExecutor* executor, aclrtStream stream)"
    )


def test_parse_canonical_rejects_other_spellings_with_loc() -> None:
    loc = ("functions", "aclInit", "prototype")
    with pytest.raises(PrototypeError) as info:
        CFunction.parse_canonical("aclError aclInit(const char *configPath);", loc)
    assert isinstance(info.value, FieldProblem) and not isinstance(info.value, ValueError)
    assert info.value.loc == loc
    assert "expected: aclError aclInit(const char* configPath)" in info.value.message
    with pytest.raises(PrototypeError) as info:
        CFunction.parse_canonical("aclError aclFinalize()", loc)
    assert info.value.message.endswith("expected: aclError aclFinalize(void)")
    with pytest.raises(PrototypeError) as info:
        CFunction.parse_canonical("aclError  aclFinalize(void)", loc)
    assert info.value.loc == loc
    # a parse failure also carries the caller's loc
    with pytest.raises(PrototypeError) as info:
        CFunction.parse_canonical("aclError aclInit(int x[2])", loc)
    assert info.value.loc == loc and "arrays" in info.value.message
    with pytest.raises(PrototypeError) as info:
        CFunction.parse_canonical(42, loc)  # type: ignore[arg-type]
    assert info.value.loc == loc


REJECTIONS: list[tuple[str, str]] = [
    ("", "empty prototype"),
    (";", "empty prototype"),
    ("int f(int a);;", "only one trailing ';'"),
    ("int f(int& a)", "unknown token '&'"),
    ("int f(int a) // note", "unknown token '/'"),
    ("template<int> int f(int a)", "unknown token '<'"),
    ("int f", "expected '('"),
    ("int f(int a", "missing ')'"),
    ("int f(int a) const", "unexpected 'const' after the parameter list"),
    ("f(int a)", "expected a type and a name, found only 'f'"),
    ("int (void)", "expected a type and a name, found only 'int'"),
    ("int f(const aclTensor*)", "parameter 1: missing name after type 'const aclTensor*'"),
    ("int f(int a, uint64_t)", "parameter 2: expected a type and a name, found only 'uint64_t'"),
    ("int f(const x)", "parameter 1: missing type before name 'x'"),
    ("int f(unsigned int)", "parameter 1: missing name after type 'unsigned int'"),
    ("int f(int 2x)", "parameter 1: name '2x' is not a C identifier"),
    ("int 9f(int a)", "function: name '9f' is not a C identifier"),
    ("int f(int données)", "parameter 1: name 'données' is not a C identifier"),
    ("int f(int return)", "parameter 1: 'return' is a C keyword and cannot be used as a name"),
    ("int while(int a)", "function: 'while' is a C keyword"),
    ("int f(return* a)", "'return' is a C keyword, not a type name"),
    ("int (*f)(int a)", "function pointers are not supported"),
    ("int f(void (*cb)(int))", "function pointers are not supported"),
    ("int (*)(void*, uint64_t, aclOpExecutor*, const aclrtStream)", "function pointers"),
    ("int f(int a[4])", "arrays ('[...]') are not supported"),
    ("int f(const char* fmt, ...)", "varargs ('...') are not supported"),
    ("int f(int a = 0)", "default values ('= ...') are not C"),
    ("unsigned long long f(void)", "multi-word type 'unsigned long long' is not allowed"),
    ("int f(long long a)", "multi-word type 'long long' is not allowed"),
    ("int f(unsigned a)", "write 'unsigned int' instead of a bare 'unsigned'"),
    ("ACL_FUNC_VISIBILITY aclError aclInit(void)", "expected one type name, found 'ACL_FUNC_VISIBILITY aclError'"),
    ("int f(struct aclTensor* t)", "elaborated types ('struct X') are not supported"),
    ("static int f(int a)", "storage class 'static'"),
    ("int f(volatile int* a)", "'volatile' is not supported"),
    ("int f(const const int a)", "duplicate 'const'"),
    ("int f(int* const const a)", "duplicate 'const'"),
    ("int f(int* x a)", "unexpected 'x' after '*'"),
    ("int f(int a,)", "parameter 2 is empty (stray ',')"),
    ("int f(void, int a)", "'void' must be the only parameter"),
    ("int f(void a)", "type void is only allowed as a pointer or return type"),
    ("int f(int a, int a)", "parameter 2: duplicate name 'a'"),
]


@pytest.mark.parametrize("text, message", REJECTIONS, ids=[r[0] or "<empty>" for r in REJECTIONS])
def test_rejections_have_clear_messages(text: str, message: str) -> None:
    with pytest.raises(PrototypeError) as info:
        parse_prototype(text)
    assert message in info.value.message


def test_constructor_rejects_bad_names() -> None:
    with pytest.raises(PrototypeError, match="not a C identifier"):
        CParam(CType("int"), "a-b")
    with pytest.raises(PrototypeError, match="C keyword"):
        CFunction(CType("int"), "int", ())
    with pytest.raises(PrototypeError, match="not a C identifier"):
        CType("unsigned long long")
    with pytest.raises(PrototypeError, match="type void"):
        CFunction(CType("int"), "f", (CParam(CType("void"), "x"),))


def test_parse_ctype_rejects_junk() -> None:
    for text, message in [("", "missing type"), ("int (", "unexpected '('"), ("int*x", "unexpected 'x'")]:
        with pytest.raises(PrototypeError, match=re.escape(message)):
            parse_ctype(text)


# ---------------------------------------------------------------------------------------------
# Doc pages that print a prototype differently from the header

GELU_WS_HEADER = (
    "aclnnStatus aclnnGeluBackwardGetWorkspaceSize(const aclTensor* gradOutput, const aclTensor* self, "
    "const aclTensor* gradInput, uint64_t* workspaceSize, aclOpExecutor** executor)"
)
SOFTSHRINK_WS_HEADER = (
    "aclnnStatus aclnnSoftshrinkBackwardGetWorkspaceSize(const aclTensor* gradOutput, "
    "const aclTensor* self, const aclScalar* lambda, aclTensor* gradInput, "
    "uint64_t* workspaceSize, aclOpExecutor** executor)"
)

RECORDED_FACT_DIFFS: list[tuple[str, str, str, list[str]]] = [
    (
        "softshrink lambd",
        SOFTSHRINK_WS_HEADER,
        "aclnnStatus aclnnSoftshrinkBackwardGetWorkspaceSize(const aclTensor *gradOutput, "
        "const aclTensor *self, const aclScalar *lambd, aclTensor *gradInput, "
        "uint64_t *workspaceSize, aclOpExecutor **executor);",
        ["parameter 3 renamed: header 'lambda', page 'lambd'"],
    ),
    (
        "gelu page keeps const gradInput",
        GELU_WS_HEADER,
        "aclnnStatus aclnnGeluBackwardGetWorkspaceSize(const aclTensor *gradOutput, "
        "const aclTensor *self, const aclTensor *gradInput, uint64_t *workspaceSize, "
        "aclOpExecutor **executor)",
        [],
    ),
    (
        "gelu gradInput without const",
        GELU_WS_HEADER,
        "aclnnStatus aclnnGeluBackwardGetWorkspaceSize(const aclTensor *gradOutput, "
        "const aclTensor *self, aclTensor *gradInput, uint64_t *workspaceSize, "
        "aclOpExecutor **executor)",
        ["parameter 3 'gradInput': page drops const on the pointee: header 'const aclTensor*', page 'aclTensor*'"],
    ),
    (
        "gelu second phase",
        "aclnnStatus aclnnGeluBackward(void* workspace, uint64_t workspace_size, "
        "aclOpExecutor* executor, const aclrtStream stream)",
        "aclnnStatus aclnnGeluBackward(void *workspace, uint64_t workspaceSize, "
        "aclOpExecutor *executor, aclrtStream stream)",
        [
            "parameter 2 renamed: header 'workspace_size', page 'workspaceSize'",
            "parameter 4 'stream': page drops top-level const (ABI-neutral): header "
            "'const aclrtStream', page 'aclrtStream'",
        ],
    ),
    (
        "prelu second phase",
        "aclnnStatus aclnnPreluBackward(void* workspace, uint64_t workspace_size, "
        "aclOpExecutor* executor, aclrtStream stream)",
        "aclnnStatus aclnnPreluBackward(void *workspace, uint64_t workspaceSize, "
        "aclOpExecutor *executor, const aclrtStream stream)",
        [
            "parameter 2 renamed: header 'workspace_size', page 'workspaceSize'",
            "parameter 4 'stream': page adds top-level const (ABI-neutral): header "
            "'aclrtStream', page 'const aclrtStream'",
        ],
    ),
    (
        "swish same",
        "aclnnStatus aclnnSwishBackward(void* workspace, uint64_t workspaceSize, "
        "aclOpExecutor* executor, aclrtStream stream)",
        "aclnnStatus aclnnSwishBackward(void *workspace, uint64_t workspaceSize, "
        "aclOpExecutor *executor, aclrtStream stream);",
        [],
    ),
    (
        "hardtanh output name",
        "aclnnStatus aclnnHardtanhBackwardGetWorkspaceSize(const aclTensor* gradOutput, "
        "const aclTensor* self, const aclScalar* min, const aclScalar* max, aclTensor* out, "
        "uint64_t* workspaceSize, aclOpExecutor** executor)",
        "aclnnStatus aclnnHardtanhBackwardGetWorkspaceSize(const aclTensor *gradOutput, "
        "const aclTensor *self, const aclScalar *min, const aclScalar *max, "
        "aclTensor *gradInput, uint64_t *workspaceSize, aclOpExecutor **executor)",
        ["parameter 5 renamed: header 'out', page 'gradInput'"],
    ),
]


@pytest.mark.parametrize(
    "header, page, expected", [d[1:] for d in RECORDED_FACT_DIFFS], ids=[d[0] for d in RECORDED_FACT_DIFFS]
)
def test_diff_prototypes_on_page_variants(header: str, page: str, expected: list[str]) -> None:
    assert diff_prototypes(parse_prototype(header), parse_prototype(page)) == expected


def test_diff_prototypes_structural_differences() -> None:
    header = parse_prototype("aclnnStatus aclnnA(const aclTensor* x, aclTensor* out)")
    page = parse_prototype("int aclnnB(const aclTensor* x)")
    assert diff_prototypes(header, page) == [
        "function name differs: header 'aclnnA', page 'aclnnB'",
        "return type differs: header 'aclnnStatus', page 'int'",
        "parameter count differs: header has 2, page has 1",
        "parameter 2 'aclTensor* out' is missing on the page",
    ]
    assert diff_prototypes(page, header)[-1] == "parameter 2 'aclTensor* out' is only on the page"
    typed = diff_prototypes(parse_prototype("int f(const aclTensor* x)"), parse_prototype("int f(const aclScalar* x)"))
    assert typed == ["parameter 1 'x': type differs: header 'const aclTensor*', page 'const aclScalar*'"]


# ---------------------------------------------------------------------------------------------
# Property tests

_TOKEN = re.compile(r"\w+|[*(),]")


@st.composite
def respelt(draw: st.DrawFn) -> tuple[str, str]:
    """A canonical prototype and a random but equivalent spelling of it."""
    canonical = draw(st.sampled_from(CANONICAL))
    text = canonical
    # East const: `const T*` may be written `T const*`.
    text = re.sub(
        r"\bconst (\w+)",
        lambda m: f"{m.group(1)} const" if draw(st.booleans()) else m.group(0),
        text,
    )
    if text.endswith("(void)") and draw(st.booleans()):
        text = text[: -len("(void)")] + "()"
    tokens = _TOKEN.findall(text)
    spaces = st.text(alphabet=" \t\n\r", max_size=3)
    out = [draw(spaces)]
    for before, after in zip(tokens, tokens[1:] + [None]):
        out.append(before)
        if after is None:
            break
        gap = draw(spaces)
        if before[-1].isalnum() or before[-1] == "_":
            if after[0].isalnum() or after[0] == "_":
                gap = draw(st.sampled_from([" ", "\t", "\n", "  "])) + gap
        out.append(gap)
    if draw(st.booleans()):
        out.append(draw(spaces) + ";")
    out.append(draw(spaces))
    return canonical, "".join(out)


@given(respelt())
@settings(max_examples=400, suppress_health_check=[HealthCheck.too_slow])
def test_random_spelling_normalises_to_canonical(case: tuple[str, str]) -> None:
    canonical, text = case
    assert normalize_prototype(text) == canonical


_JUNK_TOKENS = st.sampled_from(
    [
        "int",
        "void",
        "const",
        "aclTensor",
        "x",
        "f",
        "unsigned",
        "long",
        "return",
        "2x",
        "*",
        "**",
        "(",
        ")",
        ",",
        ";",
        "[",
        "]",
        "=",
        "0",
        "...",
        "&",
        "<",
        "struct",
        " ",
        "\n",
        "volatile",
        "é",
        "lambda",
    ]
)


def _parse_or_typed_error(text: str) -> None:
    try:
        fn = parse_prototype(text)
    except PrototypeError as exc:
        assert isinstance(exc, FieldProblem) and exc.message
        return
    # Whatever parses must print a text that parses back to the same model.
    assert parse_prototype(str(fn)) == fn
    assert CFunction.parse_canonical(str(fn)) == fn


@given(st.lists(_JUNK_TOKENS, max_size=14).map(" ".join))
@settings(max_examples=500)
def test_token_junk_raises_only_the_typed_error(text: str) -> None:
    _parse_or_typed_error(text)


@given(st.text(max_size=60))
@settings(max_examples=500)
def test_text_junk_raises_only_the_typed_error(text: str) -> None:
    _parse_or_typed_error(text)


@given(
    st.sampled_from(CANONICAL),
    st.integers(min_value=0),
    st.sampled_from(["", "(", ")", ",", "*", "[", "=", "...", "&"]),
)
@settings(max_examples=300)
def test_mutated_prototypes_raise_only_the_typed_error(canonical: str, where: int, junk: str) -> None:
    position = where % (len(canonical) + 1)
    _parse_or_typed_error(canonical[:position] + junk + canonical[position:])
