"""The formula language: parsing against the whitelist, errors with the caller's location, safe and
deterministic rendering, analysis (boundaries, classification) and the documentation."""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys

import numpy as np
import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from aclnngen.codegen import formula
from aclnngen.codegen.errors import FieldProblem
from aclnngen.codegen.formula import (
    CONSTANTS,
    FUNCTIONS,
    Expression,
    FormulaProgram,
    classify,
    comparison_boundaries,
    parse_expression,
    parse_program,
    render_formula,
    render_program,
    render_python,
)
from aclnngen.core import externs
from aclnngen.evaluate import numerics
from aclnngen.evaluate.numerics import evaluate
from repo_paths import REPO

DOC = REPO / "docs" / "formula-language.md"
LOC = ("formula", "outputs", "grad_input")
NAMES = {
    "grad_output": "input",
    "self": "input",
    "weight": "input",
    "beta": "optional_scalar",
    "lambd": "scalar",
    "min": "scalar",
    "max": "scalar",
    "approximate": "attribute",
    "dims": "attribute",
    "grad_input": "output",
}


def doc_examples() -> list[dict]:
    blocks = re.findall(r"```yaml\n(.*?)```", DOC.read_text(), flags=re.S)
    return [doc for doc in map(yaml.safe_load, blocks) if "parameters" in doc]


def program_of(example: dict) -> FormulaProgram:
    return parse_program(example["outputs"], example["parameters"], lets=example.get("lets") or {}, loc=("formula",))


EXAMPLES = {
    name: program_of(doc)
    for name, doc in zip(
        ["swish_intro", "hardtanh", "softshrink", "prelu", "gelu", "swish", "gelu_approximate"], doc_examples()
    )
}


def compile_body(prog: FormulaProgram, names) -> callable:
    params = [n for n, k in names.items() if k != "output"]
    source = f"def body(m, *, {', '.join(params)}):\n" + "".join(f"    {line}\n" for line in render_program(prog))
    namespace: dict = {}
    exec(compile(source, "<rendered formula>", "exec"), namespace)  # rendered code, not spec text
    return namespace["body"]


def problem(source, names=NAMES, loc=LOC, **kwargs) -> FieldProblem:
    with pytest.raises(FieldProblem) as info:
        parse_expression(source, names, loc=loc, **kwargs)
    assert info.value.loc == loc
    return info.value


# --- parsing ---------------------------------------------------------------------------------------


def test_doc_has_the_five_examples_and_they_parse():
    assert set(EXAMPLES) >= {"hardtanh", "softshrink", "prelu", "gelu", "swish"}
    assert [name for name, _ in EXAMPLES["prelu"].outputs] == ["grad_input", "grad_weight"]
    assert [name for name, _ in EXAMPLES["swish"].lets] == ["s"]


def test_expressions_are_frozen_and_hashable_and_equal_by_content():
    a = parse_expression("where(self > 0, grad_output, 0)", NAMES, loc=LOC)
    b = parse_expression("where(self > 0, grad_output, 0)", NAMES, loc=("elsewhere",))
    assert a == b and hash(a) == hash(b) and len({a, b, EXAMPLES["prelu"]}) == 2
    assert hash(EXAMPLES["swish"]) == hash(program_of(doc_examples()[5]))
    with pytest.raises(AttributeError):
        a.source = "x"  # type: ignore[misc]
    assert a.names == {"self", "grad_output"} and a.type == "num"


def test_literal_types_stay_apart():
    one = [parse_expression(s, NAMES, loc=LOC).tree for s in ("1", "1.0")]
    assert one[0] != one[1]
    assert render_python(parse_expression("1", NAMES, loc=LOC)) == "m.lit(1)"
    assert render_python(parse_expression("1.0", NAMES, loc=LOC)) == "m.lit(1.0)"


