"""The catalog's APIs whose header the vendor's build writes (catalog.BUILT) against their op
definition (`op_host/<op>_def.cpp`): the header is generated from the definition's inputs, outputs
and attributes, so where the repository has no header, the definition is what a page's prototype
can be held against.

The comparison is of the tensors: the page's input tensors, in order, against the definition's
inputs, and as many outputs on both sides. Names are compared as the two spellings agree (case and
underscores aside, an `Optional`/`Ref`/`Out` suffix aside: `zeroPointsOptional` is `zero_points`);
an output's name is not compared (pages name it `out` where the definition says `y`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_ENTRY = re.compile(r'this->(Input|Output|Attr)\("([A-Za-z0-9_]+)"\)')
_SUFFIXES = ("optional", "ref", "out")


@dataclass(frozen=True)
class OpDefinition:
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
    attrs: tuple[str, ...]


def read_definition(text: str) -> OpDefinition:
    """The inputs, outputs and attributes an op definition's source declares, in order (several
    definition files of one folder joined: each name once)."""
    found: dict[str, list[str]] = {"Input": [], "Output": [], "Attr": []}
    for what, name in _ENTRY.findall(text):
        if name not in found[what]:
            found[what].append(name)
    return OpDefinition(tuple(found["Input"]), tuple(found["Output"]), tuple(found["Attr"]))


def same_name(a: str, b: str) -> bool:
    return _plain(a) == _plain(b)


def _plain(name: str) -> str:
    name = name.replace("_", "").lower()
    for suffix in _SUFFIXES:
        if name.endswith(suffix) and len(name) > len(suffix):
            return name[: -len(suffix)]
    return name


def against(inputs: list[str], outputs: list[str], definition: OpDefinition, inplace: int = 0) -> str | None:
    """None when the page's input tensors are the definition's inputs in order and the outputs as
    many; else where they part. `inplace` of the `outputs` are inputs the op writes: a definition
    declares such a tensor an output too (`var` in and out) or only an input (an in-place op that
    writes `x`), so either count agrees."""
    for mine, defined in zip(inputs, definition.inputs):
        if not same_name(mine, defined):
            return f"page input `{mine}`, definition `{defined}`"
    if len(inputs) != len(definition.inputs):
        side, extra = (
            ("page", inputs[len(definition.inputs) :])
            if len(inputs) > len(definition.inputs)
            else ("definition", list(definition.inputs[len(inputs) :]))
        )
        return f"only the {side} has input `{', '.join(extra)}`"
    if len(definition.outputs) not in (len(outputs), len(outputs) - inplace):
        return f"{len(outputs)} output(s) on the page, {len(definition.outputs)} in the definition"
    return None
