"""A draft's `todo:` list: what a person must still write. `validate` reports each entry at the
line of the draft it points to, so a draft is never mistaken for a finished spec."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..errors import Problem
from ..yamlio import LineMap


def _loc(at: str) -> tuple:
    return tuple(int(part) if part.isdigit() else part for part in str(at).split("."))


def todo_problems(data: dict[str, Any], path: Path, lines: LineMap) -> list[Problem]:
    items = data.get("todo")
    if not isinstance(items, list):
        return [Problem(str(path), lines.line_of(("todo",)), "todo: a list of {at, note} entries")]
    if not items:
        return [
            Problem(str(path), lines.line_of(("todo",)), "todo: the list is empty; delete the key to finish the draft")
        ]
    problems = []
    for index, item in enumerate(items):
        if isinstance(item, dict):
            at, note = item.get("at", ""), item.get("note", "")
            problems.append(Problem(str(path), lines.line_of(_loc(at)), f"TODO {at}: {note}"))
        else:
            problems.append(Problem(str(path), lines.line_of(("todo", index)), f"TODO: {item}"))
    return problems