def test_lets_and_attributes_and_string_comparisons_parse():
    expr = parse_expression('where(approximate == "tanh", s, self)', NAMES, loc=LOC, lets=["s"])
    assert render_python(expr) == "m.where(approximate == 'tanh', s, self)"
    assert render_python(parse_expression('"none" != approximate', NAMES, loc=LOC)) == "'none' != approximate"
    assert render_python(parse_expression("sum(self * 2, dims)", NAMES, loc=LOC)) == "m.sum(self * m.lit(2), dims)"
    assert render_python(parse_expression("sum(self, (0, -1))", NAMES, loc=LOC)) == "m.sum(self, (0, -1))"
    assert render_python(parse_expression("sum(self, (1,))", NAMES, loc=LOC)) == "m.sum(self, (1,))"
    assert render_python(parse_expression("round_to(lambd, self)", NAMES, loc=LOC)) == "m.round_to(lambd, 'self')"
    assert render_python(parse_expression("round_to(lambd, grad_input)", NAMES, loc=LOC)) == (
        "m.round_to(lambd, 'grad_input')"
    )
    assert render_python(parse_expression("  self\n", NAMES, loc=LOC)) == "self"  # YAML leaves spaces


REJECTIONS = [
    # (source, fragments the message must contain)
    ("sel * 2", ["unknown name `sel`", "did you mean `self`", "names you can use"]),
    ("lamda", ["did you mean `lambd`"]),
    ("grad_input * 2", ["`grad_input` is an output", "cannot be operands"]),
    ("exp(self, 1)", ["exp(x) takes 1 argument(s), found 2"]),
    ("where(self > 0, 1)", ["where(cond, a, b) takes 3 argument(s), found 2"]),
    ("minimum(self)", ["minimum(a, b) takes 2"]),
    ("extern()", ["takes at least 1"]),
    ("self // 2", ["operator `//` is not allowed", "allowed:"]),
    ("self % 2", ["operator `%`"]),
    ("(self > 0) ^ (self < 1)", ["operator `^`"]),
    ("self @ self", ["operator `@`"]),
    ("self is None", ["comparison `is`"]),
    ("self in (1, 2)", ["comparison `in`"]),
    ("self > lambda", ["`lambda` is a Python keyword", "did you mean `lambd`"]),
    ("lambda: self", ["lambda is not allowed"]),
    ("(self > 0) and (self < 1)", ["`and`/`or`", "`&`"]),
    ("(self > 0) or (self < 1)", ["`and`/`or`", "`|`"]),
    ("not (self > 0)", ["`not` is not allowed", "`~`"]),
    ("self if self > 0 else 0", ["conditional expression", "where(cond, a, b)"]),
    ("self.shape", ["attribute access", "`self.shape`"]),
    ("m.exp(self)", ["attribute access"]),
    ("self[0]", ["subscript", "`self[0]`"]),
    ("self[1:2]", ["subscript"]),
    ('f"{self}"', ["f-string"]),
    ("[x for x in self]", ["list comprehension"]),
    ("(x for x in self)", ["generator expression"]),
    ("{x: 1 for x in self}", ["dict comprehension"]),
    ("{x for x in self}", ["set comprehension"]),
    ("[self]", ["list is not allowed"]),
    ("(self, 1)", ["tuple", "dims of sum"]),
    ("(y := self)", ["assignment expression"]),
    ("exp(*self)", ["starred"]),
    ("exp(x=self)", ["keyword arguments", "exp(x)"]),
    ("self(1)", ["`self` is a parameter or let, not a function"]),
    ("__import__('os')", ["unknown function `__import__`", "functions: where"]),
    ("open('x')", ["unknown function `open`"]),
    ("exps(self)", ["did you mean `exp`"]),
    ("exp + 1", ["`exp` is a function", "exp(x)"]),
    ("0 < self < 1", ["chained comparison", "(a < b) & (b < c)"]),
    ("(self > 0) + 1", ["must be a number", "boolean", "where(cond, 1, 0)"]),
    ("-(self > 0)", ["must be a number"]),
    ("where(self, 1, 0)", ["argument `cond`", "must be a boolean"]),
    ("self & (self > 0)", ["must be a boolean"]),
    ("~self", ["must be a boolean"]),
    ("exp(self > 0)", ["argument `x` of exp(x) must be a number"]),
    ('"tanh"', ["string literal"]),
    ('self == "tanh"', ["string literal", "attribute"]),
    ('approximate < "tanh"', ["== or !="]),
    ('"a" == "b"', ["string literal"]),
    ("round_to(lambd, lambd)", ["must name a tensor parameter", "grad_output, self, weight"]),
    ("round_to(lambd, 2 * self)", ["must name a tensor parameter"]),
    ("sum(self, 1.5)", ["an int literal such as -1", "(0, 2)"]),
    ("sum(self, (1.5,))", ["a tuple of them"]),
    ("sum(self, (True,))", ["a tuple of them"]),
    ("sum(self, lambd)", ["a tuple of them", "attribute"]),
    ('extern("no_such_kernel", self)', ["no extern kernel 'no_such_kernel'", "EXTERN_KERNELS"]),
    ("extern(self, self)", ["string literal naming a registered kernel"]),
    ("1" + "0" * 400, ["integer literal too large"]),
    ("1e999", ["overflows", "write `inf`"]),
    ("1j", ["literal of type complex"]),
    ("None", ["literal of type NoneType"]),
    ("...", ["literal of type ellipsis"]),
    ("b'x'", ["literal of type bytes"]),
    ("self +", ["not a valid expression"]),
    ("(self", ["not a valid expression"]),
    ("self self", ["not a valid expression"]),
    ("self\x00", ["not a valid expression"]),
    ("self = 1", ["not a valid expression"]),
    ("", ["empty expression"]),
    ("   \n ", ["empty expression"]),
    ("-" * 100 + "self", ["nested more than"]),
    ("(" * 300 + "self" + ")" * 300, ["not a valid expression"]),
    ("-" * 3000 + "self", ["not a valid expression"]),
    ("self + " * 1000 + "self", ["limit is 4000"]),
]


