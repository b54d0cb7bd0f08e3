"""The formula language rendered a second time, into C: the simulator's compiled kernels.

The NumPy reference (codegen/formula.py `render_program`, evaluated by aclnngen.evaluate) is the
verdict's rendering; this one is the simulator's, so a simulated test compares two independent
renderings of one formula instead of the reference with itself. Each op gets one elementwise loop
per storage dtype (float16, bfloat16, float32, float64) and compute type (float, double), following
the precision model of docs/formula-language.md: inputs are converted to the compute type, every
operation rounds in it, outputs are rounded once (round-to-nearest-even) to their storage dtype.

The kernel ABI (runtime/sim/compiled.py calls it) is derived from the parameter order alone:
  tensors: every input and output tensor, in parameter order (element pointers);
  doubles: every scalar, optional scalar and double attribute, in parameter order (the caller
           passes each scalar already rounded as the reference rounds it: its aclScalar's dtype,
           then the compute dtype, so the C conversion to the compute type is exact);
  ints:    every bool and int64_t attribute, in parameter order;
  strings: every char* attribute, in parameter order.
What C cannot express here (reductions, per-channel weights, extern kernels, an attribute of
another C type, `**` other than by a literal) is reported as the op's fallback reason instead.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Mapping, Sequence

from .formula import (
    Binary,
    Call,
    Compare,
    Dims,
    FormulaProgram,
    Literal,
    Name,
    TensorRef,
    Unary,
    walk,
)

STORAGES = ("float16", "bfloat16", "float32", "float64")
COMPUTES = {"float32": "float", "float64": "double"}  # compute dtype -> C type
STORAGE_CTYPE = {"float16": "uint16_t", "bfloat16": "uint16_t", "float32": "float", "float64": "double"}
_STORAGE_SHORT = {"float16": "f16", "bfloat16": "bf16", "float32": "f32", "float64": "f64"}

# formula function -> C function of the compute type (float variant, double variant)
_LIBM = {
    # float32: the template's vectorisable forms (sim_kernels.c.j2, accuracy stated there)
    "exp": ("aclk_exp_f", "exp"),
    "log": ("logf", "log"),
    "log1p": ("log1pf", "log1p"),
    "expm1": ("expm1f", "expm1"),
    "sqrt": ("sqrtf", "sqrt"),
    "abs": ("fabsf", "fabs"),
    "tanh": ("aclk_tanh_f", "tanh"),
    "erf": ("aclk_erf_f", "erf"),
    # the template's helpers, with the reference's semantics (NaN propagation, no overflow)
    "sigmoid": ("aclk_sigmoid_f", "aclk_sigmoid_d"),
    "sign": ("aclk_sign_f", "aclk_sign_d"),
    "minimum": ("aclk_min_f", "aclk_min_d"),
    "maximum": ("aclk_max_f", "aclk_max_d"),
}
# the functions the C path renders; the rest of FUNCTIONS makes the op fall back
C_FUNCTIONS = frozenset(_LIBM) | {"where", "conj", "isnan", "round_to"}
_SCALAR_ROLES = ("scalar", "optional_scalar")
_INT_ATTRIBUTES = ("bool", "int64_t")


@dataclass(frozen=True)
class KernelParam:
    """What the C rendering needs of one parameter."""

    name: str  # C name
    py: str  # the formula's name for it
    role: str  # input, output, scalar, optional_scalar, attribute
    c_type: str  # the prototype's C type (attributes: bool, int64_t, double, char*, ...)
    is_list: bool = False  # a tensor or scalar list
    inplace: bool = False  # an input the op also writes


@dataclass(frozen=True)
class Variant:
    """One compiled loop: the op's formula for one storage dtype and compute dtype."""

    function: str  # the C function's name
    storage: str
    compute: str  # compute dtype name (float32, float64)
    ctype: str  # C type of the compute dtype
    storage_ctype: str
    tensors: tuple[tuple[str, str, int, bool], ...]  # (C local, storage pointer type, index, output)
    prologue: tuple[str, ...]  # declarations before the loop (scalars, attributes)
    loads: tuple[str, ...]  # per element: the inputs the formula reads
    lets: tuple[str, ...]  # per element: one declaration per let
    stores: tuple[str, ...]  # per element: one store per output
    unused: tuple[str, ...]  # ABI arguments this variant never reads


