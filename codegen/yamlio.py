"""Strict YAML reading: duplicate keys are errors and every node's line is remembered.

PyYAML silently keeps the last of two equal keys; a spec must not. The loader builds plain Python
data plus a `LineMap` from each path (a tuple of keys and indices) to the 1-based line where that
node starts, so a pydantic error location becomes `file:line`.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any

import yaml

from .errors import Problem, SpecError

Loc = tuple

# Limits on every YAML file aclnngen reads (docs/security.md): each gives one line, at once.
MAX_BYTES = 1 << 20  # 1 MiB; the largest spec is about 10 KiB
MAX_DEPTH = 40  # nested mappings and sequences; a spec needs about 8
MAX_INT_BITS = 64  # integers beyond 64 bits mean nothing to the C API


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
            raise yaml.constructor.ConstructorError(None, None, f"duplicate key {key!r}", key_node.start_mark)
        result[key] = loader.construct_object(value_node, deep=True)
    return result


_StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


def _construct_int(loader: _StrictLoader, node: yaml.ScalarNode) -> int:
    # Checked on the text first: converting a 5,000-digit integer is itself slow and raises.
    digits = sum(ch.isalnum() for ch in node.value)
    if digits > 2 + MAX_INT_BITS:  # 0b and 64 binary digits is the longest 64-bit spelling
        raise yaml.constructor.ConstructorError(
            None, None, f"integer with {digits} digits; integers are limited to {MAX_INT_BITS} bits", node.start_mark
        )
    value = yaml.SafeLoader.construct_yaml_int(loader, node)
    if not -(1 << MAX_INT_BITS) < value < (1 << MAX_INT_BITS):
        raise yaml.constructor.ConstructorError(
            None,
            None,
            f"integer {node.value} is out of range; integers are limited to {MAX_INT_BITS} bits",
            node.start_mark,
        )
    return value


_StrictLoader.add_constructor("tag:yaml.org,2002:int", _construct_int)


def check_events(text: str, path: str | Path, what: str = "specs") -> None:
    """No anchors or aliases (a small file must not expand into a huge one) and no nesting deeper
    than MAX_DEPTH, found from the parser's events before anything is built."""
    depth = 0
    loader = _StrictLoader(text)
    try:
        while loader.check_event():
            event = loader.get_event()
            line = event.start_mark.line + 1 if event.start_mark is not None else 1
            if isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None) is not None:
                raise SpecError(
                    Problem(
                        str(path),
                        line,
                        f"YAML anchors and aliases (& and *) are not allowed in {what}; write the value out",
                    )
                )
            if isinstance(event, (yaml.MappingStartEvent, yaml.SequenceStartEvent)):
                depth += 1
                if depth > MAX_DEPTH:
                    raise SpecError(
                        Problem(str(path), line, f"nested more than {MAX_DEPTH} levels deep; the limit is {MAX_DEPTH}")
                    )
            elif isinstance(event, (yaml.MappingEndEvent, yaml.SequenceEndEvent)):
                depth -= 1
    finally:
        loader.dispose()


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
        check_events(text, path)
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
        if "maximum nesting depth" in (exc.problem or ""):  # PyYAML >= 6.0.4 stops deep nesting itself
            raise SpecError(
                Problem(str(path), line, f"nested more than {MAX_DEPTH} levels deep; the limit is {MAX_DEPTH}")
            ) from None
        what = exc.problem or exc.context or "invalid YAML"
        if exc.context and exc.problem_mark is not None and exc.context_mark is not None:
            what = f"{what} at line {exc.problem_mark.line + 1} ({exc.context} that starts here)"
        raise SpecError(Problem(str(path), line, f"invalid YAML: {what}")) from None
    except yaml.YAMLError as exc:  # pragma: no cover - PyYAML raises marked errors in practice
        raise SpecError(Problem(str(path), 1, f"invalid YAML: {exc}")) from None
    lines: dict[Loc, int] = {}
    _collect_lines(node, (), lines)
    return data, LineMap(lines)


def read_text(path: str | Path) -> str:
    """The text of a spec file: a regular file (a FIFO or device is refused without reading it), at
    most MAX_BYTES, UTF-8 (a bad byte is reported with its line)."""
    path = Path(path)
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        raise SpecError(Problem(str(path), 0, "no such file")) from None
    except OSError as exc:
        raise SpecError(Problem(str(path), 0, f"cannot read the file: {exc.strerror}")) from None
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_BYTES:
        os.close(fd)
        if stat.S_ISDIR(info.st_mode):
            raise SpecError(Problem(str(path), 0, "a folder; a spec is a regular file"))
        if not stat.S_ISREG(info.st_mode):
            raise SpecError(
                Problem(str(path), 0, "not a regular file (a FIFO, device or socket); a spec is a regular file")
            )
        raise SpecError(
            Problem(str(path), 0, f"{info.st_size} bytes; spec files are limited to {MAX_BYTES} bytes (1 MiB)")
        )
    with os.fdopen(fd, "rb") as f:
        try:
            data = f.read(MAX_BYTES + 1)
        except OSError as exc:
            raise SpecError(Problem(str(path), 0, f"cannot read the file: {exc.strerror}")) from None
    if len(data) > MAX_BYTES:
        raise SpecError(
            Problem(str(path), 0, f"more than {MAX_BYTES} bytes; spec files are limited to {MAX_BYTES} bytes (1 MiB)")
        )
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise SpecError(
            Problem(str(path), line, f"not UTF-8: byte 0x{data[exc.start]:02x} at byte offset {exc.start}")
        ) from None


def read_yaml(path: str | Path) -> tuple[Any, LineMap]:
    return parse_yaml(read_text(path), path)