@pytest.mark.parametrize("source,fragments", REJECTIONS, ids=[r[0][:40] for r in REJECTIONS])
def test_rejections_name_the_location_and_what_was_found(source, fragments):
    message = problem(source).message
    for fragment in fragments:
        assert fragment in message, message


@pytest.mark.parametrize("source", [None, 1.5, ["self"]])
def test_non_strings_are_rejected(source):
    assert "expected an expression string" in problem(source).message


def test_let_known_only_to_later_code_is_rejected():
    message = problem("s * 2", lets=[]).message
    assert "unknown name `s`" in message


def test_extern_arity_is_checked_against_the_registered_kernel(monkeypatch):
    monkeypatch.setitem(externs.EXTERN_KERNELS, "two_args", lambda m, a, b: a + b)
    expr = parse_expression('extern("two_args", self, grad_output * 2)', NAMES, loc=LOC)
    assert render_python(expr) == "m.extern('two_args', self, grad_output * m.lit(2))"
    message = problem('extern("two_args", self)').message
    assert "cannot take 1 argument(s)" in message and "(m, a, b)" in message
    assert "did you mean `two_args`" in problem('extern("two_arg", self)').message


@pytest.mark.parametrize("bad_name", ["a'b", "x\ny", "{{ x }}", "a b", "lambda", "m", "", "é", "__import__('os')"])
def test_bad_parameter_names_are_rejected_at_the_callers_location(bad_name):
    message = problem("1", names={**NAMES, bad_name: "input"}).message
    assert repr(bad_name) in message


def test_unknown_parameter_kind_is_a_programming_error():
    with pytest.raises(ValueError, match="kinds are"):
        parse_expression("self", {"self": "tensor"}, loc=LOC)


# --- programs --------------------------------------------------------------------------------------

PRELU_NAMES = {
    "grad_output": "input",
    "self": "input",
    "weight": "input",
    "grad_input": "output",
    "grad_weight": "output",
}


def program_problem(outputs, lets=None, names=PRELU_NAMES) -> FieldProblem:
    with pytest.raises(FieldProblem) as info:
        parse_program(outputs, names, lets=lets or {}, loc=("formula",))
    return info.value


@pytest.mark.parametrize(
    "let,fragment",
    [
        ("self", "shadow the parameter `self`"),
        ("grad_input", "shadow the parameter"),
        ("exp", "shadow the function `exp`"),
        ("pi", "shadow the constant `pi`"),
        ("m", "reserved for the numerics object"),
        ("lambda", "Python keyword"),
        ("a b", "ASCII Python identifier"),
        ("x'", "ASCII Python identifier"),
    ],
)
def test_let_names_that_shadow_or_are_invalid_are_rejected(let, fragment):
    error = program_problem({"grad_input": "self", "grad_weight": "self"}, lets={let: "self"})
    assert error.loc == ("formula", "lets", let) and fragment in error.message


def test_let_used_before_defined_names_the_using_let():
    error = program_problem({"grad_input": "a", "grad_weight": "b"}, lets={"a": "b * 2", "b": "self"})
    assert error.loc == ("formula", "lets", "a")
    assert "let `b` is used before it is defined" in error.message


