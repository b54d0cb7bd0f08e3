"""The kinds of defect a spec records (its `defects:` entries): what each means, how the op page
titles it, and which formula field goes with it. The spec model, the importer, the op page and the
audit all read this one table."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class DefectKind:
    name: str
    title: str  # how the op page and the audit report name it
    meaning: str  # one line for docs/spec-language.md
    formula: str | None = None  # the formula field this kind needs ("claimed", "observed") or None


DEFECT_KINDS: tuple[DefectKind, ...] = (
    DefectKind(
        "wrong_formula",
        "Wrong formula on the page",
        "the page prints a formula that is not what it computes; `claimed` holds it",
        "claimed",
    ),
    DefectKind(
        "formula_divergence",
        "The library computes another formula",
        "the library computes otherwise than the spec's formula; `observed` holds what it computes",
        "observed",
    ),
    DefectKind(
        "no_formula",
        "No formula on the page",
        "the page states no formula; the note says where the spec's formula comes from instead",
    ),
    DefectKind(
        "torch_difference",
        "Differs from PyTorch on purpose",
        "the vendor's op differs from PyTorch's on purpose (a clamped scalar, another default);"
        " the note says how and the oracle states it as data",
    ),
    DefectKind("prototype", "Prototype", "the page's prototype differs from the installed header"),
    DefectKind("name", "Name", "the page names the op, a function or a parameter wrongly"),
    DefectKind("rule", "Shape or dtype rule", "the implementation checks a rule otherwise than the page says"),
    DefectKind("dtype", "Dtype list", "the implementation accepts other dtypes than the page lists"),
    DefectKind("product", "Products", "the page's product list differs from what the implementation supports"),
    DefectKind("return_code", "Return codes", "a return-code row is missing, extra or wrong"),
    DefectKind("other", "Other", "anything else the page gets wrong"),
)

BY_NAME: dict[str, DefectKind] = {k.name: k for k in DEFECT_KINDS}
NAMES: tuple[str, ...] = tuple(BY_NAME)


def kind(name: str) -> DefectKind:
    try:
        return BY_NAME[name]
    except KeyError:
        raise KeyError(f"unknown defect kind {name!r}; known: {', '.join(NAMES)}") from None
