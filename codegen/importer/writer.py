"""Writing a draft spec to `<dir>/<op>.yaml` with a header saying where it came from."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import yaml

from aclnngen.files import FileError, locked, read_regular, write_atomic

from .draft import TODO, snake
from .facts import PageFacts

HEADER = (
    "# yaml-language-server: $schema=../schema/op.schema.json\n"
    "# Draft imported by `aclnngen import` from {path}.\n"
    "# Every TODO (listed under `todo:` at the end) is for a person to write; `aclnngen validate`\n"
    "# reports them until the list is gone.\n"
)


class _Dumper(yaml.SafeDumper):
    """Block style, except lists of plain values (dtypes, params), which read best on one line;
    never anchors (specs forbid them), even where two facts share one list."""

    def ignore_aliases(self, data):
        return True


def _list(dumper: yaml.SafeDumper, data: list) -> yaml.Node:
    flow = all(not isinstance(item, (dict, list)) for item in data)
    return dumper.represent_sequence("tag:yaml.org,2002:seq", data, flow_style=flow)


_Dumper.add_representer(list, _list)


def block_yaml(data: Any) -> str:
    """`data` as YAML the way specs and profiles are written: block style, plain lists on one
    line, keys in their order, no anchors."""
    return yaml.dump(data, Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=200, default_flow_style=False)


def draft_text(draft: dict[str, Any], facts: PageFacts) -> str:
    return HEADER.format(path=facts.path) + block_yaml(draft)


class DraftError(ValueError):
    user_facing = True


def write_draft(draft: dict[str, Any], facts: PageFacts, directory: Path) -> Path:
    stem = snake(facts.op) if facts.op else Path(facts.path).stem
    target = directory / f"{stem}.yaml"
    if draft.get("name") == TODO:
        target = directory / f"{Path(facts.path).stem}.draft.yaml"
    try:
        with locked(directory, what="draft folder"):
            # a draft replaces an earlier draft, never a spec a person finished
            if os.path.lexists(target):
                head = read_regular(target, what="draft", follow_links=False).decode("utf-8", "replace")[:1000]
                if "# Draft imported by `aclnngen import`" not in head:
                    raise DraftError(
                        f"{target} exists and is not a draft; import into another folder, or merge with --into {target}"
                    )
            write_atomic(target, draft_text(draft, facts), what="draft")  # never through a link
    except FileError as exc:
        raise DraftError(str(exc)) from None
    return target