def test_let_errors_and_output_errors_are_located_at_their_key():
    error = program_problem({"grad_input": "self", "grad_weight": "self"}, lets={"a": "self +"})
    assert error.loc == ("formula", "lets", "a")
    error = program_problem({"grad_input": "self", "grad_weight": "sel"})
    assert error.loc == ("formula", "outputs", "grad_weight") and "did you mean `self`" in error.message


def test_outputs_must_be_declared_complete_and_numbers():
    error = program_problem({"grad_input": "self", "grad_weight": "self", "grad_wieght": "self"})
    assert error.loc == ("formula", "outputs", "grad_wieght") and "did you mean `grad_weight`" in error.message
    error = program_problem({"grad_input": "self"})
    assert error.loc == ("formula", "outputs") and "grad_weight" in error.message
    error = program_problem({"grad_input": "self > 0", "grad_weight": "self"})
    assert error.loc == ("formula", "outputs", "grad_input") and "boolean" in error.message


def test_boolean_lets_are_masks():
    prog = parse_program(
        {"grad_input": "where(mask, grad_output, 0)", "grad_weight": "self"},
        PRELU_NAMES,
        lets={"mask": "(self > 0) & ~isnan(self)"},
        loc=("f",),
    )
    assert render_program(prog)[0] == "mask = (self > m.lit(0)) & ~m.isnan(self)"
    error = program_problem({"grad_input": "mask + 1", "grad_weight": "self"}, lets={"mask": "self > 0"})
    assert "must be a number" in error.message


def test_render_program_returns_a_tuple_in_declaration_order():
    prog = parse_program({"grad_weight": "self * 2", "grad_input": "grad_output"}, PRELU_NAMES, loc=("f",))
    assert render_program(prog) == ["return (grad_output, self * m.lit(2))"]
    assert render_program(EXAMPLES["hardtanh"]) == [
        "return (m.where((self > min) & (self < max), grad_output, m.lit(0)),)"
    ]
    assert render_program(EXAMPLES["swish"]) == [
        "s = m.sigmoid(beta * self)",
        "return (grad_output * (s + beta * s * (self * (m.lit(1) - s))),)",
    ]


def test_parameters_that_shadow_builtins_and_functions_work_in_rendered_code():
    names = {
        "self": "input",
        "min": "scalar",
        "max": "scalar",
        "sum": "scalar",
        "exp": "scalar",
        "abs": "input",
        "out": "output",
    }
    prog = parse_program(
        {"out": "where(self > min, exp(exp) + sum, max) + abs(abs) + sum(self, (0,))"}, names, loc=("f",)
    )
    body = compile_body(prog, names)
    (out,) = evaluate(
        body,
        inputs={"self": np.array([1.0, -1.0]), "abs": np.array([-2.0, 3.0])},
        scalars={"min": 0.0, "max": 10.0, "sum": 0.5, "exp": 0.0},
        attributes={},
        output_dtypes={"out": np.float64},
    )
    np.testing.assert_array_equal(out, [1.5 + 2.0 + 0.0, 10.0 + 3.0 + 0.0])


# --- rendering safety and determinism --------------------------------------------------------------


def assert_safe_python(rendered: str, params, strings=()) -> None:
    """The rendered code contains only calls on `m`, known names, operators and re-emitted literals."""
    tree = ast.parse(rendered, mode="eval")
    allowed_attrs = set(FUNCTIONS) | set(CONSTANTS) | {"lit"}
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            assert isinstance(node.func, ast.Attribute) and node.func.value.id == "m", ast.dump(node)
            assert not node.keywords
        elif isinstance(node, ast.Attribute):
            assert isinstance(node.value, ast.Name) and node.value.id == "m" and node.attr in allowed_attrs
        elif isinstance(node, ast.Name):
            assert node.id == "m" or node.id in params, node.id
        elif isinstance(node, ast.Constant):
            assert type(node.value) in (int, float, bool) or node.value in strings or node.value in params, node.value
        else:
            assert isinstance(
                node,
                (
                    ast.Expression,
                    ast.BinOp,
                    ast.UnaryOp,
                    ast.Compare,
                    ast.Tuple,
                    ast.operator,
                    ast.unaryop,
                    ast.cmpop,
                    ast.expr_context,
                ),
            ), ast.dump(node)
    assert "\n" not in rendered and "#" not in rendered.replace("'#'", "")


