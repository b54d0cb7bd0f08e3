"""The checks generated tests call: one function per kind of test, generic over an op's metadata.

A generated test module lists its cases (ids, families, dtypes) and hands each one here, so the
mechanism (building data, the tolerance policy, comparing with the oracle, provoking each return
code) is written once.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import ModuleType
from typing import Any, Callable, Mapping

import ml_dtypes
import numpy as np

from aclnngen.runtime import session
from aclnngen.core.dtypes import ALL_DTYPES, category, promote_names
from aclnngen.runtime.errors import AclnnValidationError
from aclnngen.runtime.poison import is_poisoned
from aclnngen.runtime.shapes import NUMPY_DTYPES, dtype_name_of
from aclnngen.core.rules import supported_dtypes
from aclnngen.runtime.validation import validate

from aclnngen.core import arithmetic as arithmetic_facts
from aclnngen.core import externs, planning
from aclnngen.core.kinds import BY_NAME
from aclnngen.core.meta import OpMeta, Param, op_meta
from aclnngen.evaluate.numerics import storage_dtype

from . import cases, directives, oracle

# Unit roundoff per dtype, for the bound of a reduction's error.
UNIT_ROUNDOFF = {"float16": 2.0**-11, "bfloat16": 2.0**-8, "float32": 2.0**-24, "float64": 2.0**-53}
# rtol/atol for transcendental results, as torch.testing does per dtype; atol scales with |grad|.
TRANSCENDENTAL = {
    "float16": (1e-3, 1e-5),
    "bfloat16": (1.6e-2, 1e-5),
    "float32": (1.3e-6, 1e-5),
    "float64": (1e-7, 1e-7),
}
# The vendor's single-benchmark precision standard (torch-oracle.md section 4): mean relative error
# below the threshold and the largest below ten times it. float64 is not in the standard; 2^-30
# is this project's choice: cancellation (1 - y*y near y = 1) amplifies a 2^-53 rounding by the
# ratio of the operands to the result, which float64 data reaches far further than float32.
MERE_THRESHOLD = {"float16": 2.0**-10, "bfloat16": 2.0**-7, "float32": 2.0**-13, "float64": 2.0**-30}
MARE_RATIO = 10
# Below this |golden| relative error means nothing (cancellation): the standard judges such
# elements by absolute error; ours bounds it by ARITHMETIC_ULPS units of max|grad|.
SMALL_VALUE = {"float16": 2.0**-11, "bfloat16": 2.0**-8, "float32": 2.0**-14, "float64": 2.0**-31}
ARITHMETIC_ULPS = 8
REDUCTION_RTOL = {"float16": 1e-2, "bfloat16": 1.6e-2, "float32": 1e-5, "float64": 1e-12}
REAL_PART = {"complex64": "float32", "complex128": "float64"}
ULPS_AROUND = 3  # adversarial data: values within this many ULP of each boundary and root
DATA_SHAPE = (8, 16, 32)


def binding_args(meta: Mapping, values: Mapping[str, Any]) -> tuple[list, dict]:
    """(positional, keywords) to call a generated binding with C-named `values`: the leading inputs
    by position, every later parameter but the outputs by its Python name (in C order a scalar or
    attribute may come before an input)."""
    positional, keywords = [], {}
    for p in op_meta(meta).params:
        if p.role == "output":
            continue
        # an optional input moves behind the required parameters in the binding: by name
        if p.role == "input" and not p.optional and not keywords:
            positional.append(values.get(p.name))
        else:
            keywords[p.py] = values.get(p.name)
    return positional, keywords


@dataclass
class OpUnderTest:
    meta: Mapping
    reference: ModuleType | None  # the generated reference module (None: a binding-tier op)
    binding: Callable
    version: str
    tests_file: str | None = None  # the generated test module: its directives are the ones near it

    def directives(self):
        return directives.load(directives.near(self.tests_file))

    @property
    def typed(self) -> OpMeta:
        """The op's META as typed objects (core/meta.py)."""
        return op_meta(self.meta)

    @property
    def name(self) -> str:
        return self.typed.name

    @property
    def package(self) -> str:
        """The package the op belongs to: the one its reference module is in (its binding's, for
        a binding-tier op, which has no reference)."""
        if self.reference is None:
            return self.binding.__module__.rpartition(".ops.")[0]
        return self.reference.__name__.rpartition(".reference.")[0]

    def of_roles(self, *roles: str) -> tuple[Param, ...]:
        """The typed parameters of these roles (core/meta.py), in prototype order."""
        return self.typed.by_role(*roles)

    def split(self, values: Mapping[str, Any]):
        """C-named values -> (the leading inputs, positionally; every later parameter by py name, since
        a scalar may come before an input in C order; outputs by py name)."""
        positional, keywords = binding_args(self.meta, values)
        outputs = {p.py: values.get(p.name) for p in self.of_roles("output")}
        return positional, keywords, outputs

    def case(self, test: str, family: str | None, dtype: str | None, *values, id: str):
        """A pytest case of this op, marked with its scope so tests/directives.yaml can apply."""
        import pytest  # deferred: weight, and `aclnngen run` needs no pytest

        marker = pytest.mark.aclnngen_case(op=self.name, test=test, family=family, dtype=dtype, package=self.package)
        return pytest.param(*values, id=id, marks=marker)

    def group(self, test: str, family: str, dtype: str | None, cases: list[tuple], *, id: str):
        """One pytest item running several cases (check_group), each `(case id, its dtype, the
        check's arguments...)`; the marker lists every case so directives apply to each one."""
        import pytest  # deferred, as in case()

        marker = pytest.mark.aclnngen_case(
            op=self.name,
            test=test,
            family=family,
            dtype=dtype,
            package=self.package,
            cases=tuple((case[0], case[1]) for case in cases),
        )
        return pytest.param(family, cases, id=id, marks=marker)

    def run_oracle(self, by_py: Mapping[str, Any], output_dtypes) -> tuple:
        """The spec's oracle on `by_py` (Python names), its `{expr: ...}` arguments computed by the
        generated reference; an oracle with `compute` stores its results in `output_dtypes`."""
        return oracle.run(
            self.typed.oracle,
            by_py,
            expressions=getattr(self.reference, "oracle_argument", None),
            output_dtypes=output_dtypes,
            to_integer=arithmetic_facts.to_integer(op_meta(self.meta).arithmetic),
        )

    def outside_oracle_domain(self, by_py: Mapping[str, Any]) -> str | None:
        """None where the oracle is consulted for these values (Python names), else why not: the
        spec's oracle `domain` (where the vendor differs from PyTorch on purpose)."""
        domain = self.typed.oracle.get("domain")
        if not domain:
            return None
        scalars = {k: v for k, v in by_py.items() if not isinstance(v, np.ndarray)}
        if self.reference.oracle_argument(externs.oracle_domain_source(domain["where"]), scalars):
            return None
        return f"outside the oracle's domain ({domain['where']}): {domain['reason']}"

    def run_reference(self, values: Mapping[str, Any], **options):
        positional, keywords, _ = self.split(values)
        result = self.reference.reference(*positional, **keywords, **options)
        return result if isinstance(result, tuple) else (result,)