@dataclass(frozen=True)
class Kernel:
    """An op's compiled kernels, or why it has none (`reason`)."""

    symbol: str
    snake: str
    variants: tuple[Variant, ...] = ()
    reason: str | None = None


def kernel_for(symbol: str, snake: str, prog: FormulaProgram, params: Sequence[KernelParam]) -> Kernel:
    """The op's kernels over every storage and compute dtype, or a Kernel with the reason the C
    path cannot express its formula."""
    reason = unsupported(prog, params)
    if reason is not None:
        return Kernel(symbol, snake, reason=reason)
    variants = tuple(_variant(snake, prog, params, storage, compute) for storage in STORAGES for compute in COMPUTES)
    return Kernel(symbol, snake, variants)


def unsupported(prog: FormulaProgram, params: Sequence[KernelParam]) -> str | None:
    """Why the C path cannot express `prog` over `params`, or None when it can."""
    by_py = {p.py: p for p in params}
    for p in params:
        if p.is_list:
            return f"{p.name} is a list, which the compiled path does not take"
        if p.inplace:
            return f"{p.name} is written in place, which the compiled path does not write"
    for _, expr in prog.lets + prog.outputs:
        for node in walk(expr.tree):
            if isinstance(node, Call) and node.function not in C_FUNCTIONS:
                return f"the formula calls {node.function}(), which the compiled path does not render"
            if isinstance(node, Binary) and node.op == "**" and _power_literal(node.right) is None:
                return "the formula raises to a power that is not a number literal"
            if isinstance(node, Name) and node.kind == "attribute":
                c_type = by_py[node.id].c_type
                if c_type not in (*_INT_ATTRIBUTES, "double", "char*"):
                    return f"the formula reads attribute {node.id} of C type {c_type}"
            if isinstance(node, Literal) and node.type == "str" and not _c_string_ok(node.value):
                return "the formula compares with a string the compiled path does not print"
    return None


def function_name(snake: str, storage: str, compute: str) -> str:
    return f"aclk_{snake}__{_STORAGE_SHORT[storage]}__{_STORAGE_SHORT[compute]}"


def abi_order(params: Sequence[KernelParam]) -> dict[str, list[KernelParam]]:
    """The kernel's four argument arrays, each in parameter order (see the module docstring)."""
    return {
        "tensors": [p for p in params if p.role in ("input", "output")],
        "doubles": [p for p in params if p.role in _SCALAR_ROLES or (p.role == "attribute" and p.c_type == "double")],
        "ints": [p for p in params if p.role == "attribute" and p.c_type in _INT_ATTRIBUTES],
        "strings": [p for p in params if p.role == "attribute" and p.c_type == "char*"],
    }


# --- one variant ------------------------------------------------------------------------------------


def _variant(snake, prog: FormulaProgram, params, storage: str, compute: str) -> Variant:
    ctype = COMPUTES[compute]
    order = abi_order(params)
    read = {n.id for _, e in prog.lets + prog.outputs for n in walk(e.tree) if isinstance(n, Name)}
    r = _Renderer(ctype, storage, {p.py: p for p in params}, {name: e.tree for name, e in prog.lets})
    tensors, loads, prologue = [], [], []
    for index, p in enumerate(order["tensors"]):
        output = p.role == "output"
        if output or p.py in read:
            tensors.append((f"t_{p.py}", STORAGE_CTYPE[storage], index, output))
        if not output and p.py in read:
            loads.append(f"const {ctype} in_{p.py} = {_load(storage, ctype, f't_{p.py}[aclk_i]')};")
    used_arrays = set()
    for array, prefix, decl in (
        ("doubles", "sc", lambda i: f"({ctype})aclk_doubles[{i}]"),
        ("ints", "at", lambda i: f"aclk_ints[{i}]"),
        ("strings", "st", lambda i: f"aclk_strings[{i}]"),
    ):
        for index, p in enumerate(order[array]):
            if p.py in read:
                c_decl = {"doubles": f"const {ctype}", "ints": "const int64_t", "strings": "const char *const"}[array]
                prologue.append(f"{c_decl} {prefix}_{p.py} = {decl(index)};")
                used_arrays.add(array)
    lets = tuple(f"const {ctype} let_{name} = {r.num(expr.tree)};" for name, expr in prog.lets)
    outputs = {p.py: p for p in order["tensors"] if p.role == "output"}
    stores = tuple(
        f"t_{py}[aclk_i] = {_store(storage, ctype, r.num(expr.tree))};" for py, expr in prog.outputs if py in outputs
    )
    return Variant(
        function=function_name(snake, storage, compute),
        storage=storage,
        compute=compute,
        ctype=ctype,
        storage_ctype=STORAGE_CTYPE[storage],
        tensors=tuple(tensors),
        prologue=tuple(prologue + r.hoisted),
        loads=tuple(loads),
        lets=lets,
        stores=stores,
        unused=tuple(f"aclk_{a}" for a in ("doubles", "ints", "strings") if a not in used_arrays),
    )


