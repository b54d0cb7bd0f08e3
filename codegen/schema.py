"""The JSON Schemas of the spec files, from the pydantic models, for editors (completion, hover,
checks as you type): draft 2020-12, an `$id`, each field's description, enums for dtypes and for
the product families of products.yaml, and the reserved names refused for `py_name`."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from .model import FAMILY_MARK
from .products import ProductTable

DRAFT = "https://json-schema.org/draft/2020-12/schema"
ID_BASE = "https://aclnngen.invalid/schema/"


def _families(node: Any, ids: list[str]) -> Any:
    if isinstance(node, dict):
        if node.get(FAMILY_MARK):  # keep its description and title, swap the pattern for the enum
            kept = {k: v for k, v in node.items() if k not in (FAMILY_MARK, "pattern")}
            return {**kept, "type": "string", "enum": ids}
        return {key: _families(value, ids) for key, value in node.items()}
    if isinstance(node, list):
        return [_families(item, ids) for item in node]
    return node


def json_schema(model: type[BaseModel], name: str, products: ProductTable) -> dict:
    schema = _families(model.model_json_schema(), list(products.ids))
    return {"$schema": DRAFT, "$id": f"{ID_BASE}{name}.schema.json", **schema}
