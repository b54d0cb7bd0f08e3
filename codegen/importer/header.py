"""The ABI comes from the vendor's header. A binding generated from a page's prototype that disagrees
with the header passes the wrong arguments to the real library, so where the header declares an
API's functions the page's facts take the header's prototypes (types, const-ness, names, order);
the page's text is kept as `page_prototypes` with a `prototype` defect saying where they part, so the
audit and the op page still report the page's disagreement.

A parameter the page's table names as its own prototype does is renamed to the header's name at the
same position, so the table's dtypes and notes stay attached to the parameter they describe."""

from __future__ import annotations

from typing import Mapping

from ..cdecl import CFunction, PrototypeError, diff_prototypes, parse_prototype
from .facts import PageFacts

KEYS = ("get_workspace_size", "launch")


def function_names(op: str) -> dict[str, str]:
    """Prototype key -> the C function an API named `op` (no aclnn prefix) declares."""
    return {"get_workspace_size": f"aclnn{op}GetWorkspaceSize", "launch": f"aclnn{op}"}


def adopt_header(facts: PageFacts, declared: Mapping[str, str]) -> None:
    """Replaces the page's prototypes of `facts` by the header's (`declared`: function name ->
    prototype) where the header has them and the page's differ, is missing or does not parse."""
    if not facts.op:
        return
    for key, name in function_names(facts.op).items():
        header_text = declared.get(name)
        if header_text is None:
            continue
        header = parse_prototype(header_text)
        page_text = facts.prototypes.get(key)
        page = _parsed(page_text)
        if page is None:
            facts.prototypes[key] = str(header)
            what = "prints no" if page_text is None else "prints an unreadable"
            facts.defect("prototype", f"the page {what} {name} prototype; the spec takes the header's")
            continue
        differences = diff_prototypes(header, page)
        if not differences:
            continue
        facts.prototypes[key] = str(header)
        facts.page_prototypes[key] = str(page)
        facts.defect("prototype", f"the page's {name} differs from the header's: {'; '.join(differences)}")
        if key == "get_workspace_size":
            _rename_table(facts, page, header)


def _parsed(text: str | None) -> CFunction | None:
    if text is None:
        return None
    try:
        return parse_prototype(text)
    except PrototypeError:
        return None


def _rename_table(facts: PageFacts, page: CFunction, header: CFunction) -> None:
    """Table rows named as the page's prototype names a parameter the header names otherwise, at
    the same position, take the header's name (only when the prototypes have as many parameters and
    the header's name is not already a row of its own)."""
    if len(page.params) != len(header.params):
        return
    rows = {p.name: p for p in facts.params}
    renames = {
        mine.name: theirs.name
        for mine, theirs in zip(page.params, header.params)
        if mine.name != theirs.name and mine.name in rows and theirs.name not in rows
    }
    for old, new in renames.items():
        rows[old].name = new
    for note in facts.dtype_notes:
        note.per_param = {renames.get(k, k): v for k, v in note.per_param.items()}


def align_table(facts: PageFacts) -> None:
    """A parameter table whose rows follow the first-phase prototype one for one, but name some
    parameter otherwise (a row `self` where the prototype has `tensors`): each such row takes the
    prototype's name, with a `name` defect, so its dtypes describe the parameter they sit beside.
    Rows are renamed only when their count is the prototype's and the name is not a row already."""
    function = _parsed(facts.prototypes.get("get_workspace_size"))
    if function is None or len(function.params) != len(facts.params):
        return
    rows = {p.name for p in facts.params}
    for row, param in zip(facts.params, function.params):
        if row.name == param.name or row.name in {p.name for p in function.params} or param.name in rows:
            continue
        facts.defect("name", f"the parameter table names {row.name!r} where the prototype has {param.name!r}")
        for note in facts.dtype_notes:
            if row.name in note.per_param:
                note.per_param[param.name] = note.per_param.pop(row.name)
        row.name = param.name
