"""`--json`: every command prints one JSON object on stdout instead of its table (shapes: docs/cli.md)."""

from __future__ import annotations

import json
import sys


def emit(data: dict) -> None:
    json.dump(data, sys.stdout, indent=2, ensure_ascii=False)
    sys.stdout.write("\n")


def problems(items) -> list[dict]:
    return [{"path": p.path, "line": p.line, "message": p.message} for p in items]