NASTY_STRINGS = [
    "it's",
    'say "hi"',
    "back\\slash",
    "new\nline",
    "{{ config }}",
    "{% raw %}",
    "__import__('os').system('x')",
    "\u2028",
    "é",
    "'''",
    "\x00",
]


@pytest.mark.parametrize("text", NASTY_STRINGS)
def test_strings_are_re_emitted_never_copied(text):
    source = f"where(approximate == {text!r}, self, 0)"
    rendered = render_python(parse_expression(source, NAMES, loc=LOC))
    assert_safe_python(rendered, NAMES, strings=[text])
    assert rendered.isascii() and rendered.isprintable()
    (compare,) = [n for n in ast.walk(ast.parse(rendered, mode="eval")) if isinstance(n, ast.Compare)]
    assert compare.comparators[0].value == text  # the same value, re-emitted with ascii()
    outside_literal = rendered.replace(ascii(text), "")
    for fragment in ("{{", "{%", "__import__", "\\", '"'):
        assert fragment not in outside_literal


def test_comments_and_spacing_do_not_reach_rendered_code():
    a = parse_expression("self*2   # {{ evil }} __import__('os')", NAMES, loc=LOC)
    b = parse_expression("(\n  self\n  * 2\n)", NAMES, loc=LOC)
    assert render_python(a) == render_python(b) == "self * m.lit(2)"
    assert a.tree == b.tree


def test_precedence_is_preserved_with_minimal_parentheses():
    cases = {
        "(self + 1) * 2": "(self + m.lit(1)) * m.lit(2)",
        "self + 1 * 2": "self + m.lit(1) * m.lit(2)",
        "self - (grad_output - 1)": "self - (grad_output - m.lit(1))",
        "(self - grad_output) - 1": "self - grad_output - m.lit(1)",
        "self / (grad_output * 2)": "self / (grad_output * m.lit(2))",
        "-self ** 2": "-self ** m.lit(2)",
        "(-self) ** 2": "(-self) ** m.lit(2)",
        "self ** -grad_output": "self ** -grad_output",
        "(self ** 2) ** 3": "(self ** m.lit(2)) ** m.lit(3)",
        "self ** 2 ** 3": "self ** m.lit(2) ** m.lit(3)",
        "--self": "--self",
        "~((self > 0) | (self < 1)) & (self == 2)": "~((self > m.lit(0)) | (self < m.lit(1))) & (self == m.lit(2))",
        "(self > 0) == (grad_output > 0)": "(self > m.lit(0)) == (grad_output > m.lit(0))",
        "2 * pi": "m.lit(2) * m.pi",
        "-inf < nan": "-m.inf < m.nan",
    }
    for source, expected in cases.items():
        expr = parse_expression(source, NAMES, loc=LOC)
        assert render_python(expr) == expected, source
        # Python agrees that the rendering has the same structure as the source
        assert ast.dump(ast.parse(render_formula(expr), mode="eval")) == ast.dump(ast.parse(source, mode="eval")), (
            source
        )


def test_rendering_is_deterministic_across_processes():
    script = (
        "from aclnngen.codegen import formula as f\n"
        "import re, yaml, pathlib\n"
        f"text = pathlib.Path({str(DOC)!r}).read_text()\n"
        "for block in re.findall(r'```yaml\\n(.*?)```', text, flags=re.S):\n"
        "    d = yaml.safe_load(block)\n"
        "    if 'parameters' not in d: continue\n"
        "    p = f.parse_program(d['outputs'], d['parameters'], lets=d.get('lets') or {}, loc=())\n"
        "    print(f.render_program(p), f.comparison_boundaries(p), f.classify(p))\n"
    )
    outputs = set()
    for seed in ("1", "2", "3"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        result = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True)
        outputs.add(result.stdout)
    assert len(outputs) == 1 and "m.where" in outputs.pop()


def test_render_formula_round_trips_the_examples():
    for prog in EXAMPLES.values():
        for _, expr in prog.lets + prog.outputs:
            names = {**NAMES, **{n: "input" for n in ("s", "exact", "approx", "k", "t")}}
            assert parse_expression(render_formula(expr), names, loc=LOC).tree == _as_inputs(expr.tree)


