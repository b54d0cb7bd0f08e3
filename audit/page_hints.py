"""What a page hints, set against the spec: the rules its usage notes suggest (promotion,
broadcasting, sameness, ranks; drafted by the importer's rule-kind hints) and the boundary of each
comparison its formula draws (at x = threshold, which branch). `aclnngen audit --page` reports each
hint the spec does not hold as a finding, unless a defect the spec records at the release names
that check; what the library does with it is probed by the dtype and shape checks of the audit.
"""

from __future__ import annotations

import re
from typing import Any, Iterable, Mapping

from aclnngen.codegen import formula
from aclnngen.codegen.specdiff import holds
from aclnngen.core.kinds import kind_of

from .findings import Finding


# --- rules the page hints ---------------------------------------------------------------------


def _held(hint: Mapping, rules: list[Mapping], inputs: set[str]) -> bool:
    """Whether the spec's rules state what the hint says. The importer drafts hints from loose
    notes, so each relation is compared as loosely as its notes are written: a dtype relation
    (promote against same_dtype is a real difference) by its kind, covering the hinted tensors; a
    shape relation by the tensors every shape rule together names (sameness, broadcasting and
    per-channel notes blur into each other); a rank by its kind, over the inputs (an output's rank
    follows from them); what layouts are accepted is left to the audit's probes."""
    kind = kind_of(hint["kind"])
    wanted = set(kind.names(hint))
    same = [set(kind_of(r["kind"]).names(r)) for r in rules if r.get("kind") == hint["kind"]]
    if kind.relation == "dtype":
        return any(wanted <= names for names in same)
    if kind.relation == "rank":
        return any(wanted & inputs <= names for names in same)
    if kind.relation == "shape":
        related = [r for r in rules if kind_of(r["kind"]).relation == "shape"]
        return wanted <= set().union(*(kind_of(r["kind"]).names(r) for r in related))
    return True


class _AsModel:
    """A rule as data read like the spec model (a kind's `sentence` reads attributes)."""

    def __init__(self, data: Mapping):
        self._data = data

    def __getattr__(self, name: str):
        return self._data.get(name)


def _recorded(check: str, spec: Mapping, release: str) -> bool:
    return any(check in (d.get("checks") or ()) and holds(d, release) for d in spec.get("defects") or ())


def rule_findings(spec: Mapping[str, Any], draft: Mapping[str, Any], release: str) -> list[Finding]:
    """One finding per rule the page hints that the spec, at `release`, does not state."""
    rules = [r for r in spec.get("rules") or () if holds(r, release)]
    inputs = {p["name"] for p in spec.get("parameters") or () if p.get("role") == "input"}
    found = []
    for hint in draft.get("rules") or ():
        if hint.get("kind") is None or _held(hint, rules, inputs):
            continue
        text = kind_of(hint["kind"]).sentence(_AsModel(hint))
        recorded = _recorded(hint["kind"], spec, release)
        found.append(
            Finding(
                spec["name"],
                "page",
                f"hint {hint['kind']}: {text}",
                "page_defect" if recorded else "mismatch",
                "page",
                None,
                f"the spec's rules at {release}" + (" (a defect the spec records)" if recorded else ""),
                f"the page hints: {text}",
            )
        )
    return found


# --- the boundaries of the page's formula -------------------------------------------------------

# A comparison in LaTeX or in plain text: left, operator, right.
_LATEX_OPS = {
    r"\leq": "<=",
    r"\le": "<=",
    r"\geq": ">=",
    r"\ge": ">=",
    r"\lt": "<",
    r"\gt": ">",
    "≤": "<=",
    "≥": ">=",
    "<=": "<=",
    ">=": ">=",
    "<": "<",
    ">": ">",
}
_OPERATOR = "|".join(re.escape(op) for op in sorted(_LATEX_OPS, key=len, reverse=True))
_TERM = (
    r"-?\s*(?:\\mathit\{[A-Za-z_]+\}|\\?[A-Za-z][A-Za-z0-9]*(?:_(?!\{)[A-Za-z0-9]+)*|\d+(?:\.\d+)?)"
    r"(?:\s*(?:\(i\)|_\{i\}))?"
)
_COMPARISON = re.compile(rf"({_TERM})\s*({_OPERATOR})(?![a-z])\s*({_TERM})")
_FLIP = {">": "<", "<": ">", ">=": "<=", "<=": ">="}
# at x = t, the comparison `x OP t` puts the point on the lower side ({>, <=}) or the upper ({>=, <})
_SIDE = {">": "lower", "<=": "lower", ">=": "upper", "<": "upper"}


def _token(text: str) -> str:
    text = re.sub(r"\\mathit\{([^}]*)\}", r"\1", text)
    text = re.sub(r"(?:\(i\)|_\{?i\}?)$", "", text.strip())
    return text.replace("\\", "").replace(" ", "")


