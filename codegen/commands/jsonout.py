"""`--json`: every command prints one JSON object on stdout instead of its table (shapes: docs/cli.md).

The exit codes every command shares live here too: 0 the verdict holds, 1 it does not (or the
command failed before reaching it), 2 a usage error, `EXIT_NO_CANN` no CANN where one was asked
for (docs/cli.md).
"""

from __future__ import annotations

import json
import sys

EXIT_NO_CANN = 3


def emit(data: dict) -> None:
    json.dump(data, sys.stdout, indent=2, ensure_ascii=False)
    sys.stdout.write("\n")


def problems(items) -> list[dict]:
    return [{"path": p.path, "line": p.line, "message": p.message} for p in items]


def failure(command: str, error: str, items=()) -> None:
    """The shape every command prints under --json when it fails before its own verdict."""
    emit({"command": command, "ok": False, "error": error, "problems": problems(items)})