def _as_inputs(tree):
    """Lets are re-parsed above as inputs: the same tree with let names' kind changed."""
    if isinstance(tree, formula.Name) and tree.kind == "let":
        return formula.Name(tree.id, "input")
    if isinstance(tree, formula.Unary):
        return formula.Unary(tree.op, _as_inputs(tree.operand))
    if isinstance(tree, (formula.Binary, formula.Compare)):
        return type(tree)(tree.op, _as_inputs(tree.left), _as_inputs(tree.right))
    if isinstance(tree, formula.Call):
        return formula.Call(tree.function, tuple(map(_as_inputs, tree.args)))
    return tree


# --- analysis --------------------------------------------------------------------------------------


def test_comparison_boundaries_of_the_examples():
    assert comparison_boundaries(EXAMPLES["hardtanh"]) == [("self", "min"), ("self", "max")]
    assert sorted(comparison_boundaries(EXAMPLES["softshrink"])) == [("self", "-lambd"), ("self", "lambd")]
    assert comparison_boundaries(EXAMPLES["prelu"]) == [("self", "0")]
    assert comparison_boundaries(EXAMPLES["gelu"]) == []
    assert comparison_boundaries(EXAMPLES["swish"]) == []


def boundaries(output: str, lets=None):
    names = {**NAMES, "beta": "scalar"}
    return comparison_boundaries(parse_program({"grad_input": output}, names, lets=lets or {}, loc=()))


def test_comparison_boundaries_follow_lets_abs_constants_and_skip_tensors():
    assert boundaries("where(abs(self) > round_to(lambd, self), grad_output, 0)") == [
        ("self", "-lambd"),
        ("self", "lambd"),
    ]
    assert boundaries("where(self > t, grad_output, 0)", lets={"t": "round_to(lambd, self)"}) == [("self", "lambd")]
    assert boundaries("where(mask, grad_output, 0)", lets={"mask": "2 * min <= grad_output"}) == [
        ("grad_output", "2 * min")
    ]
    assert boundaries("where(self > pi / 2, 1, 0)") == [("self", "math.pi / 2")]
    assert boundaries("where(self > grad_output, 1, 0)") == []
    assert boundaries("where(self > exp(beta), 1, 0)") == []  # not plain arithmetic: not reported
    assert boundaries("where((self > min) & (grad_output < -(max - 1.5)), 1, 0)") == [
        ("self", "min"),
        ("grad_output", "-(max - 1.5)"),
    ]


def test_classify():
    assert classify(EXAMPLES["hardtanh"]) == {"grad_input": "selection"}
    assert classify(EXAMPLES["softshrink"]) == {"grad_input": "selection"}
    assert classify(EXAMPLES["prelu"]) == {"grad_input": "selection", "grad_weight": "reduction"}
    assert classify(EXAMPLES["gelu"]) == {"grad_input": "transcendental"}
    assert classify(EXAMPLES["swish"]) == {"grad_input": "transcendental"}  # through the let
    names = {"self": "input", "out": "output"}
    kind = lambda source: classify(parse_program({"out": source}, names, loc=()))["out"]  # noqa: E731
    # bit-exact only where each output value is rounded at most once (a selection of such values)
    assert kind("self ** 2") == "selection"
    assert kind("sqrt(abs(self))") == "selection"
    assert kind("where(self > 0, self * 0.5, -conj(self))") == "selection"
    assert kind("where((self * self) > 1, maximum(self, 0), self / 3)") == "selection"  # conditions do not count
    assert kind("self ** 2 + sqrt(abs(self))") == "arithmetic"  # three roundings
    assert kind("self * self * self") == "arithmetic"
    assert kind("where(self > 0, self, 1 - self * self)") == "arithmetic"
    assert kind("self ** 3") == "transcendental"
    assert kind("sum(exp(self), (0,))") == "reduction"
    assert kind("tanh(self)") == "transcendental"


def test_classify_treats_extern_as_needing_a_tolerance(monkeypatch):
    monkeypatch.setitem(externs.EXTERN_KERNELS, "identity", lambda m, x: x)
    prog = parse_program({"out": 'extern("identity", self)'}, {"self": "input", "out": "output"}, loc=())
    assert classify(prog) == {"out": "transcendental"}


# --- documentation ---------------------------------------------------------------------------------


def test_every_function_in_the_table_is_documented():
    text = DOC.read_text()
    for function in FUNCTIONS.values():
        signature = "extern(kernel, args...)" if function.variadic else function.signature
        assert f"`{signature}`" in text, signature
    for constant in CONSTANTS:
        assert f"`{constant}`" in text