def _name_of(token: str, names: Iterable[str]) -> str | None:
    """The op's parameter a page token stands for: the same name, or one the other begins with
    (`lambda` and `lambd`); a number stands for itself."""
    sign, bare = ("-", token[1:]) if token.startswith("-") else ("", token)
    if re.fullmatch(r"\d+(\.\d+)?", bare):
        return sign + str(float(bare))
    lowered = bare.lower()
    for name in names:
        if lowered == name.lower() or (
            len(name) >= 4 and (lowered.startswith(name.lower()) or name.lower().startswith(lowered))
        ):
            return sign + name
    return None


def page_boundaries(latex: Iterable[str], tensors: Iterable[str], thresholds: Iterable[str]) -> dict[str, str]:
    """threshold -> "lower" or "upper": where the page's formula puts x = threshold. A threshold
    the page compares on both sides is left out (the page contradicts itself there)."""
    tensors, thresholds = list(tensors), list(thresholds)
    sides: dict[str, set[str]] = {}
    for text in latex:
        for left, op, right in _COMPARISON.findall(text):
            op = _LATEX_OPS[op]
            a, b = _token(left), _token(right)
            if _name_of(a, tensors) is None and _name_of(b, tensors) is not None:
                a, b, op = b, a, _FLIP[op]
            if _name_of(a, tensors) is None or a.startswith("-"):
                continue
            threshold = _name_of(b, thresholds)
            if threshold is not None:
                sides.setdefault(threshold, set()).add(_SIDE[op])
    return {t: next(iter(s)) for t, s in sides.items() if len(s) == 1}


def spec_boundaries(program: "formula.FormulaProgram", tensors: Iterable[str]) -> dict[str, str]:
    """threshold -> side, as the spec's formula compares a tensor with a scalar, an attribute or a
    constant (rendered in the formula language: `lambd`, `-lambd`, `0.0`)."""
    tensors = set(tensors)
    sides: dict[str, set[str]] = {}
    for _, expr in program.lets + program.outputs:
        for node in formula.walk(expr.tree):
            if not isinstance(node, formula.Compare) or node.op not in _SIDE:
                continue
            left, right, op = node.left, node.right, node.op
            if not _is_tensor(left, tensors) and _is_tensor(right, tensors):
                left, right, op = right, left, _FLIP[op]
            if not _is_tensor(left, tensors) or _reads_tensor(right, tensors):
                continue
            text = formula.render_formula(formula.Expression("", right, "num")).replace(" ", "")
            if re.fullmatch(r"-?\d+(\.\d+)?", text):
                text = ("-" if text.startswith("-") else "") + str(float(text.lstrip("-")))
            sides.setdefault(text, set()).add(_SIDE[op])
    return {t: next(iter(s)) for t, s in sides.items() if len(s) == 1}


def _is_tensor(node, tensors: set) -> bool:
    return isinstance(node, formula.Name) and node.id in tensors


def _reads_tensor(node, tensors: set) -> bool:
    return any(isinstance(n, formula.Name) and n.id in tensors for n in formula.walk(node))


def boundary_findings(spec: Mapping[str, Any], latex: Iterable[str], release: str) -> tuple[list[Finding], int]:
    """(findings, boundaries compared): where the page's formula puts x = threshold on another
    side than the spec's formula (`spec` as in YAML) does."""
    params = spec.get("parameters") or []
    program = formula.parse_program(
        spec["formula"]["outputs"],
        {p["py_name"]: p["role"] for p in params},
        lets=spec["formula"].get("lets") or {},
        loc=("formula",),
    )
    inputs = [p for p in params if p["role"] == "input"]
    tensors = [p["py_name"] for p in inputs]
    scalars = [p["py_name"] for p in params if p["role"] in ("scalar", "optional_scalar", "attribute")]
    theirs = page_boundaries(latex, tensors + [p["name"] for p in inputs], scalars)
    ours = spec_boundaries(program, tensors)
    recorded = _recorded("formula", spec, release) or any(
        d.get("kind") in ("wrong_formula", "formula_divergence") and holds(d, release)
        for d in spec.get("defects") or ()
    )
    found = []
    compared = 0
    for threshold, side in sorted(theirs.items()):
        if threshold not in ours:
            continue
        compared += 1
        if ours[threshold] == side:
            continue
        found.append(
            Finding(
                spec["name"],
                "page",
                f"formula boundary at {threshold}",
                "page_defect" if recorded else "mismatch",
                "page",
                None,
                f"the spec's formula puts x = {threshold} on the {ours[threshold]} side",
                f"the page's formula puts x = {threshold} on the {side} side",
            )
        )
    return found, compared
