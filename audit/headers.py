"""The header check: each spec's prototypes against the declarations of a CANN `include` folder.

The declarations are found by name in `aclnnop/**/*.h` (the installed layout; any `*.h` under the
folder otherwise), cut at their `;`, freed of the export macros (`ACLNN_API`,
`ACL_FUNC_VISIBILITY`, `__attribute__((...))`) and comments, and parsed by the same C parser as the
specs (`codegen.cdecl`), then compared parameter by parameter: never grepped as text.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Iterable, Mapping

from aclnngen.codegen.cdecl import PrototypeError, diff_prototypes, parse_prototype

from .findings import Finding

_COMMENT = re.compile(r"/\*.*?\*/|//[^\n]*", re.S)
_MACROS = re.compile(r"\b(?:ACLNN_API|ACL_FUNC_VISIBILITY|extern)\b|__attribute__\s*\(\(.*?\)\)", re.S)


def declarations(include: Path) -> dict[str, tuple[str, str]]:
    """Function name -> (declaration text, `file:line`) for every aclnn function declared."""
    folder = include / "aclnnop" if (include / "aclnnop").is_dir() else include
    found: dict[str, tuple[str, str]] = {}
    for header in sorted(folder.rglob("*.h")):
        text = header.read_text(encoding="utf-8", errors="replace")
        code = _COMMENT.sub(lambda m: re.sub(r"[^\n]", " ", m.group()), text)  # keep line numbers
        for match in re.finditer(r"\baclnnStatus\s+(aclnn\w+)\s*\([^;{]*\)\s*;", code):
            line = code.count("\n", 0, match.start()) + 1
            found.setdefault(match.group(1), (_MACROS.sub(" ", match.group()).rstrip(" ;"), f"{header}:{line}"))
    return found


def compare(include: Path, metas: Iterable[Mapping], prototypes: Mapping[str, Mapping[str, str]]) -> tuple[list[Finding], int]:
    """(findings, functions checked): each op's two prototypes (`prototypes[op name]`, the spec's)
    against the header's declaration of the same function."""
    declared = declarations(include)
    findings: list[Finding] = []
    checked = 0
    for meta in metas:
        for which, text in prototypes[meta["name"]].items():
            spec = parse_prototype(text)
            checked += 1
            if spec.name not in declared:
                findings.append(Finding(meta["name"], "header", spec.name, "mismatch", "headers", None,
                                        str(spec), f"not declared in {include}"))
                continue
            source, where = declared[spec.name]
            try:
                header = parse_prototype(source)
            except PrototypeError as exc:
                findings.append(Finding(meta["name"], "header", spec.name, "mismatch", "headers", None,
                                        str(spec), f"{where}: cannot parse the declaration: {exc}"))
                continue
            for difference in diff_prototypes(header, spec):
                findings.append(Finding(meta["name"], "header", f"{spec.name}: {difference}", "mismatch", "headers",
                                        None, str(spec), f"{where}: {header}"))
    return findings, checked