@pytest.mark.needs_torch
def test_the_documented_gelu_with_an_approximate_attribute_matches_torch():
    torch = pytest.importorskip("torch")
    example = doc_examples()[-1]
    body = compile_body(program_of(example), example["parameters"])
    rng = np.random.default_rng(0)
    x, g = rng.normal(0, 3, 5000).astype(np.float32), rng.normal(0, 1, 5000).astype(np.float32)
    for approximate in ("none", "tanh"):
        (ours,) = evaluate(
            body,
            inputs={"grad_output": g, "self": x},
            scalars={},
            attributes={"approximate": approximate},
            output_dtypes={"grad_input": np.float32},
        )
        with torch.backends.mkldnn.flags(enabled=False):
            theirs = torch.ops.aten.gelu_backward(
                torch.from_numpy(g), torch.from_numpy(x), approximate=approximate
            ).numpy()
        np.testing.assert_allclose(ours, theirs, rtol=1.3e-6, atol=1e-5 * np.abs(g).max())


# --- properties ------------------------------------------------------------------------------------

PROPERTY_NAMES = {
    "grad_output": "input",
    "self": "input",
    "beta": "scalar",
    "lambd": "optional_scalar",
    "approximate": "attribute",
    "grad_input": "output",
}
NUMBER_LEAVES = st.one_of(
    st.sampled_from(["grad_output", "self", "beta", "lambd", "pi", "inf", "nan"]),
    st.integers(0, 10**6).map(str),
    st.floats(0, 1e300, allow_nan=False, allow_infinity=False).map(repr),
)
ELEMENTWISE_1 = [f for f, fn in FUNCTIONS.items() if fn.args == (("x", "num"),) and fn.result == "num"]


@st.composite
def expressions(draw, type_="num", depth=0, elementwise_only=False):
    """Random well-typed source text using only whitelisted constructs."""

    def sub(t="num"):
        return draw(expressions(t, depth + 1, elementwise_only))

    if type_ == "bool":
        choice = draw(st.integers(0, 5 if depth < 4 else 1))
        if choice == 0:
            return f"({sub()} {draw(st.sampled_from(['<', '<=', '>', '>=', '==', '!=']))} {sub()})"
        if choice == 1:
            return draw(
                st.sampled_from(['(approximate == "tanh")', "('none' != approximate)", "True", "False", "isnan(self)"])
            )
        if choice in (2, 3):
            return f"({sub('bool')} {draw(st.sampled_from(['&', '|']))} {sub('bool')})"
        if choice == 4:
            return f"~{sub('bool')}"
        return f"isnan({sub()})"
    choice = draw(st.integers(0, 7 if depth < 4 else 0))
    if choice == 0:
        return draw(NUMBER_LEAVES)
    if choice in (1, 2):
        return f"({sub()} {draw(st.sampled_from(['+', '-', '*', '/', '**']))} {sub()})"
    if choice == 3:
        return f"{draw(st.sampled_from(['-', '+']))}{sub()}"
    if choice == 4:
        return f"{draw(st.sampled_from(ELEMENTWISE_1))}({sub()})"
    if choice == 5:
        return f"where({sub('bool')}, {sub()}, {sub()})"
    if choice == 6:
        return f"{draw(st.sampled_from(['minimum', 'maximum']))}({sub()}, {sub()})"
    if elementwise_only:
        return f"round_to({sub()}, {draw(st.sampled_from(['self', 'grad_output']))})"
    return draw(
        st.sampled_from(
            [
                f"round_to({sub()}, self)",
                f"per_channel({sub()}, self)",
                f"sum_per_channel({sub()}, beta)",
                f"sum({sub()}, (0, -1))",
                f"sum({sub()}, approximate)",
            ]
        )
    )


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(expressions())
def test_whitelisted_expressions_parse_render_safely_and_round_trip(source):
    expr = parse_expression(source, PROPERTY_NAMES, loc=LOC)
    assert isinstance(expr, Expression)
    rendered = render_python(expr)
    assert_safe_python(rendered, PROPERTY_NAMES, strings=["tanh", "none", "self", "grad_output"])
    assert rendered == render_python(parse_expression(source, PROPERTY_NAMES, loc=LOC))
    assert parse_expression(render_formula(expr), PROPERTY_NAMES, loc=LOC).tree == expr.tree


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(expressions(elementwise_only=True), st.sampled_from(["opmath", "golden"]))
def test_whitelisted_expressions_evaluate_to_the_storage_dtype(source, mode):
    prog = parse_program({"grad_input": source}, PROPERTY_NAMES, loc=("f",))
    body = compile_body(prog, PROPERTY_NAMES)
    x = np.array([[-2.0, -0.0, 0.5], [3.0, np.nan, np.inf]], np.float16)
    (out,) = evaluate(
        body,
        inputs={"grad_output": x[::-1], "self": x},
        scalars={"beta": 1.5, "lambd": 0.5},
        attributes={"approximate": "tanh"},
        output_dtypes={"grad_input": np.float16},
        mode=mode,
    )
    assert isinstance(out, np.ndarray) and out.shape in ((), (2, 3))
    assert out.dtype == (np.float64 if mode == "golden" else np.float16)