# --- grouped cases --------------------------------------------------------------------------------


def check_group(op: OpUnderTest, node, check: Callable, family: str, cases: list[tuple]) -> None:
    """Runs `check(op, family, *arguments)` for every `(case id, dtype, *arguments)` of a grouped
    test and judges them together, as pytest judged them one by one: every case runs; a failure
    names its case; a case tests/directives.yaml expects to fail must fail (one that passes is
    reported as XPASS(strict)); when the only failures are expected ones, the test is an xfail."""
    import pytest  # deferred, as in OpUnderTest.case

    from .pytest_plugin import EXPECTED  # deferred: the plugin imports pytest

    expected = node.stash.get(EXPECTED, {})
    problems, known = [], []
    for case_id, _dtype, *arguments in cases:
        directive = expected.get(case_id)
        try:
            check(op, family, *arguments)
        except (Exception, pytest.fail.Exception) as exc:  # every failure is reported with its case
            if directive is None:
                problems.append(f"[{case_id}] {type(exc).__name__}: {exc}")
            else:
                known.append(f"[{case_id}] {directive.reason}")
            continue
        if directive is not None:
            problems.append(f"[{case_id}] XPASS(strict): {directive.reason}")
    if problems:
        pytest.fail(f"{len(problems)} of {len(cases)} cases failed:\n" + "\n".join(problems), pytrace=False)
    if known:
        pytest.xfail("; ".join(known))


# --- validator ----------------------------------------------------------------------------------


def _formats(op: OpUnderTest, values: Mapping, family: str) -> dict[str, str]:
    """The formats of a case's tensors that cannot be ND on `family` (C name -> format name)."""
    shapes = {n: np.shape(v) for n, v in values.items() if isinstance(v, np.ndarray)}
    return planning.case_formats(op.meta, op.version, family, shapes)


def _expect(op: OpUnderTest, values: Mapping, family: str, status: int, param: str | None = None) -> None:
    formats = _formats(op, values, family)
    if status == 0:
        validate(op.meta, values, family=family, version=op.version, formats=formats)
        return
    try:
        validate(op.meta, values, family=family, version=op.version, formats=formats)
    except AclnnValidationError as exc:
        assert exc.status == status, f"expected status {status}, got {exc.status}: {exc}"
        assert exc.param or "not supported on product family" in str(exc), f"the error names no parameter: {exc}"
        if param is not None:
            assert exc.param == param, f"expected the error to name {param!r}: {exc}"
        assert exc.op == op.name and exc.family == family, str(exc)
        return
    raise AssertionError(f"{op.name} accepted the input on {family}; expected status {status}")


def _own(op: OpUnderTest, case: str, dtype: str, family: str) -> dict:
    """A case's values with each input of its own dtype list: `dtype` where the input takes it."""
    return dict(cases.make_values(op.meta, case, dtype, version=op.version, family=family, own_dtypes=True))


def check_dtype(op: OpUnderTest, family: str, dtype: str, accepted: bool) -> None:
    values = cases.make_values(op.meta, "contiguous", dtype, version=op.version, family=family)
    _expect(op, values, family, 0 if accepted else 161002)


def check_shape_case(op: OpUnderTest, family: str, dtype: str, kind: str, status: int) -> None:
    _expect(op, _own(op, kind, dtype, family), family, status)


def _home_dtype(op: OpUnderTest, family: str) -> str:
    """float32 where the first input (an op without inputs: its first output) takes it on
    `family`, else its first supported dtype."""
    name = (op.of_roles("input") or op.of_roles("output"))[0].name
    supported = supported_dtypes(op.meta, name, family, op.version)
    return "float32" if "float32" in supported or not supported else supported[0]


def check_conditional_dtype(op: OpUnderTest, family: str, dtype: str, context: Mapping) -> None:
    """A dtype allowed only under a condition (`when`): refused without it where the plain list
    lacks it, accepted with it, and the binding then agrees with the reference bit-wise."""
    values = dict(cases.make_values(op.meta, "contiguous", dtype, version=op.version, family=family))
    first = op.of_roles("input")[0].name
    if dtype not in supported_dtypes(op.meta, first, family, op.version) and not planning.condition_holds(
        {"when": context}, values
    ):
        _expect(op, values, family, 161002)
    _expect(op, {**values, **context}, family, 0)
    _binding_matches_reference(op, family, dtype, "contiguous", context, own=False)


def check_null(op: OpUnderTest, family: str, param: str) -> None:
    values = _own(op, "contiguous", "float32", family)
    values[param] = None
    _expect(op, values, family, 161001, param)


