"""The formula language: elementwise expressions over an op's Python parameter names.

A spec writes each output as an expression string such as
`where((self > min) & (self < max), grad_output, 0)`. It is parsed with `ast` against a whitelist
into a small immutable tree, checked (names, arity, booleans versus numbers) and rendered into
Python that calls the numerics object `m` (evaluate/numerics.py). Spec text is never evaluated and
never copied into rendered code: names are validated identifiers, numbers and strings are
re-emitted from their parsed values. The grammar is documented in docs/formula-language.md.
"""

from __future__ import annotations

import ast
import difflib
import inspect
import keyword
import math
import re
import warnings
from dataclasses import dataclass
from typing import Mapping, Sequence, Union

from aclnngen.core import externs

from .errors import FieldProblem, non_ascii

KINDS = ("input", "output", "scalar", "optional_scalar", "attribute")
CONSTANTS = ("pi", "inf", "nan")
NUMERICS_NAME = "m"  # the numerics object in rendered code, so no parameter or let may be called this
MAX_SOURCE_LENGTH = 4000
MAX_DEPTH = 60
MAX_CONSTANT_BITS = 1024  # folding an integer constant beyond this gives inf, as a double would (docs/security.md)
MAX_CONSTANT_BITS = 1024  # a constant the formula computes must fit a double (docs/security.md)
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


# --- the function table: the one source of truth for parser, renderer, classify and docs ----------


@dataclass(frozen=True)
class Function:
    """A callable of the language. `args` are (name in docs, type); a type starting with `*`
    takes any number of further arguments. Types: num, bool, any, tensor (the name of a tensor
    parameter), dims (a tuple of int literals or an attribute), kernel (an extern kernel's name)."""

    name: str
    args: tuple[tuple[str, str], ...]
    result: str  # "num" or "bool"
    category: str  # "exact", "transcendental", "reduction" or "extern" (drives classify)
    summary: str

    @property
    def signature(self) -> str:
        return f"{self.name}({', '.join(a for a, _ in self.args)})"

    @property
    def variadic(self) -> bool:
        return bool(self.args) and self.args[-1][1].startswith("*")


def _fn(name, args, summary, category="exact", result="num") -> Function:
    return Function(name, tuple(tuple(a.split(":")) for a in args.split()), result, category, summary)


FUNCTIONS: dict[str, Function] = {
    f.name: f
    for f in (
        _fn("where", "cond:bool a:num b:num", "elementwise select: `a` where `cond` holds, else `b`"),
        _fn("exp", "x:num", "e to the power x", "transcendental"),
        _fn("log", "x:num", "natural logarithm", "transcendental"),
        _fn("log1p", "x:num", "log(1 + x), accurate for small x", "transcendental"),
        _fn("expm1", "x:num", "exp(x) - 1, accurate for small x", "transcendental"),
        _fn("sqrt", "x:num", "square root (correctly rounded)"),
        _fn("abs", "x:num", "absolute value"),
        _fn("sign", "x:num", "-1, 0 or 1 (NaN stays NaN)"),
        _fn("erf", "x:num", "error function (scipy.special.erf)", "transcendental"),
        _fn("tanh", "x:num", "hyperbolic tangent", "transcendental"),
        _fn("sigmoid", "x:num", "1 / (1 + exp(-x)), computed without overflow", "transcendental"),
        _fn("conj", "x:num", "complex conjugate; a real x is returned unchanged"),
        _fn("minimum", "a:num b:num", "elementwise minimum (NaN propagates)"),
        _fn("maximum", "a:num b:num", "elementwise maximum (NaN propagates)"),
        _fn("isnan", "x:num", "true where x is NaN", result="bool"),
        _fn(
            "round_to",
            "x:num p:tensor",
            "round x to the storage dtype of tensor parameter p, then back to the compute dtype (both modes)",
        ),
        _fn("per_channel", "w:num x:num", "1-D weight w broadcast along dim 1 of x; numel 1 acts as a scalar"),
        _fn(
            "sum_per_channel",
            "e:num w:num",
            "sum e over every dim except dim 1, shape (C,) (numel-1 w: sum of everything, shaped like w)",
            "reduction",
        ),
        _fn("sum", "e:num dims:dims", "sum e over dims (no kept dims)", "reduction"),
        _fn(
            "sum_keepdim",
            "e:num dims:dims",
            "sum e over dims, keeping each as size 1 so the result broadcasts against e",
            "reduction",
        ),
        _fn(
            "softmax",
            "x:num dims:dims",
            "exp(x) / sum_keepdim(exp(x), dims), computed without overflow (a forward function)",
            "reduction",
        ),
        _fn(
            "extern",
            "kernel:kernel args:*any",
            "call the hand-written kernel registered in aclnngen.core.externs EXTERN_KERNELS",
            "extern",
        ),
    )
}


# --- the parsed tree (frozen, hashable) ------------------------------------------------------------


@dataclass(frozen=True)
class Literal:
    value: Union[bool, int, float, str]
    type: str  # "bool", "int", "float" or "str": keeps True, 1 and 1.0 apart under ==


@dataclass(frozen=True)
class Name:
    id: str
    kind: str  # a parameter kind, "let" or "constant"