JUNK = st.one_of(
    st.text(max_size=60),
    st.lists(
        st.sampled_from(
            [
                "self",
                "grad_output",
                "grad_input",
                "lambda",
                "(",
                ")",
                "[",
                "]",
                ",",
                ":",
                ".",
                "+",
                "-",
                "*",
                "/",
                "**",
                "//",
                "&",
                "|",
                "~",
                "not",
                "and",
                "if",
                "else",
                "<",
                "==",
                "1",
                "2.5",
                "1e999",
                "'s'",
                '"tanh"',
                "f'{x}'",
                "exp",
                "where",
                "sum",
                "(0,)",
                "extern",
                "round_to",
                "approximate",
                "lambd",
                "__import__",
                "\\",
                "\n",
                " ",
                "#",
                "{{",
                "}}",
                "=",
                ":=",
                "for",
                "in",
                "x",
                "lambda:",
                "@",
            ]
        ),
        max_size=25,
    ).map("".join),
)


@settings(max_examples=1500, deadline=None)
@given(JUNK)
def test_junk_only_ever_raises_field_problem(source):
    try:
        expr = parse_expression(source, PROPERTY_NAMES, loc=LOC)
    except FieldProblem as error:
        assert error.loc == LOC and error.message
        return
    assert_safe_python(
        render_python(expr),
        PROPERTY_NAMES,
        strings=[n.value for n in formula._walk(expr.tree) if isinstance(n, formula.Literal) and n.type == "str"]
        + list(PROPERTY_NAMES),
    )


def test_a_where_on_attributes_alone_computes_only_the_branch_taken(monkeypatch):
    """where(cond, a, b) whose cond reads no tensor renders as a Python conditional, and a let
    only the other branch needs is never computed."""
    import numpy as np

    from aclnngen.codegen import formula as f

    names = {"x": "input", "g": "input", "mode": "attribute", "k": "scalar", "out": "output"}
    prog = f.parse_program(
        {"out": "g * where(mode == 'fast', fast, slow)"},
        names,
        lets={"fast": "x * 2", "slow": "erf(x) + k", "mask": "x > 0"},
        loc=("formula",),
    )
    lines = f.render_program(prog)
    assert "fast = m.lazy(lambda: " in lines[0] and "slow = m.lazy(lambda: " in lines[1]
    assert "(fast() if m.truth(mode == 'fast') else slow())" in lines[-1]
    tensor_cond = f.parse_program({"out": "where(x > k, g, 0)"}, names, loc=("formula",))
    assert "m.where(x > k, g, m.lit(0))" in f.render_program(tensor_cond)[-1]  # a tensor condition: both sides

    def no_erf(self, x):
        raise AssertionError("erf computed for a branch not taken")

    monkeypatch.setattr(numerics.Numerics, "erf", no_erf)
    scope: dict = {}
    exec("def body(m, x, g, mode, k):\n" + "\n".join("    " + line for line in lines), scope)  # the rendered body

    def run(mode):
        x = np.linspace(-3, 3, 7, dtype=np.float32)
        return numerics.evaluate(
            scope["body"],
            inputs={"x": x, "g": np.ones_like(x)},
            scalars={"k": 1.0},
            attributes={"mode": mode},
            output_dtypes={"out": np.dtype(np.float32)},
        )[0]

    assert np.array_equal(run("fast"), np.linspace(-3, 3, 7, dtype=np.float32) * 2)  # erf never computed
    with pytest.raises(AssertionError, match="not taken"):
        run("slow")