def check_scalar(op: OpUnderTest, family: str, param: str, value: float, status: int, context: Mapping = {}) -> None:
    """`param` at a value outside its bound is refused; `context` sets the values that make a
    conditional bound apply (and without them the same value is accepted)."""
    values = _own(op, "contiguous", _home_dtype(op, family), family)
    if context:
        values[param] = value
        _expect(op, values, family, 0)  # the condition does not hold: the bound does not apply
        values.update(context)
    values[param] = value
    _expect(op, values, family, status, param)


def _unsupported_dtype(op: OpUnderTest, param: str, family: str | None, values: Mapping | None = None) -> str:
    """A dtype `param`'s list lacks on `family`; for an input whose dtype a rule promotes with
    others' (`values` their arrays), one whose promotion with theirs is unsupported or none, so
    the promoted dtype does not land back in the lists (uint16 beside float32 is float32)."""
    supported = set(supported_dtypes(op.meta, param, family, op.version)) if family else set()
    preferred = ("float64", "complex128", "int64", "int32", "bool", "uint8", "uint16", "uint32", "uint64", "int16")
    candidates = [n for n in dict.fromkeys(preferred + ALL_DTYPES) if n not in supported]
    if not candidates:
        raise AssertionError(f"{param} supports every dtype on {family}: no dtype violates it")
    promoting = op.typed.rules if values is not None else ()
    for rule in (r for r in promoting if r.kind.promotes_inputs and param in r.data["inputs"]):
        others = [
            dtype_name_of(values[n].dtype)
            for n in rule.data["inputs"]
            if n != param and isinstance(values.get(n), np.ndarray)
        ]
        lists = [set(supported_dtypes(op.meta, n, family, op.version)) for n in rule.data["inputs"]] if family else []
        for name in candidates:
            promoted = promote_names([name, *others])
            if promoted is None or any(promoted not in allowed for allowed in lists):
                return name
    return candidates[0]


def _violate(op: OpUnderTest, values: dict, check: str, param: str, family: str | None = None) -> dict:
    """Break one parameter so that the row `check` is what it violates."""
    meta = op.meta
    value = values[param]
    if check == "null_pointer":
        values[param] = None
    elif check == "attribute_value":  # a value outside the attribute's choices, or a dim past the rank
        attribute = op.typed.param(param)
        if attribute.dim_of:
            values[param] = max(np.ndim(values[attribute.dim_of]), 1)
        else:
            values[param] = "".join(sorted(attribute.choices)) + "_not_a_choice"
    elif check == "scalar_range":
        plain = [(v, {}) for name, v, _ in planning.scalar_violations(meta, op.version) if name == param]
        conditional = [
            (v, when) for name, v, _, when in planning.conditional_violations(meta, op.version) if name == param
        ]
        bad, when = (plain + conditional)[0]
        values.update(when)  # a conditional bound applies only with its condition set
        values[param] = bad
    elif check == "dtype":
        bad = NUMPY_DTYPES[_unsupported_dtype(op, param, family, values)]
        if isinstance(value, list):  # a tensor list: its last element alone breaks it
            values[param] = [*value[:-1], value[-1].astype(bad)]
        else:
            values[param] = value.astype(bad)
    elif check in BY_NAME:  # a rule kind says how to break it
        kind = BY_NAME[check]
        rules = [r.data for r in op.typed.rules if r.kind is kind]
        values[param] = _provoked(
            op, param, family, value, kind.provoke(rules, param, value.shape, dtype_name_of(value.dtype))
        )
    else:
        raise AssertionError(f"no way to violate check {check!r}")
    return values


def _provoked(op: OpUnderTest, param: str, family, value, how):
    """A kind's Provocation as the array that breaks its rule."""
    if how.unsupported_dtype:
        # a dtype outside the parameter's list on the family (for a promoted input, the promoted
        # dtype leaves the list too: it is the widest of the unsupported float or complex ones)
        return value.astype(NUMPY_DTYPES[_unsupported_dtype(op, param, family)])
    if how.dtype is not None:
        return value.astype(NUMPY_DTYPES[how.dtype])
    if how.strided:
        return np.repeat(value, 2, axis=-1)[..., ::2]
    return np.zeros(how.shape, dtype=value.dtype)


def check_return_code(op: OpUnderTest, family: str, row: int, check: str, param: str, status: int) -> None:
    values = _own(op, "contiguous", "float32", family)
    _expect(op, _violate(op, values, check, param, family), family, status)


# --- reference against the oracle ---------------------------------------------------------------


def _ulp_neighbours(value: float, dtype: np.dtype) -> np.ndarray:
    """`value` rounded to `dtype` and its neighbours within ULPS_AROUND ULP, both signs of zero."""
    center = np.asarray(value, dtype=np.float64).astype(dtype)
    out = [center]
    up = down = center
    for _ in range(ULPS_AROUND):
        up = (
            np.nextafter(up.astype(np.float64), np.inf).astype(dtype)
            if dtype == ml_dtypes.bfloat16
            else np.nextafter(up, np.asarray(np.inf, dtype))
        )
        down = (
            np.nextafter(down.astype(np.float64), -np.inf).astype(dtype)
            if dtype == ml_dtypes.bfloat16
            else np.nextafter(down, np.asarray(-np.inf, dtype))
        )
        out += [up, down]
    return np.array(out, dtype=dtype)


def _roots(op: OpUnderTest, scalars: Mapping) -> list[float]:
    """Sign changes of each output over x in [-10, 10] with a unit gradient, refined by bisection in
    float64: the roots near which relative error means nothing."""
    x = np.linspace(-10, 10, 4001)
    values = _with_inputs(op, x, np.ones_like(x), scalars)
    roots: list[float] = []
    for out in op.run_reference(values, mode="golden"):
        out = np.broadcast_to(out, x.shape) if out.shape != x.shape else out
        if out.ndim != 1:
            continue
        signs = np.sign(out)
        for i in np.nonzero(signs[:-1] * signs[1:] < 0)[0]:
            lo, hi = x[i], x[i + 1]
            for _ in range(60):
                mid = (lo + hi) / 2
                fm = op.run_reference(_with_inputs(op, np.array([mid]), np.ones(1), scalars), mode="golden")[0]
                if np.sign(fm[0]) == np.sign(out[i]):
                    lo = mid
                else:
                    hi = mid
            roots.append(float((lo + hi) / 2))
    return roots


