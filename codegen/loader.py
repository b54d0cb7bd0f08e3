"""Loading specs from disk: strict YAML, pydantic validation, and every problem as `file:line`."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from .errors import FieldProblem, Problem, SpecError
from .model import OpSpec
from .products import ProductTable
from . import tables
from .tables import BUILTIN_SPECS_DIR, table_path
from .yamlio import LineMap, read_yaml

REPO_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_SPECS_DIR = BUILTIN_SPECS_DIR

M = TypeVar("M", bound=BaseModel)


@dataclass(frozen=True)
class LoadedSpec:
    """A validated spec and where it came from (for messages and generated headers)."""

    spec: OpSpec
    path: Path
    lines: LineMap


def _describe(error: dict) -> str:
    kind = error["type"]
    msg = error["msg"]
    loc = [str(p) for p in error["loc"] if isinstance(p, (str, int))]
    field = loc[-1] if loc else ""
    if kind == "missing":
        return f"missing key {field!r}"
    if kind == "extra_forbidden":
        return f"unknown key {field!r}"
    if kind == "union_tag_invalid":
        ctx = error.get("ctx", {})
        return f"unknown kind {ctx.get('tag')!r}; expected one of {ctx.get('expected_tags')}"
    if kind == "union_tag_not_found":
        return "missing key 'kind' (it selects the rule or oracle type)"
    if msg.startswith("Value error, "):
        msg = msg[len("Value error, ") :]
    where = f"{field}: " if field and not field.isdigit() else ""
    return (
        f"{where}{msg} (found {error.get('input')!r})"
        if kind not in ("value_error",) and "input" in error
        else f"{where}{msg}"
    )


def validate_model(model: type[M], data: Any, path: Path, lines: LineMap, context: dict | None = None) -> M:
    """Validate `data` as `model`, turning every failure into `SpecError` with `path:line`."""
    try:
        return model.model_validate(data, context=context or {})
    except ValidationError as exc:
        problems = []
        for error in exc.errors(include_url=False):
            loc = tuple(error["loc"])
            problems.append(Problem(str(path), lines.line_of(loc), _describe(error) + _doc_pointer(model, loc)))
        raise SpecError(_dedupe(problems)) from None
    except FieldProblem as exc:
        raise SpecError(
            Problem(str(path), lines.line_of(exc.loc), exc.message + _doc_pointer(model, exc.loc))
        ) from None


def _doc_pointer(model: type, loc: tuple) -> str:
    """For an op spec, where docs/spec-language.md describes the key at `loc`."""
    if model is not OpSpec:
        return ""
    from .spec_sections import pointer

    return " " + pointer(loc)


def _dedupe(problems: list[Problem]) -> list[Problem]:
    seen: set[Problem] = set()
    out = []
    for p in problems:
        if p not in seen:
            seen.add(p)
            out.append(p)
    return out


def load_products(specs_dir: Path = DEFAULT_SPECS_DIR) -> ProductTable:
    """The product table of `specs_dir`, else the built-in one (codegen/tables.py)."""
    path = table_path(specs_dir, "products.yaml")
    data, lines = read_yaml(path)
    return validate_model(ProductTable, data, path, lines)


def load_spec(path: Path, products: ProductTable) -> LoadedSpec:
    """One spec, validated. Every problem is a SpecError naming the file: even an unexpected failure
    (a bug of aclnngen) is reported against this spec, so it never stops the others' validation."""
    try:
        return _load_spec(Path(path), products)
    except SpecError:
        raise
    except Exception as exc:
        raise SpecError(
            Problem(
                str(path),
                0,
                f"aclnngen could not validate this spec ({type(exc).__name__}: {' '.join(str(exc).split())[:200]}); "
                "this is a bug in aclnngen, please report it",
            )
        ) from exc


def _load_spec(path: Path, products: ProductTable) -> LoadedSpec:
    data, lines = read_yaml(path)
    if not isinstance(data, dict):
        raise SpecError(Problem(str(path), 1, "a spec is a YAML mapping at the top level"))
    if "todo" in data:  # an imported draft: its TODOs first, then whatever else is wrong
        from .importer.todo import todo_problems

        problems = todo_problems(data, path, lines)
        try:
            validate_model(
                OpSpec, {k: v for k, v in data.items() if k != "todo"}, path, lines, context={"families": products.ids}
            )
        except SpecError as exc:
            problems += [p for p in exc.problems if p not in problems]
        raise SpecError(problems)
    spec = validate_model(OpSpec, data, path, lines, context={"families": products.ids})
    expected_stem = spec.snake_name
    if path.stem != expected_stem:
        raise SpecError(
            Problem(
                str(path),
                lines.line_of(("name",)),
                f"op {spec.name} must live in {expected_stem}.yaml (found {path.name})",
            )
        )
    return LoadedSpec(spec, path, lines)


def spec_paths(specs_dir: Path = DEFAULT_SPECS_DIR) -> list[Path]:
    return tables.spec_paths(specs_dir)


def load_all(specs_dir: Path = DEFAULT_SPECS_DIR, products: ProductTable | None = None) -> list[LoadedSpec]:
    """Every spec under `specs_dir/ops`, in name order; all problems of all files in one SpecError."""
    products = products or load_products(specs_dir)
    loaded, problems = [], []
    for path in spec_paths(specs_dir):
        try:
            loaded.append(load_spec(path, products))
        except SpecError as exc:
            problems.extend(exc.problems)
    if problems:
        raise SpecError(problems)
    return loaded
