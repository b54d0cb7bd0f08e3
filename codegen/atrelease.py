"""A spec as it stands at one CANN release: the versioned facts (`since`/`until`) that hold there,
without their ranges, and nothing else. `generate --cann VERSION` renders these."""

from __future__ import annotations

from typing import Any

from aclnngen.core.releases import holds_at

from .errors import FieldProblem, GenerateError
from .model import OpSpec, dump_spec


def _prune(node: Any, release: str) -> Any:
    if isinstance(node, dict):
        return {k: _prune(v, release) for k, v in node.items() if k not in ("since", "until")}
    if isinstance(node, list):
        return [
            _prune(item, release)
            for item in node
            if not isinstance(item, dict) or holds_at(item.get("since"), item.get("until"), release)
        ]
    return node


def at_release(spec: OpSpec, release: str, families: tuple[str, ...]) -> OpSpec:
    data = _prune(dump_spec(spec), release)
    data["cann_version"] = release
    data["products"] = [p for p in data.get("products", []) if p.get("supported", True)] or data.get("products")
    if not any(p.get("supported", True) for p in data.get("products") or []):
        raise GenerateError(f"{spec.name}: no product supports it at CANN {release}")
    try:
        return OpSpec.model_validate(data, context={"families": families})
    except FieldProblem as exc:
        raise GenerateError(f"{spec.name} at CANN {release}: {exc}") from None
    except ValueError as exc:
        raise GenerateError(f"{spec.name} at CANN {release}: {' '.join(str(exc).split())[:300]}") from None