def _with_inputs(op: OpUnderTest, x: np.ndarray, g: np.ndarray, scalars: Mapping) -> dict:
    """Values where the first input is the gradient, the second the data x, any further input (a
    weight) a single element."""
    inputs = op.of_roles("input")
    values = dict(scalars)
    values[inputs[0].name] = g
    values[inputs[1].name] = x
    for p in inputs[2:]:
        values[p.name] = np.full((1,), 0.25, dtype=x.dtype)
    return values


def _scalars(op: OpUnderTest) -> dict:
    """Scalar values for test data, each exactly representable in the dtype of the aclScalar the
    binding creates, so the device, the reference and the oracle all see the same number."""
    dtypes = {p.name: p.scalar_dtype for p in op.of_roles("scalar", "optional_scalar")}
    chosen = {}
    for name, value in planning.scalar_values(op.meta).items():
        dtype = NUMPY_DTYPES.get(dtypes.get(name) or "")
        if dtype is not None and dtype.kind in "fc" and isinstance(value, float):
            value = float(dtype.type(value))
        chosen[name] = value
    return chosen


def adversarial_values(
    op: OpUnderTest,
    dtype: str,
    data: str,
    seed: int = 0,
    overrides: Mapping | None = None,
    dtypes: Mapping[str, str] | None = None,
) -> dict:
    """Inputs for the reference-vs-oracle comparison: `data` is adversarial (boundaries, roots,
    signed zeros, tiny and huge magnitudes; integers at their range's edges), special-values (NaN
    and inf too, for floats and complex) or random. Integer, bool and complex dtypes get data of
    their own category. Every input has `dtype`, or its own from `dtypes` (C name -> dtype name:
    a mixed combination); each dtype's data is drawn as a case of that dtype alone would draw it."""
    scalars = {**_scalars(op), **(overrides or {})}
    drawn: dict[str, tuple] = {}  # dtype name -> (g, x, rng, its numpy dtype, its category)

    def draw(name: str) -> tuple:
        if name not in drawn:
            dt = storage_dtype(NUMPY_DTYPES[name] if name in NUMPY_DTYPES else name)
            rng = np.random.default_rng(seed)
            n = int(np.prod(DATA_SHAPE))
            kind = category(dtype_name_of(dt))
            if kind == "float":
                g, x = _float_data(op, dt, data, rng, n, scalars)
            elif kind == "complex":
                g, x = _complex_data(dt, data, rng, n)
            else:
                g, x = _exact_data(op, dt, data, rng, n, scalars)
            drawn[name] = (g, x, rng, dt, kind)
        return drawn[name]

    values = dict(scalars)
    for p, meaning in _meanings(op):
        g, x, rng, dt, kind = draw((dtypes or {}).get(p.name, dtype))
        if meaning == "gradient":
            values[p.name] = g.reshape(DATA_SHAPE)
        elif meaning == "forward_input":
            values[p.name] = x.reshape(DATA_SHAPE)
        elif meaning == "forward_output":  # a value the forward function can produce
            values[p.name] = op.reference.forward(p.py, x.reshape(DATA_SHAPE), scalars)
        elif meaning == "weight":  # one value per channel of dim 1, negative ones too
            w = rng.uniform(-0.5, 1.0, DATA_SHAPE[1])
            values[p.name] = (w > 0.25 if kind == "bool" else np.round(w * 4) if kind == "integer" else w).astype(dt)
        else:  # unused: any data of the dtype
            values[p.name] = rng.permutation(x).reshape(DATA_SHAPE)
    return values


def _meanings(op: OpUnderTest) -> list[tuple[Mapping, str]]:
    """Each input with its meaning: as the spec states it, else by position (the first input the
    gradient, the second the forward input, any further one a per-channel weight)."""
    inputs = [p for p in op.of_roles("input") if not p.is_list]  # a formula reads no list
    if any(p.meaning for p in inputs):
        return [(p, p.meaning or "unused") for p in inputs]
    return [(p, "gradient" if i == 0 else "forward_input" if i == 1 else "weight") for i, p in enumerate(inputs)]


def _float_data(op, dt, data, rng, n, scalars):
    x = rng.normal(0.0, 3.0, n)
    g = rng.normal(0.0, 1.0, n)
    loud = rng.random(n) < 0.05
    g[loud] = rng.uniform(-100.0, 100.0, int(loud.sum()))
    x = x.astype(dt)
    if data in ("adversarial", "special-values"):
        points = [float(t) for _, t in op.reference.boundaries(**_scalar_py(op, scalars))]
        # roots of the formula are in the data's terms only when the data is the forward input
        forward_input = all(m != "forward_output" for _, m in _meanings(op))
        points += _roots(op, scalars) if _classified(op, "transcendental") and forward_input else []
        points += [0.0, -0.0, 1.0, -1.0]
        info = ml_dtypes.finfo(dt)
        special = [float(info.tiny), -float(info.tiny), float(info.smallest_subnormal), 1e4, -1e4]
        if not _classified(op, "transcendental"):
            special += [float(info.max), -float(info.max)]  # selection ops take any magnitude
        chosen = np.concatenate(
            [_ulp_neighbours(p, dt) for p in points] + [np.array(special, dtype=np.float64).astype(dt)]
        )
        if data == "special-values":
            chosen = np.concatenate([chosen, np.array([np.nan, np.inf, -np.inf], dtype=np.float64).astype(dt)])
        place = rng.permutation(n)[: chosen.size]
        x[place] = chosen
    g = g.astype(dt)
    if data == "special-values":  # the gradient's own: NaN, infinities, signed zero, extremes
        info = ml_dtypes.finfo(dt)
        extremes = [np.nan, np.inf, -np.inf, -0.0, float(info.smallest_subnormal), -float(info.smallest_subnormal)]
        # the largest finite values only where no intermediate can overflow (as for x above): a
        # transcendental formula's intermediates overflow at different places in two implementations
        extremes += [1e4, -1e4] if _classified(op, "transcendental") else [float(info.max), -float(info.max)]
        g[rng.permutation(n)[: len(extremes)]] = np.array(extremes, dtype=np.float64).astype(dt)
    return g, x


