"""Strict YAML reading: duplicate keys are errors and every node's line is remembered.

PyYAML silently keeps the last of two equal keys; a spec must not. The loader builds plain Python
data plus a `LineMap` from each path (a tuple of keys and indices) to the 1-based line where that
node starts, so a pydantic error location becomes `file:line`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from .errors import Problem, SpecError

Loc = tuple


class LineMap:
    """Maps a document path to the line where the node at that path starts."""

    def __init__(self, lines: dict[Loc, int]):
        self._lines = lines

    def line_of(self, loc: Loc) -> int:
        """The line of `loc`, or of its nearest ancestor that exists in the document.

        Parts of a pydantic error location that are not document keys (a union member's tag, a
        validator's name) are skipped over.
        """
        best: Loc = ()
        current: Loc = ()
        for part in loc:
            candidate = current + (part,)
            if candidate in self._lines:
                current = candidate
                best = current
        return self._lines.get(best, 1)


# libyaml's parser when PyYAML has it (several times faster); the constructors below stay ours.
class _StrictLoader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):
    pass


def _construct_mapping(loader: _StrictLoader, node: yaml.MappingNode, deep: bool = False) -> dict:
    loader.flatten_mapping(node)
    result: dict = {}
    for key_node, value_node in node.value:
        key = loader.construct_object(key_node, deep=True)
        if not isinstance(key, str):
            raise yaml.constructor.ConstructorError(
                None, None, f"keys must be strings, found {key!r}", key_node.start_mark
            )
        if key in result:
            raise yaml.constructor.ConstructorError(
                None, None, f"duplicate key {key!r}", key_node.start_mark
            )
        result[key] = loader.construct_object(value_node, deep=True)
    return result


_StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


def _collect_lines(node: yaml.Node, loc: Loc, lines: dict[Loc, int]) -> None:
    lines[loc] = node.start_mark.line + 1
    if isinstance(node, yaml.MappingNode):
        for key_node, value_node in node.value:
            if isinstance(key_node, yaml.ScalarNode):
                # A key's own line is where a missing or wrong value should be reported.
                lines[loc + (key_node.value,)] = key_node.start_mark.line + 1
                _collect_lines(value_node, loc + (key_node.value,), lines)
                lines[loc + (key_node.value,)] = key_node.start_mark.line + 1
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            _collect_lines(item, loc + (index,), lines)


def parse_yaml(text: str, path: str | Path) -> tuple[Any, LineMap]:
    """Parse `text` strictly; raise SpecError naming `path:line` on any YAML problem."""
    try:
        loader = _StrictLoader(text)
        try:
            node = loader.get_single_node()
            if node is None:
                raise SpecError(Problem(str(path), 1, "the file is empty; expected a YAML mapping"))
            data = loader.construct_document(node)
        finally:
            loader.dispose()
    except yaml.MarkedYAMLError as exc:
        # An unclosed construct is reported where it opened (the mistake), not where the parser gave up.
        mark = exc.context_mark or exc.problem_mark
        line = mark.line + 1 if mark is not None else 1
        what = exc.problem or exc.context or "invalid YAML"
        if exc.context and exc.problem_mark is not None and exc.context_mark is not None:
            what = f"{what} at line {exc.problem_mark.line + 1} ({exc.context} that starts here)"
        raise SpecError(Problem(str(path), line, f"invalid YAML: {what}")) from None
    except yaml.YAMLError as exc:  # pragma: no cover - PyYAML raises marked errors in practice
        raise SpecError(Problem(str(path), 1, f"invalid YAML: {exc}")) from None
    lines: dict[Loc, int] = {}
    _collect_lines(node, (), lines)
    return data, LineMap(lines)


def read_yaml(path: str | Path) -> tuple[Any, LineMap]:
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise SpecError(Problem(str(path), 0, "no such file")) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise SpecError(Problem(str(path), 0, f"cannot read the file: {exc}")) from None
    return parse_yaml(text, path)
