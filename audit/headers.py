"""The header check: each spec's prototypes against the declarations of a CANN `include` folder.

The declarations are found by name in `aclnnop/**/*.h` (the installed layout; any `*.h` under the
folder otherwise), cut at their `;`, freed of the export macros (`ACLNN_API`,
`ACL_FUNC_VISIBILITY`, `__attribute__((...))`) and comments, and parsed by the same C parser as the
specs (`codegen.cdecl`), then compared parameter by parameter: never grepped as text.
"""

from __future__ import annotations

from aclnngen.core.meta import op_meta

import re
from pathlib import Path
from typing import Iterable, Mapping

from aclnngen.codegen.cdecl import PrototypeError, diff_prototypes, parse_prototype
from aclnngen.files import read_regular

from .findings import Finding

# A CANN header is tens of KiB (a folder of them, a few MiB); a larger one is not a header.
MAX_HEADER_BYTES = 16 << 20
_COMMENT_START = re.compile(r"/[*/]")
_NOT_NEWLINE = re.compile(r"[^\n]")
_SEGMENT_END = re.compile(r"[;{]")
_DECLARATION = re.compile(r"\baclnnStatus\s+(aclnn\w+)\s*\(")
# `__attribute__((...))` with one level of parentheses inside, as `visibility("default")`
_MACROS = re.compile(
    r"\b(?:ACLNN_API|ACL_FUNC_VISIBILITY|extern)\b|__attribute__\s*\(\([^()]*(?:\([^()]*\)[^()]*)*\)\)"
)


def _without_comments(text: str) -> str:
    """`text` with each comment blanked out, newlines kept (so line numbers hold), in one pass; an
    unclosed `/*` runs to the end of the file, as it does for a compiler."""
    parts, at = [], 0
    while True:
        start = _COMMENT_START.search(text, at)
        if start is None:
            parts.append(text[at:])
            return "".join(parts)
        parts.append(text[at : start.start()])
        if start.group() == "/*":
            close = text.find("*/", start.end())
            end = len(text) if close < 0 else close + 2
        else:
            close = text.find("\n", start.end())
            end = len(text) if close < 0 else close
        parts.append(_NOT_NEWLINE.sub(" ", text[start.start() : end]))
        at = end


def _declarations_in(code: str) -> Iterable[tuple[str, str, int]]:
    """(name, declaration, offset) of each `aclnnStatus aclnn<Name>(...);`: the code is cut at every
    `;` and `{` first, so each piece is looked at once (a search from every `aclnnStatus` to the
    next `;` was quadratic)."""
    at = 0
    for end in _SEGMENT_END.finditer(code):
        piece, start = code[at : end.start()], at
        at = end.end()
        if end.group() != ";" or not piece.rstrip().endswith(")"):
            continue
        found = _DECLARATION.search(piece)
        if found:
            yield found.group(1), piece[found.start() :], start + found.start()


def declarations(include: Path) -> dict[str, tuple[str, str]]:
    """Function name -> (declaration text, `file:line`) for every aclnn function declared. Each
    header is read as a regular file of at most MAX_HEADER_BYTES (a FIFO or device is refused by
    name, a FileError)."""
    folder = include / "aclnnop" if (include / "aclnnop").is_dir() else include
    found: dict[str, tuple[str, str]] = {}
    for header in sorted(folder.rglob("*.h")):
        if header.is_dir():
            continue
        text = read_regular(header, what="C header", limit=MAX_HEADER_BYTES).decode("utf-8", errors="replace")
        code = _without_comments(text)
        line, counted = 1, 0
        for name, declaration, offset in _declarations_in(code):
            line += code.count("\n", counted, offset)  # counted on from the last one: linear
            counted = offset
            found.setdefault(name, (_MACROS.sub(" ", declaration).rstrip(" ;"), f"{header}:{line}"))
    return found


def compare(
    include: Path, metas: Iterable[Mapping], prototypes: Mapping[str, Mapping[str, str]]
) -> tuple[list[Finding], int]:
    """(findings, functions checked): each op's two prototypes (`prototypes[op name]`, the spec's)
    against the header's declaration of the same function."""
    declared = declarations(include)
    findings: list[Finding] = []
    checked = 0
    for meta in metas:
        name = op_meta(meta).name
        for which, text in prototypes[name].items():
            spec = parse_prototype(text)
            checked += 1
            if spec.name not in declared:
                findings.append(
                    Finding(
                        name,
                        "header",
                        spec.name,
                        "mismatch",
                        "headers",
                        None,
                        str(spec),
                        f"not declared in {include}",
                    )
                )
                continue
            source, where = declared[spec.name]
            try:
                header = parse_prototype(source)
            except PrototypeError as exc:
                findings.append(
                    Finding(
                        name,
                        "header",
                        spec.name,
                        "mismatch",
                        "headers",
                        None,
                        str(spec),
                        f"{where}: cannot parse the declaration: {exc}",
                    )
                )
                continue
            for difference in diff_prototypes(header, spec):
                findings.append(
                    Finding(
                        name,
                        "header",
                        f"{spec.name}: {difference}",
                        "mismatch",
                        "headers",
                        None,
                        str(spec),
                        f"{where}: {header}",
                    )
                )
    return findings, checked