def _scalar_py(op: OpUnderTest, scalars: Mapping) -> dict:
    return {
        p.py: scalars.get(p.name, p.default)
        for p in op.of_roles("scalar", "optional_scalar", "attribute")
        if not p.is_list  # a formula reads no list
    }


def _exact_data(op, dt, data, rng, n, scalars):
    """Integers over their range and at its edges (and around each boundary); bools both ways."""
    if dt.kind == "b":
        return rng.random(n) < 0.5, rng.random(n) < 0.5
    info = np.iinfo(dt)
    g = rng.integers(max(info.min, -100), min(info.max, 100), n, endpoint=True).astype(dt)
    x = rng.integers(info.min, info.max, n, endpoint=True, dtype=dt)
    if data in ("adversarial", "special-values"):
        points = [float(t) for _, t in op.reference.boundaries(**_scalar_py(op, scalars))] + [0.0]
        near = [int(np.floor(p)) + d for p in points if np.isfinite(p) for d in (-2, -1, 0, 1, 2)]
        edges = [info.min, info.min + 1, info.max - 1, info.max]
        chosen = np.array([v for v in near + edges if info.min <= v <= info.max], dtype=dt)
        place = rng.permutation(n)[: chosen.size]
        x[place] = chosen
        g[rng.permutation(n)[:4]] = np.array([info.min, info.max, 0, 1], dtype=dt)  # extreme gradients too
    return g, x


def _complex_data(dt, data, rng, n):
    real = dt.type(0).real.dtype
    g = (rng.normal(0.0, 1.0, n) + 1j * rng.normal(0.0, 1.0, n)).astype(dt)
    x = (rng.normal(0.0, 3.0, n) + 1j * rng.normal(0.0, 3.0, n)).astype(dt)
    if data in ("adversarial", "special-values"):
        info = np.finfo(real)
        parts = [0.0, -0.0, 1.0, -1.0, float(info.tiny), 1e4, -1e4]
        if data == "special-values":
            parts += [np.nan, np.inf, -np.inf]
        chosen = np.array([complex(a, b) for a in parts for b in parts], dtype=dt)
        x[rng.permutation(n)[: chosen.size]] = chosen
        if data == "special-values":
            g[rng.permutation(n)[:6]] = np.array(
                [
                    complex(np.nan, 0),
                    complex(0, np.inf),
                    complex(-np.inf, 1),
                    complex(-0.0, -0.0),
                    complex(float(info.max), 0),
                    complex(0, -float(info.max)),
                ],
                dtype=dt,
            )
    return g, x


def _classified(op: OpUnderTest, kind: str) -> bool:
    return kind in op.typed.formula.outputs.values()


def _values_for(op: OpUnderTest, dtype: str, data: str) -> dict:
    if data in ("adversarial", "special-values", "random"):
        return adversarial_values(op, dtype, data)
    return with_forward_values(op, dict(cases.make_values(op.meta, data, dtype, version=op.version)))


def with_forward_values(op: OpUnderTest, values: dict) -> dict:
    """`values` with each forward-output input (a forward result or intermediate, such as a
    buffer the library ignores but PyTorch reads) recomputed by its forward function from the
    forward input's data, where the two have one shape: data a real forward pass could leave,
    consistent with the forward input, in the case's own layout."""
    meanings = _meanings(op)
    sources = [values.get(p.name) for p, m in meanings if m == "forward_input"]
    x = next((a for a in sources if isinstance(a, np.ndarray)), None)
    if x is None:
        return values
    scalars = {k: v for k, v in values.items() if not isinstance(v, np.ndarray)}
    for p, meaning in meanings:
        target = values.get(p.name)
        if meaning == "forward_output" and isinstance(target, np.ndarray) and target.shape == x.shape:
            target[...] = op.reference.forward(p.py, np.asarray(x, dtype=target.dtype), scalars)
    return values


def _nan_inputs(op: OpUnderTest, values: Mapping, shape) -> np.ndarray:
    """Positions left out of the comparison with the oracle: a NaN forward input, and only where
    the oracle's own answer there depends on the element's position (oracle.NAN_POSITION_DEPENDENT)."""
    mask = np.zeros(shape, dtype=bool)
    if not oracle.nan_position_dependent(op.typed.oracle):
        return mask
    for p in op.of_roles("input"):
        arr = values.get(p.name)
        if not isinstance(arr, np.ndarray):
            continue
        try:
            broadcast = np.broadcast_shapes(arr.shape, shape) == tuple(shape)
        except ValueError:  # a per-channel weight lies along another axis
            broadcast = False
        if broadcast:
            wide = arr.astype(np.complex128 if arr.dtype.kind == "c" else np.float64)
            mask |= np.broadcast_to(np.isnan(wide), shape)
    return mask


def check_reference_against_oracle(op: OpUnderTest, dtype: str, data: str) -> None:
    _reference_against_oracle(op, dtype, _values_for(op, dtype, data))


def check_reference_on_family(
    op: OpUnderTest, family: str, dtypes: Mapping[str, str], outputs: Mapping[str, str], data: str
) -> None:
    """The reference against the oracle for inputs of these dtypes (C name -> dtype name: a mixed
    combination the rules accept, core/dtype_combinations.py) on `family`: the reference takes
    the family's rules for its output dtypes, or `outputs` where the case sets them; the oracle's
    result is then cast to them as the library casts its result to the output."""
    dtype = next(iter(dtypes.values()))
    if data in ("adversarial", "special-values", "random"):
        values = adversarial_values(op, dtype, data, dtypes=dtypes)
    else:  # a layout (broadcast, rank0, empty) only some families accept
        values = dict(cases.make_values(op.meta, data, dtype, version=op.version, family=family, dtypes=dtypes))
    _reference_against_oracle(op, dtype, values, family=family, outputs=outputs)


