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
  shape:   appended to `ints`: the rank, the dims of the op's full-size tensors, then each tensor's
           element count (in `tensors` order).
Three loop shapes (`Variant.geometry`); in each, [start, start + count) is a range of the
full-size tensors' elements and a kernel computes the units of work whose first element lies in it,
so the caller splits every kernel the same way:
  elementwise: one unit per element;
  channels:    a per-channel operand (per_channel(w, x): w's element per channel of dim 1) and a
               per-channel sum (an output that is sum_per_channel(e, w)): one unit per channel
               (one for all when w has one element), which sums over every other dim;
  lines:       sums along one dim kept as size 1 (sum_keepdim(e, dim)): one unit per line along
               that dim, read twice (the sums, then the outputs); along a dim that is not the
               innermost a block of consecutive lines at a time, rows in memory order
               (`_lines_body`).
Sums accumulate in the compute type, in memory order (a line's: along the line). What C cannot
express here (sums over several dims, softmax(), extern kernels, an attribute of another C type,
`**` other than by a literal) is reported as the op's fallback reason instead.
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
    children,
    walk,
)

STORAGES = ("float16", "bfloat16", "float32", "float64")
COMPUTES = {"float32": "float", "float64": "double"}  # compute dtype -> C type
STORAGE_CTYPE = {"float16": "uint16_t", "bfloat16": "uint16_t", "float32": "float", "float64": "double"}
_STORAGE_SHORT = {"float16": "f16", "bfloat16": "bf16", "float32": "f32", "float64": "f64"}
_ITEMSIZE = {"float16": 2, "bfloat16": 2, "float32": 4, "float64": 8}

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
# the functions that give a kernel its loop shape (module docstring)
CHANNEL_FUNCTIONS = ("per_channel", "sum_per_channel")
LINE_FUNCTIONS = ("sum_keepdim",)
_PER_CHANNEL, _SUM_PER_CHANNEL = CHANNEL_FUNCTIONS  # the formula functions (not the rule kind)
ELEMENTWISE, CHANNELS, LINES = "elementwise", "channels", "lines"
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
    channel: bool = False  # a per_channel rule's weight or gradient: one element per channel, or one


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
    geometry: str = ELEMENTWISE
    body: tuple[str, ...] = ()  # channels and lines: the function's statements after the prologue


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
    outputs = {name for name, _ in prog.outputs}
    for owner, expr in prog.lets + prog.outputs:
        for node in walk(expr.tree):
            if isinstance(node, Call) and node.function not in (*C_FUNCTIONS, *CHANNEL_FUNCTIONS, *LINE_FUNCTIONS):
                return f"the formula calls {node.function}(), which the compiled path does not render"
            if isinstance(node, Binary) and node.op == "**" and _power_literal(node.right) is None:
                return "the formula raises to a power that is not a number literal"
            if isinstance(node, Name) and node.kind == "attribute":
                c_type = by_py[node.id].c_type
                if c_type not in (*_INT_ATTRIBUTES, "double", "char*"):
                    return f"the formula reads attribute {node.id} of C type {c_type}"
            if isinstance(node, Literal) and node.type == "str" and not _c_string_ok(node.value):
                return "the formula compares with a string the compiled path does not print"
            if isinstance(node, Call) and node.function in (*CHANNEL_FUNCTIONS, *LINE_FUNCTIONS):
                reason = _shaped_call_problem(node, node is expr.tree and owner in outputs, by_py, prog)
                if reason is not None:
                    return reason
    return _geometry_problem(prog, by_py)


def _shaped_call_problem(node: Call, whole_output: bool, by_py, prog: FormulaProgram) -> str | None:
    """Why one per_channel, sum_per_channel or sum_keepdim call is beyond the C path, or None."""
    f = node.function
    does_not = "which the compiled path does not render"
    if f == "sum_per_channel" and not whole_output:
        return (
            f"the formula calls sum_per_channel() inside an expression, {does_not} (only as an output's whole formula)"
        )
    if f in CHANNEL_FUNCTIONS:
        w = node.args[0 if f == _PER_CHANNEL else 1]
        if not (isinstance(w, Name) and w.kind == "input" and by_py[w.id].channel):
            return f"the formula calls {f}() on what no per_channel rule names its weight, {does_not}"
    if f == "sum_keepdim":
        dims = node.args[1]
        if not (isinstance(dims, Dims) and len(dims.values) == 1) and not (
            isinstance(dims, Name) and by_py[dims.id].c_type in _INT_ATTRIBUTES
        ):
            return f"the formula calls sum_keepdim() over several dims, {does_not} (one dim only)"
    if f != _PER_CHANNEL and _reads_sum(node.args[0], {n: e.tree for n, e in prog.lets}):
        return f"the formula calls {f}() of a sum, {does_not}"
    return None


def _geometry_problem(prog: FormulaProgram, by_py) -> str | None:
    """Why the formula's loop shapes do not fit one kernel (module docstring), or None."""
    calls = [n for _, e in prog.lets + prog.outputs for n in walk(e.tree) if isinstance(n, Call)]
    dims = {n.args[1] for n in calls if n.function in LINE_FUNCTIONS}
    channel = any(n.function in CHANNEL_FUNCTIONS for n in calls)
    if channel and dims:
        return "the formula has per-channel operands and a sum along a dim, which the compiled path does not render together"
    if len(dims) > 1:
        return "the formula sums along different dims, which the compiled path does not render"
    weights = {n.args[1].id for n in calls if n.function == "sum_per_channel"}
    if len(weights) > 1:
        return "the formula sums per channel of different weights, which the compiled path does not render"
    lets = dict(prog.lets)
    for owner, expr in prog.lets + prog.outputs:
        for node in _direct(expr.tree):
            if isinstance(node, Name) and node.kind == "input" and by_py[node.id].channel:
                return f"the formula reads the per-channel {node.id} element by element, which the compiled path does not render"
        if owner not in lets and by_py[owner].channel != _is_call(expr.tree, "sum_per_channel"):
            return f"output {owner} is per-channel without being a sum_per_channel(), which the compiled path does not render"
    return None


def _is_call(node, function: str) -> bool:
    return isinstance(node, Call) and node.function == function


def _direct(node):
    """The nodes computed per element where `node` is: not inside a sum_keepdim (a line's value)
    nor a per_channel (a channel's value); a sum_per_channel's summand is per element."""
    yield node
    if isinstance(node, Call) and node.function in (*LINE_FUNCTIONS, _PER_CHANNEL):
        return
    operands = node.args[:1] if _is_call(node, "sum_per_channel") else children(node)
    for child in operands:
        yield from _direct(child)


def _reads_sum(node, lets: Mapping) -> bool:
    """Whether `node` needs a sum along a dim or per channel (through its lets too)."""
    for n in walk(node):
        if isinstance(n, Call) and n.function in ("sum_keepdim", "sum_per_channel"):
            return True
        if isinstance(n, Name) and n.kind == "let" and _reads_sum(lets[n.id], lets):
            return True
    return False


def _needs(trees, lets: Mapping) -> tuple[set[str], set[str]]:
    """(the lets, the inputs) computed per element to evaluate `trees`, through their lets."""
    want_lets, inputs, todo = set(), set(), list(trees)
    while todo:
        for n in _direct(todo.pop()):
            if isinstance(n, Name) and n.kind == "input":
                inputs.add(n.id)
            elif isinstance(n, Name) and n.kind == "let" and n.id not in want_lets:
                want_lets.add(n.id)
                todo.append(lets[n.id])
    return want_lets, inputs


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
    let_trees = {name: e.tree for name, e in prog.lets}
    r = _Renderer(ctype, storage, {p.py: p for p in params}, let_trees)
    calls = {n.function for _, e in prog.lets + prog.outputs for n in walk(e.tree) if isinstance(n, Call)}
    geometry = CHANNELS if calls & set(CHANNEL_FUNCTIONS) else LINES if calls & set(LINE_FUNCTIONS) else ELEMENTWISE
    prologue = []
    used_arrays = {"ints"} if geometry != ELEMENTWISE else set()
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
    outputs = {p.py: p for p in order["tensors"] if p.role == "output"}
    written = [(py, expr.tree) for py, expr in prog.outputs if py in outputs]
    elementwise = [(py, tree) for py, tree in written if not _is_call(tree, "sum_per_channel")]
    # per element: what the elementwise outputs and the per-channel sums' summands need
    summands = [tree.args[0] for _, tree in written if _is_call(tree, "sum_per_channel")]
    values = [(py, r.num(tree)) for py, tree in elementwise]
    stores = tuple(f"t_{py}[aclk_i] = {_store(storage, ctype, value)};" for py, value in values)
    sums = [r.num(tree) for tree in summands]
    lets, loads = _per_element(r, prog, [tree for _, tree in elementwise] + summands, order, ctype, storage)
    # the tensors the loops read (a sum_per_channel's weight and a per_channel's x give shapes only)
    _, reads = _needs([tree for _, tree in elementwise] + summands + [arg for _, arg in r.sums], r.lets)
    body: tuple[str, ...] = ()
    if geometry == CHANNELS:
        body = _channels_body(r, order, written, sums, loads, lets, stores, ctype, storage)
    elif geometry == LINES:
        body = _lines_body(r, prog, order, values, loads, lets, stores, ctype, storage, reads)
    elif storage == "float16" and ctype == "float":
        body = _f16_rows_body(order, values, lets, reads)
    tensors = [
        (f"t_{p.py}", STORAGE_CTYPE[storage], index, p.role == "output")
        for index, p in enumerate(order["tensors"])
        if p.role == "output" or p.py in reads | r.channels
    ]
    return Variant(
        function=function_name(snake, storage, compute),
        storage=storage,
        compute=compute,
        ctype=ctype,
        storage_ctype=STORAGE_CTYPE[storage],
        tensors=tuple(tensors),
        prologue=tuple(prologue + r.hoisted),
        loads=loads,
        lets=lets,
        stores=stores,
        unused=tuple(f"aclk_{a}" for a in ("doubles", "ints", "strings") if a not in used_arrays),
        geometry=geometry,
        body=body,
    )


def _per_element(r: "_Renderer", prog: FormulaProgram, trees, order, ctype: str, storage: str):
    """(the lets, the input loads) one element of `trees` needs, in formula and parameter order."""
    want_lets, inputs = _needs(trees, r.lets)
    lets = tuple(f"const {ctype} let_{name} = {r.num(expr.tree)};" for name, expr in prog.lets if name in want_lets)
    loads = tuple(
        f"const {ctype} in_{p.py} = {_load(storage, ctype, f't_{p.py}[aclk_i]')};"
        for p in order["tensors"]
        if p.role != "output" and p.py in inputs
    )
    return lets, loads


def _shape_prologue(order, axis: str) -> list[str]:
    """The shape the caller appends to `ints` (module docstring) and the loop's units: outer,
    mid (the dim `axis`) and inner element counts."""
    first = len(order["ints"])
    return [
        f"const int64_t aclk_ndim = aclk_ints[{first}];",
        f"const int64_t *const aclk_shape = aclk_ints + {first + 1};",
        "const int64_t *const aclk_numel = aclk_shape + aclk_ndim;",
        "(void)aclk_numel;",
        "int64_t aclk_outer, aclk_mid, aclk_inner;",
        f"aclk_geometry(aclk_ndim, aclk_shape, {axis}, &aclk_outer, &aclk_mid, &aclk_inner);",
    ]


def _tensor_index(order, py: str) -> int:
    return next(i for i, p in enumerate(order["tensors"]) if p.py == py)


def _channels_body(r, order, written, sums, loads, lets, stores, ctype, storage) -> tuple[str, ...]:
    """One unit per channel (or one for all when the summed weight has one element): each channel's
    per_channel values, then every element of the channel, then its sums stored."""
    weights = [tree.args[1].id for _, tree in written if _is_call(tree, "sum_per_channel")]
    unit_of = f"aclk_numel[{_tensor_index(order, weights[0])}] == 1 ? 1 : aclk_mid" if weights else "aclk_mid"
    lines = _shape_prologue(order, "1")
    lines += [
        f"const int64_t aclk_units = {unit_of};",
        "int64_t aclk_u0, aclk_u1;",
        "aclk_unit_range(aclk_start, aclk_count, aclk_outer * aclk_mid * aclk_inner, aclk_units, &aclk_u0, &aclk_u1);",
        "for (int64_t aclk_u = aclk_u0; aclk_u < aclk_u1; ++aclk_u) {",
        "    const int64_t aclk_c0 = aclk_units == aclk_mid ? aclk_u : 0;",
        "    const int64_t aclk_c1 = aclk_units == aclk_mid ? aclk_u + 1 : aclk_mid;",
    ]
    lines += [f"    {ctype} acc_{k} = 0;" for k in range(len(sums))]
    lines += ["    for (int64_t aclk_c = aclk_c0; aclk_c < aclk_c1; ++aclk_c) {"]
    for w in sorted(r.channels):
        index = f"aclk_numel[{_tensor_index(order, w)}] == 1 ? 0 : aclk_c"
        lines.append(f"        const {ctype} pc_{w} = {_load(storage, ctype, f't_{w}[{index}]')};")
    lines += [
        "        for (int64_t aclk_o = 0; aclk_o < aclk_outer; ++aclk_o) {",
        "            const int64_t aclk_row = (aclk_o * aclk_mid + aclk_c) * aclk_inner;",
        "            for (int64_t aclk_e = 0; aclk_e < aclk_inner; ++aclk_e) {",
        "                const int64_t aclk_i = aclk_row + aclk_e;",
    ]
    lines += [f"                {line}" for line in (*loads, *lets, *stores)]
    lines += [f"                acc_{k} += {text};" for k, text in enumerate(sums)]
    lines += ["            }", "        }", "    }"]
    summed = [py for py, tree in written if _is_call(tree, "sum_per_channel")]
    lines += [f"    t_{py}[aclk_u] = {_store(storage, ctype, f'acc_{k}')};" for k, py in enumerate(summed)]
    return tuple(lines + ["}"])


def _lines_body(r, prog, order, values, loads, lets, stores, ctype, storage, reads) -> tuple[str, ...]:
    """One unit per line along the summed dim, each line summed in its own order (m = 0, 1, ...)
    whatever the loop: along the innermost dim (inner = 1) line by line, a line's elements
    consecutive; along another dim a block of consecutive lines at a time (consecutive inner
    positions of one outer position), its rows read in memory order for the sums (a vector of
    them), then again for the outputs, so the loops vectorise over the block and read memory in
    order instead of one element per row."""
    dims = r.sums[0][0] if r.sums else None
    dim = f"at_{dims.id}" if isinstance(dims, Name) else f"(int64_t){dims.values[0]}"
    # the sums' summands are rendered now: their own lets and loads make the first pass
    summands = [r.num(arg) for _, arg in r.sums]
    first_lets, first_loads = _per_element(r, prog, [arg for _, arg in r.sums], order, ctype, storage)
    # float16 rounded from float: GCC 12 leaves the rounding scalar in a loop nested in another, so
    # the outputs go to a buffer, rounded by a loop of its own (aclk_f16_store_row), which it
    # vectorises; the same rounding, so the same bits
    buffered = storage == "float16" and ctype == "float"
    # what a block's rows hold in every tensor the passes read or write, per inner position
    row_bytes = _ITEMSIZE[storage] * (len(reads) + len(values))
    lines = [
        "int64_t aclk_axis;",
        f"if (!aclk_dim_axis({dim}, aclk_ints[{len(order['ints'])}], &aclk_axis)) {{",
        "    /* a dim out of range (the checks were off): no value, as the reference gives none */",
        "    for (int64_t aclk_i = aclk_start; aclk_i < aclk_start + aclk_count; ++aclk_i) {",
    ]
    lines += [f"        t_{py}[aclk_i] = {_store(storage, ctype, r.lit(math.nan))};" for py, _ in values]
    lines += ["    }", "    return;", "}"]
    lines += _shape_prologue(order, "aclk_axis")
    lines += [
        "int64_t aclk_u0, aclk_u1;",
        "aclk_unit_range(aclk_start, aclk_count, aclk_outer * aclk_mid * aclk_inner, aclk_outer * aclk_inner, &aclk_u0, &aclk_u1);",
        "if (aclk_inner == 1) {",
        "    const int64_t aclk_j = 0;",
        "    for (int64_t aclk_u = aclk_u0; aclk_u < aclk_u1; ++aclk_u) {",
        "        const int64_t aclk_base = aclk_u * aclk_mid;",
    ]
    lines += [f"        {ctype} red_{k}[1] = {{0}};" for k in range(len(summands))]
    lines += [
        "        for (int64_t aclk_m = 0; aclk_m < aclk_mid; ++aclk_m) {",
        "            const int64_t aclk_i = aclk_base + aclk_m;",
    ]
    lines += [f"            {line}" for line in (*first_loads, *first_lets)]
    lines += [f"            red_{k}[aclk_j] += {text};" for k, text in enumerate(summands)]
    lines += ["        }"]
    if buffered:  # the line's outputs a block of elements at a time, each block rounded by its own loop
        lines += [f"        float aclk_buf_{py}[ACLK_LINE_BLOCK];" for py, _ in values]
        lines += [
            "        for (int64_t aclk_m0 = 0; aclk_m0 < aclk_mid; aclk_m0 += ACLK_LINE_BLOCK) {",
            "            const int64_t aclk_k = aclk_min_i64(ACLK_LINE_BLOCK, aclk_mid - aclk_m0);",
            "            for (int64_t aclk_m = aclk_m0; aclk_m < aclk_m0 + aclk_k; ++aclk_m) {",
            "                const int64_t aclk_i = aclk_base + aclk_m;",
        ]
        lines += [f"                {line}" for line in (*loads, *lets)]
        lines += [f"                aclk_buf_{py}[aclk_m - aclk_m0] = {value};" for py, value in values]
        lines += ["            }"]
        lines += [
            f"            aclk_f16_store_row(aclk_buf_{py}, t_{py} + aclk_base + aclk_m0, aclk_k);" for py, _ in values
        ]
        lines += ["        }"]
    else:
        lines += [
            "        for (int64_t aclk_m = 0; aclk_m < aclk_mid; ++aclk_m) {",
            "            const int64_t aclk_i = aclk_base + aclk_m;",
        ]
        lines += [f"            {line}" for line in (*loads, *lets, *stores)]
        lines += ["        }"]
    lines += ["    }", "    return;", "}"]
    lines += [
        f"const int64_t aclk_block = aclk_line_block(aclk_mid, {row_bytes});",
        "for (int64_t aclk_u = aclk_u0; aclk_u < aclk_u1;) {",
        "    /* the block: lines [aclk_u, aclk_u + aclk_n), inner positions of one outer position */",
        "    const int64_t aclk_e0 = aclk_u % aclk_inner;",
        "    const int64_t aclk_n = aclk_min_i64(aclk_block, aclk_min_i64(aclk_inner - aclk_e0, aclk_u1 - aclk_u));",
        "    const int64_t aclk_base = (aclk_u / aclk_inner) * aclk_mid * aclk_inner + aclk_e0;",
    ]
    lines += [f"    {ctype} red_{k}[ACLK_LINE_BLOCK];" for k in range(len(summands))]
    lines += ["    for (int64_t aclk_j = 0; aclk_j < aclk_n; ++aclk_j) {"]
    lines += [f"        red_{k}[aclk_j] = 0;" for k in range(len(summands))]
    lines += [
        "    }",
        "    for (int64_t aclk_m = 0; aclk_m < aclk_mid; ++aclk_m) {",
        "        const int64_t aclk_row = aclk_base + aclk_m * aclk_inner;",
        "        for (int64_t aclk_j = 0; aclk_j < aclk_n; ++aclk_j) {",
        "            const int64_t aclk_i = aclk_row + aclk_j;",
    ]
    lines += [f"            {line}" for line in (*first_loads, *first_lets)]
    lines += [f"            red_{k}[aclk_j] += {text};" for k, text in enumerate(summands)]
    lines += [
        "        }",
        "    }",
    ]
    if buffered:
        lines += [f"    float aclk_buf_{py}[ACLK_LINE_BLOCK];" for py, _ in values]
        stores = tuple(f"aclk_buf_{py}[aclk_j] = {value};" for py, value in values)
    lines += [
        "    for (int64_t aclk_m = 0; aclk_m < aclk_mid; ++aclk_m) {",
        "        const int64_t aclk_row = aclk_base + aclk_m * aclk_inner;",
        "        for (int64_t aclk_j = 0; aclk_j < aclk_n; ++aclk_j) {",
        "            const int64_t aclk_i = aclk_row + aclk_j;",
    ]
    lines += [f"            {line}" for line in (*loads, *lets, *stores)]
    lines += ["        }"]
    if buffered:
        lines += [f"        aclk_f16_store_row(aclk_buf_{py}, t_{py} + aclk_row, aclk_n);" for py, _ in values]
    lines += ["    }", "    aclk_u += aclk_n;", "}"]
    return tuple(lines)


def _f16_rows_body(order, values, lets, reads) -> tuple[str, ...]:
    """An elementwise float16 kernel computing in float, a row of up to ACLK_ROW elements at a
    time: its inputs widened into float buffers (aclk_f16_load_row: F16C where the CPU has it),
    the formula on floats into an output buffer, rounded back (aclk_f16_store_row), so the loop
    between is a float loop, which vectorises. The same conversions, so the same bits."""
    inputs = [p.py for p in order["tensors"] if p.role != "output" and p.py in reads]
    lines = [
        "for (int64_t aclk_b = aclk_start; aclk_b < aclk_start + aclk_count; aclk_b += ACLK_ROW) {",
        "    const int64_t aclk_k = aclk_min_i64(ACLK_ROW, aclk_start + aclk_count - aclk_b);",
    ]
    for py in inputs:
        lines += [
            f"    float aclk_row_{py}[ACLK_ROW];",
            f"    aclk_f16_load_row(t_{py} + aclk_b, aclk_row_{py}, aclk_k);",
        ]
    lines += [f"    float aclk_buf_{py}[ACLK_ROW];" for py, _ in values]
    lines += ["    for (int64_t aclk_j = 0; aclk_j < aclk_k; ++aclk_j) {"]
    lines += [f"        const float in_{py} = aclk_row_{py}[aclk_j];" for py in inputs]
    lines += [f"        {line}" for line in lets]
    lines += [f"        aclk_buf_{py}[aclk_j] = {value};" for py, value in values]
    lines += ["    }"]
    lines += [f"    aclk_f16_store_row(aclk_buf_{py}, t_{py} + aclk_b, aclk_k);" for py, _ in values]
    return tuple(lines + ["}"])


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
        self.channels: set[str] = set()  # weights read through per_channel (one value per channel)
        self.sums: list[tuple] = []  # (dims, summand) of each sum_keepdim: red_<index> in a line

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
        if f == _PER_CHANNEL:
            self.channels.add(args[0].id)
            return f"pc_{args[0].id}"
        if f == "sum_keepdim":
            key = (args[1], args[0])
            if key not in self.sums:
                self.sums.append(key)
            return f"red_{self.sums.index(key)}[aclk_j]"  # a line's sum: its place in the block
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
