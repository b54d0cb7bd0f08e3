"""The Python signature of a generated binding: one rule for every op (documented in
docs/python-api.md).

- Positional-or-keyword, in the C prototype's order, as aten takes them: first every required
  parameter (input tensors, scalars and attributes without a default), then the optional ones
  (optional tensors, optional scalars, parameters with a default).
- Keyword-only: `out` (one array, or a tuple with one array per output, in C order, as NumPy's
  ufuncs and torch take it), then each output's own Python name as an alias of its place in `out`,
  then `stream`, `validate` and `formats`.
- Typed with overloads, one per kind of call (TENSOR_KINDS): host arrays in give NumPy arrays back,
  device arrays in give DeviceArrays back, and any other mix gives either.
"""

from __future__ import annotations

from dataclasses import dataclass

from .model import OpSpec, Parameter
from aclnngen.core.attribute_types import ATTRIBUTE_TYPES

# C attribute type -> the Python type hint of its argument
ATTRIBUTE_HINTS = {c: t.hint for c, t in ATTRIBUTE_TYPES.items()}


@dataclass(frozen=True)
class TensorKind:
    """One overload of a binding: what its tensors are (a name of aclnngen.runtime.hints) and
    what it returns for each output."""

    tensor: str
    result: str


# the overloads, in the order a type checker tries them; the last also types the implementation
TENSOR_KINDS = (
    TensorKind(tensor="HostArray", result="np.ndarray"),
    TensorKind(tensor="DeviceArray", result="DeviceArray"),
    TensorKind(tensor="TensorLike", result="Result"),
)


@dataclass(frozen=True)
class PyParam:
    name: str  # the Python name
    c_name: str
    hint: str
    default: str | None  # Python source of the default, None when required


@dataclass(frozen=True)
class Overload:
    positional: list[PyParam]
    out_hint: str
    alias_hint: str
    returns: str


def _hint(p: Parameter, tensor: str = "TensorLike") -> str:
    if p.is_list:
        element = tensor if p.role in ("input", "output") else "float"
        return f"Sequence[{element}] | None" if p.optional else f"Sequence[{element}]"
    if p.role in ("input", "output"):
        return f"{tensor} | None" if p.optional else tensor
    if p.role == "optional_scalar":
        return "float | None"
    if p.role == "scalar":
        return "float"
    return ATTRIBUTE_HINTS.get(p.c_type or "", "object")


def _default(p: Parameter) -> str | None:
    if p.role == "optional_scalar" or (p.role == "input" and p.optional):
        return "None"
    if p.role in ("scalar", "attribute") and p.default is not None:
        return repr(p.default)
    return None


def _positional(spec: OpSpec, tensor: str) -> list[PyParam]:
    params = [PyParam(p.py_name, p.name, _hint(p, tensor), _default(p)) for p in spec.parameters if p.role != "output"]
    return [p for p in params if p.default is None] + [p for p in params if p.default is not None]


def _overload(spec: OpSpec, kind: TensorKind, noutputs: int, nwritten: int) -> Overload:
    """`noutputs` outputs go in `out`; the call returns `nwritten` (the outputs, then the inputs it
    writes in place)."""
    if noutputs == 1:
        out_hint = f"{kind.tensor} | None"
    elif noutputs == 0:
        out_hint = "None"
    else:
        out_hint = f"tuple[{', '.join([f'{kind.tensor} | None'] * noutputs)}] | None"
    returns = kind.result if nwritten == 1 else f"tuple[{', '.join([kind.result] * nwritten)}]"
    return Overload(_positional(spec, kind.tensor), out_hint, f"{kind.tensor} | None", returns)


def binding_signature(spec: OpSpec) -> dict:
    """What the binding template renders: the positional parameters, the outputs, the return hint
    and the typed overloads."""
    positional = _positional(spec, "TensorLike")
    outputs = [p.py_name for p in spec.parameters if p.role == "output"]
    inplace = [p.py_name for p in spec.parameters if p.inplace]
    single = len(outputs) == 1
    overloads = [_overload(spec, kind, len(outputs), len(outputs) + len(inplace)) for kind in TENSOR_KINDS]
    # the C call's arguments, in prototype order: outputs come from the resolved `out`
    call_args = [p.py_name if p.role != "output" else f"_outs[{outputs.index(p.py_name)}]" for p in spec.parameters]
    aliases = [o for o in outputs if o != "out"]  # an output named `out` is `out` itself
    return {
        "call_args": call_args,
        "call_tuple": f"({', '.join(call_args)}{',' if len(call_args) == 1 else ''})",
        # true when the call passes no output: the binding then skips resolving them
        "no_output_given": " and ".join(f"{name} is None" for name in ["out", *aliases]),
        "needs_sequence": any("Sequence[" in p.hint for p in positional),
        "out_doc": (
            f"the output array to write into{'' if outputs[0] == 'out' else f' (alias: {outputs[0]}=)'}; None allocates it"
            if single
            else f"no output to pass: the op writes {', '.join(inplace)} in place"
            if not outputs
            else f"a tuple of output arrays ({', '.join(outputs)}), None where one is allocated; each also by its own name"
        ),
        "positional": positional,
        "outputs": outputs,
        "aliases": aliases,
        "out_hint": overloads[-1].out_hint,
        "returns": overloads[-1].returns,
        "overloads": overloads,
        "python": _python_text(spec.snake_name, positional, outputs),
    }


def _python_text(name: str, positional: list[PyParam], outputs: list[str]) -> str:
    """The signature as the op page shows it (no hints, to stay short)."""
    parts = [p.name if p.default is None else f"{p.name}={p.default}" for p in positional]
    parts += [
        "*",
        "out=None",
        *(f"{o}=None" for o in outputs if o != "out"),
        "stream=None",
        "validate=True",
        "formats=None",
    ]
    return f"{name}({', '.join(parts)})"