def check_mixed_binding(op: OpUnderTest, family: str, dtypes: Mapping[str, str], outputs: Mapping[str, str]) -> None:
    """The binding on the simulator accepts inputs of these dtypes (and outputs of these) on
    `family`, and agrees with the reference bit-wise."""
    _binding_matches_reference(op, family, next(iter(dtypes.values())), "contiguous", {}, {**dtypes, **outputs})


def check_sweep(op: OpUnderTest, family: str, dtype: str, overrides: Mapping) -> None:
    """One sweep point (core/sweeps.py): with these scalar/attribute values, the reference agrees
    with the oracle on adversarial data (boundaries follow the swept values), and the binding on
    the simulator agrees with the reference bit-wise."""
    _binding_matches_reference(op, family, dtype, "contiguous", overrides)
    _reference_against_oracle(op, dtype, adversarial_values(op, dtype, "adversarial", overrides=overrides))


def _reference_against_oracle(
    op: OpUnderTest, dtype: str, values: dict, family: str | None = None, outputs: Mapping[str, str] | None = None
) -> None:
    """`dtype` names the case (its directives); with `family`, the reference follows its rules;
    `outputs` (C name -> dtype name) sets output dtypes, to which the oracle's results are cast."""
    options = {"family": family} if family is not None else {}
    out_params = op.of_roles("output")
    if outputs:
        options["out_dtypes"] = {p.name: NUMPY_DTYPES[outputs[p.name]] for p in out_params if p.name in outputs}
    ours = op.run_reference(values, **options)
    by_py = {p.py: values.get(p.name) for p in op.typed.params if p.role != "output"}
    for p in op.of_roles("input"):  # a 0-d input may be a NumPy scalar: the oracle needs a tensor of its dtype
        if isinstance(by_py.get(p.py), np.generic):
            by_py[p.py] = np.asarray(by_py[p.py])
    outside = op.outside_oracle_domain(by_py)
    if outside is not None:
        import pytest  # deferred: weight, and `aclnngen run` needs no pytest

        pytest.skip(outside)
    theirs = op.run_oracle(by_py, [a.dtype for a in ours])
    if family is not None:
        # the library computes, then stores in each output's dtype: the one the case sets, else
        # the one the family's rules give (aten's own promotion may pick another)
        to_integer = arithmetic_facts.to_integer(op_meta(op.meta).arithmetic)
        theirs = tuple(oracle.cast_to(b, a.dtype, to_integer) for a, b in zip(ours, theirs))
    tolerance = op.directives().tolerance(op.name, "reference", None, dtype)
    for (py, kind), a, b in zip(op.typed.formula.outputs.items(), ours, theirs):
        assert a.shape == b.shape, f"{py}: reference shape {a.shape}, oracle {b.shape}"
        assert a.dtype == b.dtype, f"{py}: reference dtype {a.dtype}, oracle {b.dtype}"
        judged = dtype if family is None else _judged_dtype(values, a.dtype)
        compare_within_policy(op, values, py, kind, judged, a, b, tolerance)


# the complex dtype whose parts have a float dtype's precision (a float result cast to complex)
_AS_COMPLEX = {"float16": "complex64", "bfloat16": "complex64", "float32": "complex64", "float64": "complex128"}


def _judged_dtype(values: Mapping, out) -> str:
    """The dtype a mixed case's result is judged at: the coarser of the inputs' promoted dtype (the
    precision the library computes at) and the output's (it casts to it). An exact (integer or
    bool) output is judged exactly."""
    out = dtype_name_of(out)
    if category(out) in ("integer", "bool"):
        return out
    inputs = [dtype_name_of(a.dtype) for a in values.values() if isinstance(a, np.ndarray)]
    promoted = promote_names(inputs)
    if promoted is None or category(promoted) not in ("float", "complex"):
        return out
    if category(out) == "complex" and category(promoted) == "float":
        promoted = _AS_COMPLEX[promoted]
    unit = UNIT_ROUNDOFF.get(REAL_PART.get(promoted, promoted), 0.0)
    return promoted if unit > UNIT_ROUNDOFF.get(REAL_PART.get(out, out), 0.0) else out