@dataclass(frozen=True)
class TensorRef:
    """A tensor parameter named for its storage dtype (round_to's second argument)."""

    id: str


@dataclass(frozen=True)
class Dims:
    values: tuple[int, ...]


@dataclass(frozen=True)
class Unary:
    op: str  # "-", "+" or "~"
    operand: "Node"


@dataclass(frozen=True)
class Binary:
    op: str  # "+", "-", "*", "/", "**", "&" or "|"
    left: "Node"
    right: "Node"


@dataclass(frozen=True)
class Compare:
    op: str
    left: "Node"
    right: "Node"


@dataclass(frozen=True)
class Call:
    function: str
    args: tuple["Node", ...]


Node = Union[Literal, Name, TensorRef, Dims, Unary, Binary, Compare, Call]


@dataclass(frozen=True)
class Expression:
    source: str
    tree: Node
    type: str  # "num", "bool" or "any" (an attribute's type is only known at run time)

    @property
    def names(self) -> frozenset[str]:
        """Parameters and lets the expression reads (not constants, not round_to's dtype tensor)."""
        return frozenset(n.id for n in _walk(self.tree) if isinstance(n, Name) and n.kind != "constant")


@dataclass(frozen=True)
class FormulaProgram:
    lets: tuple[tuple[str, Expression], ...]
    outputs: tuple[tuple[str, Expression], ...]


# --- bounded constant folding ---------------------------------------------------------------------


# --- parsing ---------------------------------------------------------------------------------------