def _load(storage: str, ctype: str, element: str) -> str:
    if storage == "float16":
        return f"({ctype})aclk_f16_to_float({element})"
    if storage == "bfloat16":
        return f"({ctype})aclk_bf16_to_float({element})"
    return f"({ctype}){element}"


def _store(storage: str, ctype: str, value: str) -> str:
    suffix = "d" if ctype == "double" else "f"
    if storage in ("float16", "bfloat16"):
        return f"aclk_to_{_STORAGE_SHORT[storage]}_{suffix}({value})"
    return f"({STORAGE_CTYPE[storage]})({value})"


class _Renderer:
    """C text of formula nodes over the compute type: `num` for a number, `cond` for a truth value."""

    def __init__(self, ctype: str, storage: str, params: Mapping[str, KernelParam], lets: Mapping = {}):
        self.ctype, self.storage, self.params, self.lets = ctype, storage, params, lets
        self.double = ctype == "double"
        self.hoisted: list[str] = []  # declarations before the loop (string comparisons)

    def lit(self, value: float | int) -> str:
        if isinstance(value, float):
            if math.isnan(value):
                return f"(({self.ctype})NAN)"
            if math.isinf(value):
                return f"(({self.ctype})(-INFINITY))" if value < 0 else f"(({self.ctype})INFINITY)"
            # a hex float is exact; the conversion to float rounds to nearest even, as NumPy's does
            return f"(({self.ctype}){value.hex()})"
        return f"(({self.ctype}){int(value)}.0)" if abs(value) < 2**53 else self.lit(float(value))

    def num(self, node) -> str:
        if isinstance(node, Literal):
            if node.type == "bool":
                return self.lit(1 if node.value else 0)
            return self.lit(node.value)
        if isinstance(node, Name):
            return self._name(node, want="num")
        if isinstance(node, Unary):
            return f"(-{self.num(node.operand)})" if node.op == "-" else self.num(node.operand)
        if isinstance(node, Binary):
            if node.op in "&|":
                return f"(({self.ctype})({self.cond(node)}))"
            if node.op == "**":
                return self._power(node)
            return f"({self.num(node.left)} {node.op} {self.num(node.right)})"
        if isinstance(node, Compare):
            return f"(({self.ctype})({self.cond(node)}))"
        if isinstance(node, Call):
            return self._call(node)
        raise TypeError(f"the compiled path cannot render {type(node).__name__} as a number")

    def cond(self, node) -> str:
        if isinstance(node, Literal):
            return "1" if node.value else "0"
        if isinstance(node, Name):
            return self._name(node, want="bool")
        if isinstance(node, Unary) and node.op == "~":
            return f"(!{self.cond(node.operand)})"
        if isinstance(node, Binary) and node.op in "&|":
            return f"({self.cond(node.left)} {node.op} {self.cond(node.right)})"
        if isinstance(node, Compare):
            if self._is_text(node.left) or self._is_text(node.right):
                if node.op not in ("==", "!="):
                    raise TypeError("strings compare only with == and !=")
                # the same for every element: compared once, before the loop
                local = f"same_{len(self.hoisted)}"
                self.hoisted.append(
                    f"const int {local} = strcmp({self._text(node.left)}, {self._text(node.right)}) == 0;"
                )
                return local if node.op == "==" else f"(!{local})"
            return f"({self.num(node.left)} {node.op} {self.num(node.right)})"
        if isinstance(node, Call) and node.function == "isnan":
            return f"(isnan({self.num(node.args[0])}) != 0)"
        return f"({self.num(node)} != 0)"  # a number as a truth value, as NumPy's where takes it

    def _reads_tensors(self, node) -> bool:
        for n in walk(node):
            if isinstance(n, Name) and (
                n.kind == "input" or (n.kind == "let" and self._reads_tensors(self.lets[n.id]))
            ):
                return True
        return False

    def _is_text(self, node) -> bool:
        if isinstance(node, Literal):
            return node.type == "str"
        return isinstance(node, Name) and node.kind == "attribute" and self.params[node.id].c_type == "char*"

    def _text(self, node) -> str:
        if isinstance(node, Literal):
            return '"' + node.value + '"'
        return f"st_{node.id}"

    def _name(self, node: Name, want: str) -> str:
        if node.kind == "constant":
            value = {"pi": math.pi, "inf": math.inf, "nan": math.nan}[node.id]
            return self.lit(value) if want == "num" else f"({self.lit(value)} != 0)"
        if node.kind == "let":
            text = f"let_{node.id}"
        elif node.kind == "input":
            text = f"in_{node.id}"
        elif node.kind in _SCALAR_ROLES:
            text = f"sc_{node.id}"
        else:  # an attribute
            c_type = self.params[node.id].c_type
            if c_type == "double":
                text = f"sc_{node.id}"
            elif c_type == "char*":
                raise TypeError(f"attribute {node.id} is a string: it can only be compared")
            else:
                return f"(at_{node.id} != 0)" if want == "bool" else f"(({self.ctype})at_{node.id})"
        return text if want == "num" else f"({text} != 0)"

    def _power(self, node: Binary) -> str:
        base, exponent = self.num(node.left), _power_literal(node.right)
        # NumPy's `array ** scalar` takes these exponents through square, identity and sqrt
        if exponent == 2:
            return f"({base} * {base})"
        if exponent == 1:
            return base
        if exponent == 0.5:
            return f"{'sqrt' if self.double else 'sqrtf'}({base})"
        return f"{'pow' if self.double else 'powf'}({base}, {self.lit(float(exponent))})"

    def _call(self, node: Call) -> str:
        f, args = node.function, node.args
        if f == "where":
            # both sides computed, then selected: a loop without branches, which GCC vectorises (a
            # ternary around a product is control flow it will not if-convert)
            suffix = "d" if self.double else "f"
            condition = self.cond(args[0])
            if not self._reads_tensors(args[0]):
                if any(isinstance(n, Name) and n.kind == "let" for n in walk(args[0])):
                    # computed in the loop from scalars alone: a ternary, the branch not taken is free
                    return f"({condition} ? {self.num(args[1])} : {self.num(args[2])})"
                # the same for every element (an attribute's): decided once before the loop, as a
                # number of the compute type, which GCC vectorises a select on (an integer it does not)
                local = f"pick_{len(self.hoisted)}"
                self.hoisted.append(f"const {self.ctype} {local} = ({condition}) ? 1 : 0;")
                condition = f"({local} != 0)"
            return f"aclk_select_{suffix}({condition}, {self.num(args[1])}, {self.num(args[2])})"
        if f == "conj":
            return self.num(args[0])  # real data: the value itself
        if f == "isnan":
            return f"(({self.ctype})(isnan({self.num(args[0])}) != 0))"
        if f == "round_to":
            if not isinstance(args[1], TensorRef):
                raise TypeError("round_to names a tensor")
            # every tensor of a compiled call holds the kernel's storage dtype
            suffix = "d" if self.double else "f"
            return f"aclk_round_{_STORAGE_SHORT[self.storage]}_{suffix}({self.num(args[0])})"
        name = _LIBM[f][1 if self.double else 0]
        return f"{name}({', '.join(self.num(a) for a in args if not isinstance(a, Dims))})"


def _power_literal(node) -> float | int | None:
    if isinstance(node, Literal) and node.type in ("int", "float"):
        return node.value
    if isinstance(node, Unary) and node.op == "-" and isinstance(node.operand, Literal):
        inner = _power_literal(node.operand)
        return None if inner is None else -inner
    return None


def _c_string_ok(text: str) -> bool:
    """A string literal C prints as is: printable ASCII without quotes, backslashes or `?`
    (no trigraphs)."""
    return all(32 <= ord(c) < 127 and c not in '"\\?' for c in text)