def compare_within_policy(op, values, py, kind, dtype, ours, theirs, tolerance) -> None:
    """Assert `ours` matches `theirs` under the policy for the output's kind: selection bit-exact,
    transcendental rtol/atol scaled by max|grad|, reduction within the summation-error bound.
    Integer and bool results are exact whatever the kind; complex ones are judged on |ours - theirs|
    with the tolerances of their real part's dtype."""
    if category(dtype) in ("integer", "bool"):
        bad = np.asarray(ours != theirs)
        assert not bad.any(), (
            f"{py} ({dtype}): {int(bad.sum())} of {ours.size} elements differ, e.g. ours {ours[bad][:3]} vs oracle {theirs[bad][:3]}"
        )
        return
    if category(dtype) == "complex":
        dtype = REAL_PART[dtype]
        # a complex product or quotient is several roundings: never judged bit-exact
        kind = "transcendental" if kind == "selection" else kind
        a, b = ours.astype(np.complex128), theirs.astype(np.complex128)
    else:
        a, b = ours.astype(np.float64), theirs.astype(np.float64)
    if kind == "selection" and tolerance is None:
        # where aten's answer at a NaN x depends on the position, those positions are not judged
        keep = ~_nan_inputs(op, values, a.shape) if a.shape else np.ones((), bool)
        same = (a == b) | (np.isnan(a) & np.isnan(b))
        bad = ~same & keep
        assert not bad.any(), (
            f"{py}: {int(bad.sum())} of {a.size} elements differ bit-wise: {describe_mismatch(ours, theirs, bad)}"
        )
        return
    g = values[op.of_roles("input")[0].name]
    scale = max(1.0, float(np.nanmax(np.abs(np.asarray(g)), initial=0.0)))
    if kind == "arithmetic" and tolerance is None:
        _within_precision_standard(op, values, py, dtype, a, b, scale)
        return
    if kind in ("selection", "arithmetic"):  # a directive's rtol/atol replace bit-exactness or the standard
        rtol = atol = 0.0
    elif kind == "transcendental":
        rtol, atol = TRANSCENDENTAL[dtype]
        atol *= scale
    else:  # reduction: per-element rounding plus the summation error, bounded by sum |terms|
        rtol = REDUCTION_RTOL[dtype]
        terms = np.prod(
            [np.nanmax(np.abs(values[p.name].astype(np.float64)), initial=0.0) for p in op.of_roles("input")]
        )
        summed = max(1, int(np.prod(values[op.of_roles("input")[1].name].shape)) // max(1, a.size))
        atol = UNIT_ROUNDOFF[dtype] * float(terms) * summed * max(1.0, np.log2(summed))
    if tolerance is not None:
        rtol = tolerance.rtol if tolerance.rtol is not None else rtol
        atol = tolerance.atol if tolerance.atol is not None else atol
    with np.errstate(invalid="ignore"):
        finite = np.isfinite(a) & np.isfinite(b)
        diff = np.where(finite, np.abs(a - b), 0.0)
    both_special = (np.isnan(a) & np.isnan(b)) | (a == b)
    close = both_special | (finite & (diff <= atol + rtol * np.abs(b)))
    # Overflow artefacts (an intermediate beyond the dtype's range) differ between implementations.
    judged = np.isfinite(a) | np.isfinite(b)
    bad = ~close & judged & ~_nan_inputs(op, values, a.shape) if a.shape else (~close & judged)
    assert not np.any(bad), (
        f"{py} ({kind}, {dtype}): {int(np.sum(bad))} of {a.size} elements outside rtol={rtol:g}, atol={atol:g}; "
        f"worst |diff| {float(np.max(diff[bad])):g}: {describe_mismatch(ours, theirs, bad)}"
    )


def _bits(x) -> int:
    x = np.asarray(x)
    return int(x.reshape(1).view(f"u{x.dtype.itemsize}")[0])


def _ulp_index(x) -> int:
    """A float's bits as an integer that counts ULPs: neighbours differ by 1, -0.0 and 0.0 by 0."""
    bits, sign = _bits(x), 1 << (8 * np.asarray(x).dtype.itemsize - 1)
    return sign - bits if bits >= sign else bits


def describe_mismatch(ours: np.ndarray, theirs: np.ndarray, bad: np.ndarray, limit: int = 3) -> str:
    """The first differing elements, exactly: index, each value's shortest exact repr and its bits
    in hex, and their distance in ULPs (for floats of one dtype)."""
    ours, theirs = np.asarray(ours), np.asarray(theirs)
    index = np.argwhere(np.broadcast_to(bad, ours.shape))[:limit]
    float_pair = (
        ours.dtype == theirs.dtype and ours.dtype.kind == "f" or str(ours.dtype) == "bfloat16" == str(theirs.dtype)
    )
    parts = []
    for at in map(tuple, index):
        x, y = ours[at], theirs[at]
        text = f"[{', '.join(map(str, at))}] ours {_exact(x)} vs {_exact(y)}"
        if float_pair and not (np.isnan(float(x)) or np.isnan(float(y))):
            text += f", {abs(_ulp_index(x) - _ulp_index(y))} ulp apart"
        parts.append(text)
    return "; ".join(parts)


def _exact(x) -> str:
    x = np.asarray(x)
    numeric = x.dtype.kind in "fiub" or str(x.dtype) == "bfloat16"
    hex_bits = f" (0x{_bits(x):0{2 * x.dtype.itemsize}x})" if numeric else ""
    value = repr(float(x)) if x.dtype.kind == "f" or str(x.dtype) == "bfloat16" else repr(x.item())
    return f"{x.dtype} {value}{hex_bits}"


def _within_precision_standard(op, values, py, dtype, a, b, scale) -> None:
    """Several roundings (arithmetic): the vendor's MERE/MARE standard on elements whose |oracle|
    is not small, and an absolute bound of a few units of max|grad| on the small ones, where
    cancellation makes relative error meaningless. Non-finite results must agree exactly."""
    a, b = np.atleast_1d(a), np.atleast_1d(b)
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        finite = np.isfinite(a) & np.isfinite(b)
        judged = (np.isfinite(a) | np.isfinite(b)) & ~np.atleast_1d(
            _nan_inputs(op, values, a.shape) if a.size > 1 else False
        )
        special_bad = judged & ~finite & ~((a == b) | (np.isnan(a) & np.isnan(b)))
        diff = np.where(finite, np.abs(a - b), 0.0)
        big = finite & judged & (np.abs(b) >= SMALL_VALUE[dtype])
        small = finite & judged & ~big
        relative = diff[big] / (np.abs(b[big]) + 1e-7)
    unit = UNIT_ROUNDOFF[dtype]
    small_bad = small & (diff > ARITHMETIC_ULPS * unit * scale)
    assert not special_bad.any(), (
        f"{py} ({dtype}): {int(special_bad.sum())} inf/NaN results differ, e.g. ours {a[special_bad][:3]} vs oracle {b[special_bad][:3]}"
    )
    assert not small_bad.any(), (
        f"{py} (arithmetic, {dtype}): {int(small_bad.sum())} small results off by more than "
        f"{ARITHMETIC_ULPS} units of max|grad|, worst {float(diff[small_bad].max()):g}"
    )
    if relative.size:
        mere, mare, threshold = float(relative.mean()), float(relative.max()), MERE_THRESHOLD[dtype]
        assert mere < threshold and mare < MARE_RATIO * threshold, (
            f"{py} (arithmetic, {dtype}): MERE {mere:.3g} (limit {threshold:.3g}), MARE {mare:.3g} "
            f"(limit {MARE_RATIO * threshold:.3g}) over {relative.size} elements"
        )


# --- binding on the simulator -------------------------------------------------------------------


def same_bits(got: np.ndarray, want: np.ndarray) -> bool:
    """Equal shape, dtype and bytes (so -0.0 differs from 0.0 and NaN payloads count)."""
    return (
        got.shape == want.shape
        and got.dtype == want.dtype
        and np.ascontiguousarray(got).tobytes() == np.ascontiguousarray(want).tobytes()
    )


def _outputs_poisoned(op: OpUnderTest, results: tuple) -> None:
    """A binding-tier op's outputs and in-place inputs carry the simulator's poison pattern: each was
    written, none was computed (aclnngen/core/tiers.py)."""
    outputs = [op.typed.param(n) for n in op.typed.written]
    assert len(results) == len(outputs), f"{len(results)} results for {len(outputs)} written tensors"
    for p, got in zip(outputs, results):
        for item in got if p.is_list else [got]:
            assert isinstance(item, np.ndarray), f"{p.py}: the binding returned {type(item).__name__}"
            assert is_poisoned(item), f"{p.py}: a binding-tier output holds something else than the poison pattern"


def check_binding(op: OpUnderTest, family: str, dtype: str, layout: str) -> None:
    _binding_matches_reference(op, family, dtype, layout, {})


def _binding_matches_reference(
    op: OpUnderTest,
    family: str,
    dtype: str,
    layout: str,
    overrides: Mapping,
    dtypes: Mapping[str, str] | None = None,
    own: bool = True,
) -> None:
    """`own`: each input of its own dtype list (`dtype` where it takes it); `dtypes` set outright."""
    made = cases.make_values(op.meta, layout, dtype, version=op.version, family=family, dtypes=dtypes, own_dtypes=own)
    values = {**made, **overrides}
    tolerance = op.directives().tolerance(op.name, "binding", family, dtype)
    # outputs of a dtype the case sets are passed in (`out=`); others the binding allocates
    # a list output too: the binding cannot tell how many tensors the caller wants
    fixed = [p for p in op.of_roles("output") if p.name in (dtypes or {}) or p.is_list]
    # an op that only writes (in place, a fill) writes the caller's tensors; so does one reading a
    # list, whose outputs no rule infers
    if not op.of_roles("input") or any(p.is_list for p in op.of_roles("input")):
        fixed = list(op.of_roles("output"))
    # the binding writes its in-place inputs: the reference reads them as they were
    before = {name: np.array(values[name], copy=True) for name in op.typed.inplace}
    formats = {op.typed.param(n).py: f for n, f in _formats(op, values, family).items()}
    with session.simulated(family=family, version=op.version):
        positional, keywords, _ = op.split(values)
        if formats:
            keywords["formats"] = formats
        if fixed:
            outs = [values[p.name] for p in op.of_roles("output")]
            keywords["out"] = outs[0] if len(outs) == 1 else tuple(outs)
        result = op.binding(*positional, **keywords)
    results = result if isinstance(result, tuple) else (result,)
    if not op.typed.computes:  # binding tier: the call succeeded and left its outputs uncomputed
        _outputs_poisoned(op, results)
        return
    out_dtypes = {p.name: values[p.name].dtype for p in fixed}
    for name, was in before.items():  # written into the caller's very array
        assert results[-len(before) + list(before).index(name)] is values[name], f"{name} was not written in place"
        values = {**values, name: was}
    expected = op.run_reference(values, family=family, **({"out_dtypes": out_dtypes} if out_dtypes else {}))
    for p, got, want in zip([op.typed.param(n) for n in op.typed.written], results, expected):
        assert isinstance(got, np.ndarray), f"{p.py}: the binding returned {type(got).__name__}"
        assert got.shape == want.shape and got.dtype == want.dtype, (
            f"{p.py}: {got.shape}/{got.dtype} vs {want.shape}/{want.dtype}"
        )
        if tolerance is not None:  # the override replaces bit-exactness for this scope
            rtol, atol = tolerance.rtol or 0.0, tolerance.atol or 0.0
            bad = outside_tolerance(got, want, rtol, atol)
            assert not bad.any(), (
                f"{p.py}: outside rtol={rtol:g}, atol={atol:g} (directive): {describe_mismatch(got, want, bad)}"
            )
            continue
        renderings_agree(op, values, p.py, got, want)


def outside_tolerance(got: np.ndarray, want: np.ndarray, rtol: float, atol: float) -> np.ndarray:
    """Where |got - want| > atol + rtol * |want| (NaN equal to NaN, complex compared as complex):
    the one rtol/atol comparison a directive's tolerance and a TTK precision pair both mean."""
    a, b = got.astype(np.complex128), want.astype(np.complex128)
    with np.errstate(invalid="ignore"):
        return ~((a == b) | (np.isnan(a) & np.isnan(b)) | (np.abs(a - b) <= atol + rtol * np.abs(b)))


def renderings_agree(op: OpUnderTest, values: Mapping, py: str, got: np.ndarray, want: np.ndarray) -> None:
    """The simulator's result (its compiled kernel, a second rendering of the formula, where it has
    one) against the reference: bit for bit where the output is a selection (NaN payloads aside),
    within the precision policy where transcendental functions (libm against NumPy) or several
    roundings may differ."""
    kind = op.typed.formula.outputs.get(py, "arithmetic")
    if kind != "selection" or category(dtype_name_of(got.dtype)) == "complex":
        compare_within_policy(op, values, py, kind, dtype_name_of(got.dtype), got, want, None)
        return
    bits = f"u{got.dtype.itemsize}"
    differ = np.ascontiguousarray(got).view(bits) != np.ascontiguousarray(want).view(bits)
    if got.dtype.kind == "f" or dtype_name_of(got.dtype) == "bfloat16":
        with np.errstate(invalid="ignore"):
            differ &= ~(np.isnan(got.astype(np.float64)) & np.isnan(want.astype(np.float64)))
    if differ.any():
        raise AssertionError(
            f"{py}: the simulator's result differs from the reference bit-wise: {describe_mismatch(got, want, differ)}"
        )