_BINARY = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.Pow: "**", ast.BitAnd: "&", ast.BitOr: "|"}
_OTHER_OPERATORS = {
    ast.BitXor: "^",
    ast.FloorDiv: "//",
    ast.Mod: "%",
    ast.LShift: "<<",
    ast.RShift: ">>",
    ast.MatMult: "@",
    ast.Is: "is",
    ast.IsNot: "is not",
    ast.In: "in",
    ast.NotIn: "not in",
}
_UNARY = {ast.USub: "-", ast.UAdd: "+", ast.Invert: "~"}
_COMPARE = {ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=", ast.Eq: "==", ast.NotEq: "!="}
_FORBIDDEN = {
    ast.Attribute: "attribute access",
    ast.Subscript: "subscript",
    ast.Slice: "slice",
    ast.JoinedStr: "f-string",
    ast.FormattedValue: "f-string",
    ast.ListComp: "list comprehension",
    ast.SetComp: "set comprehension",
    ast.DictComp: "dict comprehension",
    ast.GeneratorExp: "generator expression",
    ast.List: "list",
    ast.Set: "set",
    ast.Dict: "dict",
    ast.Tuple: "tuple (tuples are only allowed as the dims of sum, sum_keepdim and softmax)",
    ast.NamedExpr: "assignment expression (:=)",
    ast.Lambda: "lambda",
    ast.IfExp: "conditional expression (write where(cond, a, b))",
    ast.Starred: "starred argument",
    ast.Await: "await",
    ast.Yield: "yield",
    ast.YieldFrom: "yield from",
    ast.BoolOp: "`and`/`or` (write `&`/`|` between parenthesised comparisons)",
}
ALLOWED = (
    "allowed: numbers, True/False, parameter names, earlier lets, pi/inf/nan, "
    "+ - * / **, unary - + ~, one comparison < <= > >= == != at a time, & |, "
    "and the functions " + ", ".join(FUNCTIONS)
)
_KEYWORD_HINTS = {
    "and": "write `&` between parenthesised comparisons",
    "or": "write `|`",
    "not": "write `~`",
    "if": "write where(cond, a, b)",
    "else": "write where(cond, a, b)",
}


def _check_names(names: Mapping[str, str], loc: tuple) -> None:
    for name, kind in names.items():
        if kind not in KINDS:
            raise ValueError(f"parameter {name!r} has kind {kind!r}; kinds are {', '.join(KINDS)}")
        problem = _identifier_problem(name)
        if problem:
            raise FieldProblem(loc, f"parameter name {name!r} cannot appear in a formula: {problem}")


def _identifier_problem(name: object) -> str | None:
    if not isinstance(name, str) or not _IDENTIFIER.match(name):
        return "a name must be an ASCII Python identifier (letters, digits, underscores)" + (
            non_ascii(name) if isinstance(name, str) else ""
        )
    if keyword.iskeyword(name):
        return f"`{name}` is a Python keyword" + (" (the usual Python name is `lambd`)" if name == "lambda" else "")
    if name == NUMERICS_NAME:
        return f"`{NUMERICS_NAME}` is reserved for the numerics object in rendered code"
    return None


def _suggest(name: str, candidates) -> str:
    close = difflib.get_close_matches(name, sorted(candidates), n=3, cutoff=0.6)
    return f" (did you mean {' or '.join(f'`{c}`' for c in close)}?)" if close else ""


def _extern_kernels() -> Mapping:
    return externs.EXTERN_KERNELS


class _Parser:
    def __init__(
        self,
        source: str,
        names: Mapping[str, str],
        loc: tuple,
        lets: Mapping[str, str],
        later_lets: Sequence[str],
        let_values: Mapping = {},
    ):
        self.source, self.names, self.loc = source, names, tuple(loc)
        self.lets, self.later_lets = lets, later_lets
        self.let_values = let_values  # lets whose value is a constant, for bounded folding

    def fail(self, message: str, node: ast.AST | None = None, hint: str = ""):
        where = ""
        if node is not None and hasattr(node, "col_offset"):
            segment = ast.get_source_segment(self.source, node) or ""
            segment = segment if len(segment) <= 60 else segment[:57] + "..."
            where = f" (found `{segment}` at column {node.col_offset + 1})"
        raise FieldProblem(self.loc, message + where + (f"; {hint}" if hint else ""))

    def parse(self) -> Expression:
        source = self.source
        if not isinstance(source, str):
            raise FieldProblem(self.loc, f"expected an expression string, found {type(source).__name__}")
        if not source.strip():
            raise FieldProblem(self.loc, "empty expression; write an expression over the parameters")
        if len(source) > MAX_SOURCE_LENGTH:
            raise FieldProblem(
                self.loc, f"expression is {len(source)} characters long; the limit is {MAX_SOURCE_LENGTH} (use lets)"
            )
        self.source = source = source.strip()
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # SyntaxWarnings of odd junk are not the spec's problem
                module = ast.parse(source, mode="eval")
        except SyntaxError as exc:
            column = f" at column {exc.offset}" if exc.offset else ""
            raise FieldProblem(
                self.loc, f"not a valid expression{self._quoted()}: {exc.msg}{column}{self._keyword_hint()}"
            ) from None
        except (ValueError, MemoryError, RecursionError) as exc:
            raise FieldProblem(
                self.loc, f"not a valid expression{self._quoted()}: {str(exc) or 'nested too deeply'}"
            ) from None
        tree, type_ = self.visit(module.body, 0)
        return Expression(source, tree, type_)

    def _quoted(self) -> str:
        text = self.source if len(self.source) <= 60 else self.source[:57] + "..."
        return f" {text!r}"

    def _keyword_hint(self) -> str:
        for word in re.findall(r"[A-Za-z_]\w*", self.source):
            if word == "lambda":
                return "; `lambda` is a Python keyword, not allowed in formulas" + _suggest(word, self._usable())
            if keyword.iskeyword(word) and word not in ("True", "False", "None"):
                return f"; `{word}` is a Python keyword: {_KEYWORD_HINTS.get(word, 'not allowed in formulas')}"
        return ""

    def _usable(self) -> list[str]:
        params = [n for n, k in self.names.items() if k != "output"]
        return params + list(self.lets) + [c for c in CONSTANTS if c not in self.names]

    def expect(self, found: str, wanted: str, node: ast.AST, role: str) -> None:
        if found == wanted or "any" in (found, wanted):
            return
        if wanted == "num":
            self.fail(
                f"{role} must be a number, but this is a boolean (a comparison or mask); "
                "turn a mask into numbers with where(cond, 1, 0)",
                node,
            )
        self.fail(f"{role} must be a boolean (a comparison, isnan(...), & | ~), but this is a number", node)

    def visit(self, node: ast.AST, depth: int) -> tuple[Node, str]:
        if depth > MAX_DEPTH:
            self.fail(f"expression nested more than {MAX_DEPTH} levels deep; split it with lets")
        depth += 1
        if isinstance(node, ast.Constant):
            return self.constant(node)
        if isinstance(node, ast.Name):
            return self.name(node)
        if isinstance(node, ast.UnaryOp):
            if isinstance(node.op, ast.Not):
                self.fail("`not` is not allowed: write `~` for elementwise not", node)
            op = _UNARY[type(node.op)]
            operand, type_ = self.visit(node.operand, depth)
            self.expect(type_, "bool" if op == "~" else "num", node.operand, f"the operand of `{op}`")
            return Unary(op, operand), "bool" if op == "~" else "num"
        if isinstance(node, ast.BinOp):
            op = _BINARY.get(type(node.op))
            if op is None:
                self.fail(f"operator `{_OTHER_OPERATORS.get(type(node.op), '?')}` is not allowed", node, ALLOWED)
            want = "bool" if op in "&|" else "num"
            left, lt = self.visit(node.left, depth)
            right, rt = self.visit(node.right, depth)
            self.expect(lt, want, node.left, f"the left operand of `{op}`")
            self.expect(rt, want, node.right, f"the right operand of `{op}`")
            tree = Binary(op, left, right)
            return tree, want
        if isinstance(node, ast.Compare):
            return self.compare(node, depth)
        if isinstance(node, ast.Call):
            return self.call(node, depth)
        what = _FORBIDDEN.get(type(node), f"`{type(node).__name__}` syntax")
        self.fail(f"{what} is not allowed in a formula", node, ALLOWED)

    def constant(self, node: ast.Constant) -> tuple[Node, str]:
        value = node.value
        if isinstance(value, bool):
            return Literal(value, "bool"), "bool"
        if isinstance(value, int):
            try:
                float(value)
            except OverflowError:
                self.fail("integer literal too large for a float", node)
            return Literal(value, "int"), "num"
        if isinstance(value, float):
            if math.isinf(value):
                self.fail("float literal overflows to infinity; write `inf`", node)
            return Literal(value, "float"), "num"
        if isinstance(value, str):
            self.fail(
                "a string literal is only allowed compared with == or != to an attribute "
                '(approximate == "tanh") or as the kernel name of extern(...)',
                node,
            )
        self.fail(f"literal of type {type(value).__name__} is not allowed; numbers and True/False are", node)

    def name(self, node: ast.Name) -> tuple[Node, str]:
        name, kind = node.id, self.names.get(node.id)
        if kind == "output":
            self.fail(
                f"`{name}` is an output of the op; outputs are what formulas compute and cannot "
                "be operands (use inputs, scalars, attributes or earlier lets)",
                node,
            )
        if kind is not None:
            return Name(name, kind), "any" if kind == "attribute" else "num"
        if name in self.lets:
            return Name(name, "let"), self.lets[name]
        if name in self.later_lets:
            self.fail(f"let `{name}` is used before it is defined; a let may only use lets above it", node)
        if name in CONSTANTS:
            return Name(name, "constant"), "num"
        if name in FUNCTIONS:
            self.fail(f"`{name}` is a function; call it as {FUNCTIONS[name].signature}", node)
        usable = self._usable()
        self.fail(
            f"unknown name `{name}`{_suggest(name, usable)}",
            node,
            f"names you can use here: {', '.join(usable) or 'none'}",
        )

    def compare(self, node: ast.Compare, depth: int) -> tuple[Node, str]:
        if len(node.ops) > 1:
            self.fail("chained comparison is not allowed: write (a < b) & (b < c)", node)
        op = _COMPARE.get(type(node.ops[0]))
        if op is None:
            self.fail(
                f"comparison `{_OTHER_OPERATORS.get(type(node.ops[0]), '?')}` is not allowed; use < <= > >= == !=", node
            )
        left, right = node.left, node.comparators[0]
        strings = [s for s in (left, right) if isinstance(s, ast.Constant) and isinstance(s.value, str)]
        if strings:
            other = right if strings[0] is left else left
            if (
                op not in ("==", "!=")
                or len(strings) > 1
                or not isinstance(other, ast.Name)
                or self.names.get(other.id) != "attribute"
            ):
                self.fail(
                    "a string literal is only allowed compared with == or != to an attribute, "
                    'e.g. approximate == "tanh"',
                    node,
                )
            attr, text = Name(other.id, "attribute"), Literal(strings[0].value, "str")
            return Compare(op, *((text, attr) if strings[0] is left else (attr, text))), "bool"
        a, at = self.visit(left, depth)
        b, bt = self.visit(right, depth)
        if op in ("==", "!=") and "num" not in (at, bt):
            return Compare(op, a, b), "bool"  # booleans may be compared with each other
        self.expect(at, "num", left, f"the left side of `{op}`")
        self.expect(bt, "num", right, f"the right side of `{op}`")
        return Compare(op, a, b), "bool"

    def call(self, node: ast.Call, depth: int) -> tuple[Node, str]:
        if isinstance(node.func, ast.Attribute):
            self.fail(
                f"attribute access is not allowed: call a function by its bare name, as in {node.func.attr}(...)",
                node.func,
                f"functions: {', '.join(FUNCTIONS)}",
            )
        if not isinstance(node.func, ast.Name):
            self.fail("only the functions of the language can be called", node, f"functions: {', '.join(FUNCTIONS)}")
        name = node.func.id
        fn = FUNCTIONS.get(name)
        if fn is None:
            if name in self.names or name in self.lets:
                self.fail(f"`{name}` is a parameter or let, not a function", node, f"functions: {', '.join(FUNCTIONS)}")
            self.fail(
                f"unknown function `{name}`{_suggest(name, FUNCTIONS)}", node, f"functions: {', '.join(FUNCTIONS)}"
            )
        if node.keywords:
            self.fail(f"keyword arguments are not allowed; call {fn.signature}", node)
        n, fixed = len(node.args), len(fn.args) - fn.variadic
        if n < fixed or (n > fixed and not fn.variadic):
            wanted = f"at least {fixed}" if fn.variadic else str(fixed)
            self.fail(f"{fn.signature} takes {wanted} argument(s), found {n}", node)
        args: list[Node] = []
        for i, arg in enumerate(node.args):
            arg_name, type_ = fn.args[min(i, len(fn.args) - 1)]
            args.append(self.argument(fn, arg_name, type_.lstrip("*"), arg, depth))
        if name == "extern":
            self.check_extern_arity(args[0].value, n - 1, node)
        return Call(name, tuple(args)), fn.result

    def argument(self, fn: Function, arg_name: str, type_: str, arg: ast.AST, depth: int) -> Node:
        role = f"argument `{arg_name}` of {fn.signature}"
        if type_ == "tensor":
            if not isinstance(arg, ast.Name) or self.names.get(arg.id) not in ("input", "output"):
                tensors = [n for n, k in self.names.items() if k in ("input", "output")]
                self.fail(f"{role} must name a tensor parameter ({', '.join(tensors) or 'none'})", arg)
            return TensorRef(arg.id)
        if type_ == "dims":
            return self.dims(role, arg)
        if type_ == "kernel":
            if not (isinstance(arg, ast.Constant) and isinstance(arg.value, str)):
                self.fail(f"{role} must be a string literal naming a registered kernel", arg)
            kernels = _extern_kernels()
            if arg.value not in kernels:
                self.fail(
                    f"no extern kernel {arg.value!r} is registered in aclnngen.core.externs "
                    f"EXTERN_KERNELS{_suggest(arg.value, kernels)}; registered: "
                    f"{', '.join(sorted(kernels)) or 'none'}",
                    arg,
                )
            return Literal(arg.value, "str")
        tree, found = self.visit(arg, depth)
        self.expect(found, type_, arg, role)
        return tree

    def dims(self, role: str, arg: ast.AST) -> Node:
        if isinstance(arg, ast.Name) and self.names.get(arg.id) == "attribute":
            return Name(arg.id, "attribute")
        items = arg.elts if isinstance(arg, ast.Tuple) else [arg]  # one dim may stand alone: sum(e, 1)
        if isinstance(arg, ast.Tuple) or isinstance(arg, (ast.Constant, ast.UnaryOp)):
            values = []
            for item in items:
                sign, inner = 1, item
                if isinstance(item, ast.UnaryOp) and isinstance(item.op, ast.USub):
                    sign, inner = -1, item.operand
                if not (isinstance(inner, ast.Constant) and type(inner.value) is int):
                    break
                values.append(sign * inner.value)
            else:
                return Dims(tuple(values))
        self.fail(
            f"{role} must be an int literal such as -1, a tuple of them such as (0, 2), or the name of an attribute",
            arg,
        )

    def check_extern_arity(self, kernel_name: str, count: int, node: ast.AST) -> None:
        kernel = _extern_kernels()[kernel_name]
        try:
            inspect.signature(kernel).bind(None, *([None] * count))
        except TypeError:
            self.fail(
                f"extern kernel {kernel_name!r} cannot take {count} argument(s); its "
                f"signature is {inspect.signature(kernel)} (the first is the numerics object)",
                node,
            )
        except ValueError:  # no introspectable signature: checked when called
            pass


def parse_expression(source: str, names: Mapping[str, str], *, loc: tuple, lets: Sequence[str] = ()) -> Expression:
    """Parse one expression. `names` maps each parameter's Python name to its kind (KINDS);
    `lets` are let names defined before it. Raises FieldProblem(loc, message)."""
    _check_names(names, loc)
    return _Parser(source, names, loc, {name: "any" for name in lets}, ()).parse()


def parse_program(
    outputs: Mapping[str, str],
    names: Mapping[str, str],
    *,
    lets: Mapping[str, str] = {},
    loc: tuple,
    inplace: Sequence[str] = (),
) -> FormulaProgram:
    """Parse an op's formula: ordered lets, then one expression per output. Outputs come back in
    the order `names` declares them, then the `inplace` inputs (whose new values are results too);
    every declared output needs an expression."""
    loc = tuple(loc)
    _check_names(names, loc)
    let_types: dict[str, str] = {}
    let_values: dict[str, object] = {}
    parsed_lets = []
    let_names = list(lets)
    for i, (name, source) in enumerate(lets.items()):
        where = loc + ("lets", name)
        problem = _identifier_problem(name)
        if problem is None and (name in names or name in FUNCTIONS or name in CONSTANTS):
            what = "parameter" if name in names else "function" if name in FUNCTIONS else "constant"
            problem = f"it would shadow the {what} `{name}`; choose another name"
        if problem:
            raise FieldProblem(where, f"invalid let name {name!r}: {problem}")
        expr = _Parser(source, names, where, dict(let_types), let_names[i + 1 :], dict(let_values)).parse()
        let_types[name] = expr.type
        value = fold(expr.tree, let_values)
        if value is not None:
            let_values[name] = value
        parsed_lets.append((name, expr))
    declared = [n for n, k in names.items() if k == "output"] + list(inplace)
    for name in outputs:
        if name not in declared:
            raise FieldProblem(
                loc + ("outputs", name),
                f"`{name}` is not an output of the op{_suggest(name, declared)}; "
                f"outputs: {', '.join(declared) or 'none'}",
            )
    missing = [n for n in declared if n not in outputs]
    if missing:
        raise FieldProblem(loc + ("outputs",), f"no expression for output(s) {', '.join(missing)}")
    parsed_outputs = []
    for name in declared:
        where = loc + ("outputs", name)
        expr = _Parser(outputs[name], names, where, dict(let_types), (), let_values).parse()
        if expr.type == "bool":
            raise FieldProblem(
                where,
                f"the expression of output `{name}` is a boolean; an output must be a number: use where(cond, 1, 0)",
            )
        parsed_outputs.append((name, expr))
    return FormulaProgram(tuple(parsed_lets), tuple(parsed_outputs))


# --- rendering -------------------------------------------------------------------------------------

_PRECEDENCE = {"cmp": 1, "|": 2, "&": 3, "+": 4, "-": 4, "*": 5, "/": 5, "unary": 6, "**": 7}
_ATOM = 8


def _number(value: int | float) -> str:
    return repr(int(value)) if isinstance(value, int) else repr(float(value))


def _render(node: Node, style: str, lets: Mapping[str, Node] = {}, ctx: "_Lazy | None" = None) -> tuple[str, int]:
    """Render `node` as text with its precedence. Styles: "python" (calls on `m`), "formula"
    (the language itself; re-parses to the same tree) and "threshold" (plain Python over scalar
    names, constants as math.*, round_to dropped, lets inlined). With `ctx` (python only): a
    `where` whose condition reads no tensor is a Python conditional, and the lazy lets are calls."""

    def sub(child):
        return _render(child, style, lets, ctx)

    if style == "threshold" and isinstance(node, Binary) and node.op == "**":
        # Thresholds are plain Python, where a constant power can run for ever: fold it here, bounded.
        value = fold(node, lets)
        if value is not None:
            return _constant_text(value), (_ATOM if value >= 0 or math.isnan(value) else _PRECEDENCE["unary"])

    if isinstance(node, Literal):
        if node.type == "str":
            return ascii(node.value), _ATOM
        if node.type == "bool":
            return ("True" if node.value else "False"), _ATOM
        text = _number(node.value)
        return (f"{NUMERICS_NAME}.lit({text})" if style == "python" else text), _ATOM
    if isinstance(node, Name):
        if node.kind == "constant":
            prefix = {"python": f"{NUMERICS_NAME}.", "threshold": "math."}.get(style, "")
            return prefix + node.id, _ATOM
        if style == "threshold" and node.kind == "let":
            return sub(lets[node.id])
        if ctx is not None and node.kind == "let" and node.id in ctx.lazy:
            return f"{node.id}()", _ATOM
        return node.id, _ATOM
    if isinstance(node, TensorRef):
        return (ascii(node.id) if style == "python" else node.id), _ATOM
    if isinstance(node, Dims):
        inner = ", ".join(map(str, node.values))
        return f"({inner}{',' if len(node.values) == 1 else ''})", _ATOM
    if isinstance(node, Unary):
        text, prec = sub(node.operand)
        p = _PRECEDENCE["unary"]
        return node.op + (f"({text})" if prec < p else text), p
    if isinstance(node, Binary):
        p = _PRECEDENCE[node.op]
        (lt, lp), (rt, rp) = sub(node.left), sub(node.right)
        if node.op == "**":  # right-associative; a unary operand on the left needs parentheses
            wrap_left, wrap_right = lp <= p, rp < _PRECEDENCE["unary"]
        else:
            wrap_left, wrap_right = lp < p, rp <= p
        lt = f"({lt})" if wrap_left else lt
        rt = f"({rt})" if wrap_right else rt
        return f"{lt} {node.op} {rt}", p
    if isinstance(node, Compare):
        p = _PRECEDENCE["cmp"]
        (lt, lp), (rt, rp) = sub(node.left), sub(node.right)
        lt = f"({lt})" if lp <= p else lt
        rt = f"({rt})" if rp <= p else rt
        return f"{lt} {node.op} {rt}", p
    if isinstance(node, Call):
        if style == "threshold" and node.function == "round_to":
            return sub(node.args[0])  # the data generator rounds to the tensor's dtype itself
        if ctx is not None and node.function == "where" and ctx.is_static(node.args[0]):
            cond, a, b = (sub(arg)[0] for arg in node.args)
            return f"({a} if {NUMERICS_NAME}.truth({cond}) else {b})", _ATOM
        args = ", ".join(sub(a)[0] for a in node.args)
        prefix = f"{NUMERICS_NAME}." if style == "python" else ""
        return f"{prefix}{node.function}({args})", _ATOM
    raise TypeError(f"not a formula node: {node!r}")


_CONSTANT_VALUES = {"pi": math.pi, "inf": math.inf, "nan": math.nan}


def fold(node: Node, lets: Mapping[str, Node] = {}) -> int | float | None:
    """The value of `node` when it is a constant (numbers, pi/inf/nan, lets of constants, arithmetic
    on them), else None. Bounded: an integer result beyond MAX_CONSTANT_BITS is computed as a double
    (inf when it overflows), so `2**2**2**2**2**2` folds at once to inf instead of running forever."""
    if isinstance(node, Literal):
        return node.value if node.type in ("int", "float") else None
    if isinstance(node, Name):
        if node.kind == "constant":
            return _CONSTANT_VALUES.get(node.id)
        return fold(lets[node.id], lets) if node.kind == "let" and node.id in lets else None
    if isinstance(node, Unary) and node.op in "+-":
        value = fold(node.operand, lets)
        return None if value is None else -value if node.op == "-" else value
    if not (isinstance(node, Binary) and node.op in ("+", "-", "*", "/", "**")):
        return None
    a, b = fold(node.left, lets), fold(node.right, lets)
    if a is None or b is None:
        return None
    if isinstance(a, int) and isinstance(b, int) and _int_too_large(node.op, a, b):
        a = float(a)
    try:
        value = {"+": lambda: a + b, "-": lambda: a - b, "*": lambda: a * b, "/": lambda: a / b, "**": lambda: a**b}[
            node.op
        ]()
    except OverflowError:
        negative = (a < 0 and node.op == "**" and float(b).is_integer() and int(b) % 2 == 1) or (
            node.op == "*" and (a < 0) != (b < 0)
        )
        return -math.inf if negative else math.inf
    except (ZeroDivisionError, ValueError, ArithmeticError):
        return None  # computed at run time, with the numerics' semantics
    return None if isinstance(value, complex) else value


_COMPARED_AT = {"<": lambda a, b: a < b, "<=": lambda a, b: a <= b, ">": lambda a, b: a > b, ">=": lambda a, b: a >= b}
_COMPARED_AT.update({"==": lambda a, b: a == b, "!=": lambda a, b: a != b})


def value_at(node: Node, values: Mapping[str, object]):
    """The value of an expression over scalars and attributes at `values` (Python names), for
    the generator (an oracle domain at a planned sweep point); None where it reads anything else
    or uses a function the generator does not compute (the test decides at run time then)."""
    if isinstance(node, Name) and node.kind in ("scalar", "optional_scalar", "attribute"):
        return values.get(node.id)
    if isinstance(node, Literal):
        return node.value
    if isinstance(node, Unary):
        v = value_at(node.operand, values)
        if v is None:
            return None
        return (not v) if node.op == "~" else (-v if node.op == "-" else v)
    if isinstance(node, Compare):
        a, b = value_at(node.left, values), value_at(node.right, values)
        return None if a is None or b is None else _COMPARED_AT[node.op](a, b)
    if isinstance(node, Binary) and node.op in ("&", "|"):
        a, b = value_at(node.left, values), value_at(node.right, values)
        return None if a is None or b is None else (a and b) if node.op == "&" else (a or b)
    if isinstance(node, Call) and node.function in ("minimum", "maximum", "abs"):
        args = [value_at(a, values) for a in node.args]
        if any(a is None for a in args):
            return None
        return {"minimum": min, "maximum": max, "abs": abs}[node.function](*args)
    return fold(node)


def _int_too_large(op: str, a: int, b: int) -> bool:
    if op == "**":
        return b > 0 and abs(a) > 1 and b * (abs(a).bit_length() - 1) > MAX_CONSTANT_BITS
    if op == "*":
        return a.bit_length() + b.bit_length() > MAX_CONSTANT_BITS
    return max(a.bit_length(), b.bit_length()) > MAX_CONSTANT_BITS


def _constant_text(value: int | float) -> str:
    if isinstance(value, float) and not math.isfinite(value):
        return "math.nan" if math.isnan(value) else ("-math.inf" if value < 0 else "math.inf")
    return _number(value)


def render_python(expr: Expression) -> str:
    """A Python expression over the parameter and let names that calls the numerics as `m.<fn>`."""
    return _render(expr.tree, "python")[0]


def render_formula(expr: Expression) -> str:
    """The expression in canonical formula syntax (for docs); it parses back to the same tree."""
    return _render(expr.tree, "formula")[0]


_STATIC_KINDS = ("scalar", "optional_scalar", "attribute", "constant")


@dataclass(frozen=True)
class _Lazy:
    """How a program renders without computing what it does not need: `where(cond, a, b)` whose
    condition reads scalars and attributes only picks one branch (a Python conditional), and a
    let used only inside such branches is computed when first read (`m.lazy`)."""

    lets: Mapping[str, Node]
    lazy: frozenset

    def is_static(self, node: Node) -> bool:
        for n in _walk(node):
            if isinstance(n, TensorRef):
                return False
            if (
                isinstance(n, Name)
                and n.kind not in _STATIC_KINDS
                and not (n.kind == "let" and self.is_static(self.lets[n.id]))
            ):
                return False
        return True

    @classmethod
    def of(cls, prog: FormulaProgram) -> "_Lazy":
        lets = {name: expr.tree for name, expr in prog.lets}
        probe = cls(lets, frozenset())
        eager: set[str] = set()

        def visit(node: Node, in_branch: bool) -> None:
            if isinstance(node, Name) and node.kind == "let" and not in_branch and node.id not in eager:
                eager.add(node.id)
                visit(lets[node.id], False)
            if isinstance(node, Call) and node.function == "where" and probe.is_static(node.args[0]):
                visit(node.args[0], in_branch)
                visit(node.args[1], True)
                visit(node.args[2], True)
                return
            for child in _children(node):
                visit(child, in_branch)

        for _, expr in prog.outputs:
            visit(expr.tree, False)
        return cls(lets, frozenset(lets) - eager)


def render_program(prog: FormulaProgram) -> list[str]:
    """Body lines of a function `(m, *, <parameters>)`: one assignment per let, then the return
    of a tuple of the outputs in declaration order. A let only a branch not taken needs is never
    computed (see _Lazy)."""
    ctx = _Lazy.of(prog)
    lines = []
    for name, expr in prog.lets:
        text = _render(expr.tree, "python", ctx=ctx)[0]
        lines.append(f"{name} = {NUMERICS_NAME}.lazy(lambda: {text})" if name in ctx.lazy else f"{name} = {text}")
    outs = [_render(expr.tree, "python", ctx=ctx)[0] for _, expr in prog.outputs]
    lines.append(f"return ({', '.join(outs)}{',' if len(outs) == 1 else ''})")
    return lines


# --- analysis --------------------------------------------------------------------------------------


def _walk(node: Node):
    yield node
    for child in _children(node):
        yield from _walk(child)


walk = _walk  # every node of a parsed tree, depth first (codegen/arithmetic.py reads constants)


def _children(node: Node) -> tuple:
    if isinstance(node, Unary):
        return (node.operand,)
    if isinstance(node, (Binary, Compare)):
        return (node.left, node.right)
    if isinstance(node, Call):
        return node.args
    return ()


children = _children  # a node's operands (codegen/formula_c.py walks trees its own way)


def _is_threshold(node: Node, lets: Mapping[str, Node]) -> bool:
    """True when `node` depends on no tensor: scalars, attributes, literals, constants, arithmetic
    and round_to (lets are followed)."""
    if isinstance(node, Literal):
        return node.type in ("int", "float")
    if isinstance(node, Name):
        if node.kind == "let":
            return _is_threshold(lets[node.id], lets)
        return node.kind in ("scalar", "optional_scalar", "attribute", "constant")
    if isinstance(node, Unary):
        return node.op in "-+" and _is_threshold(node.operand, lets)
    if isinstance(node, Binary):
        return node.op in "+-*/**" and _is_threshold(node.left, lets) and _is_threshold(node.right, lets)
    if isinstance(node, Call):
        return node.function == "round_to" and _is_threshold(node.args[0], lets)
    return False


def _tensor_operand(node: Node) -> tuple[str, bool] | None:
    """(input name, mirrored) for `x` or `abs(x)` (whose boundaries are at +t and -t)."""
    if isinstance(node, Name) and node.kind == "input":
        return node.id, False
    if isinstance(node, Call) and node.function == "abs":
        inner = _tensor_operand(node.args[0])
        return (inner[0], True) if inner and not inner[1] else None
    return None


def comparison_boundaries(prog: FormulaProgram) -> list[tuple[str, str]]:
    """(input tensor, threshold) for each comparison of an input (or its abs) with an expression
    of scalars, attributes and constants, deduplicated, in order of appearance. Thresholds are
    plain Python over the scalar names (constants as math.pi etc., round_to dropped)."""
    lets = {name: expr.tree for name, expr in prog.lets}
    found: list[tuple[str, str]] = []
    for _, expr in prog.lets + prog.outputs:
        for node in _walk(expr.tree):
            if not isinstance(node, Compare):
                continue
            for tensor_side, other in ((node.left, node.right), (node.right, node.left)):
                operand = _tensor_operand(tensor_side)
                if operand is None or not _is_threshold(other, lets):
                    continue
                threshold = _render(other, "threshold", lets)[0]
                candidates = [threshold]
                if operand[1]:
                    candidates = [_render(Unary("-", other), "threshold", lets)[0], threshold]
                for candidate in candidates:
                    if (operand[0], candidate) not in found:
                        found.append((operand[0], candidate))
    return found


def _categories(node: Node, lets: Mapping[str, Node]) -> set[str]:
    cats: set[str] = set()
    for n in _walk(node):
        if isinstance(n, Name) and n.kind == "let":
            cats |= _categories(lets[n.id], lets)
        elif isinstance(n, Call):
            cats.add(FUNCTIONS[n.function].category)
        elif isinstance(n, Binary) and n.op == "**":
            exact_square = isinstance(n.right, Literal) and n.right.value in (1, 2)
            cats.add("exact" if exact_square else "transcendental")  # general pow goes through libm
    return cats


# Functions that return one of their operands' values, or an exact function of one: no rounding.
_NON_ROUNDING = {"abs", "sign", "conj", "minimum", "maximum", "round_to", "per_channel", "isnan", "where"}


def _roundings(node: Node, lets: Mapping[str, Node]) -> int:
    """How many rounding operations a value passes through on its way to the output: each +, -, *,
    / and sqrt (and x ** 2) rounds once; selections, negation, conj, min/max and conditions of
    `where` do not round the selected value."""
    if isinstance(node, Name):
        return _roundings(lets[node.id], lets) if node.kind == "let" else 0
    if isinstance(node, Unary):
        return _roundings(node.operand, lets)
    if isinstance(node, Binary):
        inner = _roundings(node.left, lets) + _roundings(node.right, lets)
        if node.op == "**" and isinstance(node.right, Literal) and node.right.value == 1:
            return inner
        return inner + 1
    if isinstance(node, Call):
        if node.function == "where":
            return max(_roundings(a, lets) for a in node.args[1:])
        inner = sum(_roundings(a, lets) for a in node.args if not isinstance(a, (Dims,)))
        return inner + (0 if node.function in _NON_ROUNDING else 1)
    return 0


def classify(prog: FormulaProgram) -> dict[str, str]:
    """Per output: "reduction" if a sum is involved, else "transcendental" if exp/log/erf/tanh/
    sigmoid/general ** or an extern kernel is, else "selection" when the output is a selection of
    values each rounded at most once (one exactly-rounded operation: reproducible bit for bit),
    else "arithmetic" (several roundings, whose order, fusing and intermediate precision differ
    between implementations)."""
    lets = {name: expr.tree for name, expr in prog.lets}
    result = {}
    for name, expr in prog.outputs:
        cats = _categories(expr.tree, lets)
        result[name] = (
            "reduction"
            if "reduction" in cats
            else "transcendental"
            if cats & {"transcendental", "extern"}
            else "selection"
            if _roundings(expr.tree, lets) <= 1
            else "arithmetic"
        )
    return result
