"""The vendor's test tool (TTK, `python3 -m ttk aclnn -i cases.csv`) as a peer: aclnngen's cases as
rows of TTK's ACLNN case files, and such rows back as calls of the bindings.

A row names the API and, for every tensor of the prototype in C order, its view shape, dtype,
format, strides, offset and storage shape; the scalars' dtypes and values (a value is written both
in `attributes` and as a one-point range), the attributes, the range of each input's data, which
tensors are outputs, the precision pair per output and the SoCs of the family the case was planned
for. TTK draws its own data within the ranges; so does `aclnngen run --cases`, with a seed.

Only cases the spec says succeed are exported (TTK compares results; a refused call is a failure
to it), and only the layout cases of random data: special values and adversarial data are not a
range. Tensor lists (nested shapes) are not read yet.
"""

from __future__ import annotations

import ast
import csv
import io
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

import numpy as np

from aclnngen.core import planning
from aclnngen.core.meta import op_meta
from aclnngen.core.rules import supported_dtypes, supported_families
from aclnngen.files import read_text, write_atomic
from aclnngen.runtime.shapes import NUMPY_DTYPES

from . import cases
from .opcheck import ARITHMETIC_ULPS, REDUCTION_RTOL, TRANSCENDENTAL, UNIT_ROUNDOFF, outside_tolerance

# the columns aclnngen writes, in TTK's names (docs/Operator_Test_Guides/ACLNN_Case_Writing.md there)
COLUMNS = (
    "testcase_name",
    "api_name",
    "tensor_view_shapes",
    "tensor_dtypes",
    "tensor_formats",
    "tensor_view_strides",
    "tensor_view_offsets",
    "tensor_storage_shapes",
    "output_tensor_indexes",
    "attributes",
    "scalar_dtypes",
    "scalar_data_ranges",
    "input_data_ranges",
    "precision_tolerances",
    "soc_series",
    "remark",
)
REQUIRED = ("api_name", "tensor_view_shapes", "tensor_dtypes")
# TTK's other spellings of a dtype
DTYPE_ALIASES = {"fp16": "float16", "fp32": "float32", "fp64": "float64", "bf16": "bfloat16"}
DTYPE_ALIASES |= {"c64": "complex64", "c128": "complex128"}
# layout cases of random data a row can say (the others need data or shapes TTK cannot state)
EXPORTED_CASES = ("contiguous", "non-contiguous", "offset", "broadcast", "rank0", "empty")
MAX_ROWS = 100_000


class TtkCaseError(ValueError):
    """A case file aclnngen cannot read: names the file, the line and the column."""

    user_facing = True

    def __init__(self, path: str | Path, line: int, column: str | None, message: str):
        self.path, self.line, self.column = str(path), line, column
        where = f"{path}:{line}" + (f": column {column!r}" if column else "")
        super().__init__(f"{where}: {message}")


@dataclass(frozen=True)
class TtkCase:
    """One row. Tensors are listed in prototype order; a NULL tensor has the shape None."""

    name: str
    api: str
    shapes: tuple
    dtypes: tuple[str, ...]
    formats: tuple[str, ...]
    strides: tuple
    offsets: tuple[int, ...]
    storage_shapes: tuple
    outputs: tuple[int, ...]
    attributes: Mapping[str, Any] = field(default_factory=dict)
    scalar_dtypes: tuple[str, ...] = ()
    scalar_ranges: tuple = ()
    input_ranges: tuple = ()
    tolerances: tuple | None = None
    socs: tuple[str, ...] = ()
    remark: str = ""


# --- from aclnngen's cases --------------------------------------------------------------------------


def tolerance(kind: str, dtype: str) -> tuple[float, float]:
    """The (rtol, atol) pair that stands for the precision policy of an output of this kind (TTK
    takes one pair per output): exact for a selection or an integer result, torch's pair for a
    transcendental one, the summation bound's rtol for a reduction, a few ULPs for arithmetic."""
    if dtype not in UNIT_ROUNDOFF or kind == "selection":
        return (0.0, 0.0)
    if kind == "transcendental":
        return TRANSCENDENTAL[dtype]
    if kind == "reduction":
        return (REDUCTION_RTOL[dtype], REDUCTION_RTOL[dtype])
    ulps = ARITHMETIC_ULPS * UNIT_ROUNDOFF[dtype]
    return (ulps, ulps)


def _scaled(pair: tuple[float, float], scale: float) -> tuple[float, float]:
    return (pair[0], pair[1] * scale)


def _layout(array: np.ndarray) -> tuple[tuple, int, tuple]:
    """(strides in elements, offset in elements, storage shape) of a view over its buffer."""
    item = array.dtype.itemsize
    strides = tuple(s // item for s in array.strides)
    base = array
    while isinstance(base.base, np.ndarray):
        base = base.base
    offset = (array.__array_interface__["data"][0] - base.__array_interface__["data"][0]) // item
    return strides, int(offset), (int(base.size),)


def _finite_range(array: np.ndarray) -> tuple:
    if array.dtype.kind == "b":
        return (0, 1)
    values = np.asarray(array, dtype=np.complex128 if array.dtype.kind == "c" else np.float64).real
    values = values[np.isfinite(values)]
    if values.size == 0:
        return (None, None)
    low, high = float(values.min()), float(values.max())
    if array.dtype.kind in "iu":
        return (int(low), int(high))
    return (low, high)


def case_of(meta: Mapping, values: Mapping[str, Any], *, name: str, family: str, remark: str) -> TtkCase:
    """The row of one call: `values` C-named, as `verify.cases.make_values` builds them."""
    from aclnngen.generated.products import FAMILIES  # deferred: generated data, read only by an export

    typed = op_meta(meta)
    tensors = typed.tensors
    shapes, dtypes, strides, offsets, storage, ranges = [], [], [], [], [], []
    for p in tensors:
        value = values.get(p.name)
        if value is None:
            shapes.append(None)
            dtypes.append("float32")
            strides.append(None)
            offsets.append(0)
            storage.append(None)
            continue
        array = np.asarray(value) if not isinstance(value, np.ndarray) else value
        shapes.append(tuple(int(d) for d in array.shape))
        dtypes.append(array.dtype.name if array.dtype.name in NUMPY_DTYPES else str(array.dtype))
        step, offset, store = _layout(array)
        strides.append(step)
        offsets.append(offset)
        storage.append(store)
        if p.role == "input":
            ranges.append(_finite_range(array))
    scalars = [p for p in typed.params if p.role in ("scalar", "optional_scalar")]
    attributes = {p.name: values.get(p.name) for p in typed.params if p.role == "attribute"}
    attributes |= {p.name: values.get(p.name) for p in scalars}
    outputs = tuple(i for i, p in enumerate(tensors) if p.role == "output")
    kinds = typed.formula.outputs if typed.formula else {}
    pys = [p.py for p in tensors if p.role == "output"]
    # aclnngen's atol grows with the gradient's magnitude; TTK's pair is fixed, so it takes the range's
    scale = max([1.0] + [abs(v) for v in (ranges[0] if ranges else ()) if isinstance(v, (int, float))])
    tolerances = (
        tuple(_scaled(tolerance(kinds.get(py, "arithmetic"), dtypes[i]), scale) for py, i in zip(pys, outputs))
        if kinds
        else None
    )
    socs = next((tuple(f["soc_names"] or f["soc_prefixes"]) for f in FAMILIES if f["id"] == family), ())
    return TtkCase(
        name=name,
        api=typed.symbol,
        shapes=tuple(shapes),
        dtypes=tuple(dtypes),
        formats=tuple("ND" for _ in tensors),
        strides=tuple(strides),
        offsets=tuple(offsets),
        storage_shapes=tuple(storage),
        outputs=outputs,
        attributes=attributes,
        scalar_dtypes=tuple(p.scalar_dtype or "float32" for p in scalars),
        scalar_ranges=tuple((v, v) if v is not None else (None, None) for v in (values.get(p.name) for p in scalars)),
        input_ranges=tuple(ranges),
        tolerances=tolerances,
        socs=socs,
        remark=remark,
    )


def op_cases(meta: Mapping, version: str, *, seed: int = 0) -> list[TtkCase]:
    """Every case of the op TTK can run: each family, each dtype every tensor takes there, each
    layout case of random data the spec says succeeds."""
    typed = op_meta(meta)
    found = []
    for family in supported_families(meta, version):
        names = [p.name for p in typed.tensors]
        common = [
            d
            for d in supported_dtypes(meta, names[0], family, version)
            if all(d in supported_dtypes(meta, t, family, version) for t in names)
        ]
        for dtype in common:
            applicable = dict(planning.applicable_cases(meta, version, family=family, dtype=dtype))
            for layout in EXPORTED_CASES:
                if applicable.get(layout) != 0:
                    continue
                values = cases.make_values(meta, layout, dtype, version=version, seed=seed, family=family)
                name = f"{typed.symbol}_{family}_{dtype}_{layout}"
                found.append(case_of(meta, values, name=name, family=family, remark=f"aclnngen CANN {version}"))
    return found


# --- the file --------------------------------------------------------------------------------------


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return repr(value)


def _row(case: TtkCase) -> dict[str, str]:
    return {
        "testcase_name": case.name,
        "api_name": case.api,
        "tensor_view_shapes": _cell(case.shapes),
        "tensor_dtypes": _cell(case.dtypes),
        "tensor_formats": _cell(case.formats),
        "tensor_view_strides": _cell(case.strides),
        "tensor_view_offsets": _cell(case.offsets),
        "tensor_storage_shapes": _cell(case.storage_shapes),
        "output_tensor_indexes": _cell(case.outputs),
        "attributes": _cell(dict(case.attributes)),
        "scalar_dtypes": _cell(case.scalar_dtypes),
        "scalar_data_ranges": _cell(case.scalar_ranges),
        "input_data_ranges": _cell(case.input_ranges),
        "precision_tolerances": _cell(case.tolerances),
        "soc_series": _cell(case.socs),
        "remark": case.remark,
    }


def dumps(rows: list[TtkCase]) -> str:
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=COLUMNS, lineterminator="\n", quoting=csv.QUOTE_MINIMAL)
    writer.writeheader()
    for case in rows:
        writer.writerow(_row(case))
    return out.getvalue()


def write(rows: list[TtkCase], path: str | Path) -> Path:
    path = Path(path)
    write_atomic(path, dumps(rows), what="TTK case file")
    return path


def _literal(path, line: int, column: str, text: str, default: Any = None) -> Any:
    text = text.strip()
    if not text:
        return default
    if text == "None":
        return None
    try:
        return ast.literal_eval(text)  # data only: never code
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError) as exc:
        raise TtkCaseError(path, line, column, f"not a Python literal: {text[:80]!r} ({type(exc).__name__})") from None


def _as_tuple(path, line, column, value, n: int | None = None) -> tuple:
    if value is None:
        return ()
    if not isinstance(value, (tuple, list)):
        value = (value,)
    value = tuple(value)
    if n is not None and len(value) == 1 and n > 1:  # TTK repeats a single entry for every tensor
        value = value * n
    if n is not None and value and len(value) != n:
        raise TtkCaseError(path, line, column, f"{len(value)} entries for {n} tensors")
    return value


def _shape(path, line, column, value) -> tuple | None:
    if value is None:
        return None
    if isinstance(value, int):
        value = (value,)
    if not isinstance(value, (tuple, list)) or not all(isinstance(d, int) and d >= 0 for d in value):
        if isinstance(value, (tuple, list)) and any(isinstance(d, (tuple, list)) for d in value):
            raise TtkCaseError(path, line, column, "a tensor list (nested shapes) is not read yet")
        raise TtkCaseError(path, line, column, f"not a shape: {value!r}")
    return tuple(value)


def _dtype(path, line, column, name) -> str:
    name = DTYPE_ALIASES.get(str(name), str(name))
    if name not in NUMPY_DTYPES:
        raise TtkCaseError(path, line, column, f"unknown dtype {name!r}")
    return name


def _parse_row(path, line: int, row: Mapping[str, str], index: int) -> TtkCase:
    for column in REQUIRED:
        if not (row.get(column) or "").strip():
            raise TtkCaseError(path, line, column, "required and empty")

    def lit(column, default=None):
        return _literal(path, line, column, row.get(column) or "", default)

    shapes = tuple(
        _shape(path, line, "tensor_view_shapes", s) for s in _as_tuple(path, line, "x", lit("tensor_view_shapes"))
    )
    n = len(shapes)
    dtypes = tuple(
        _dtype(path, line, "tensor_dtypes", d) for d in _as_tuple(path, line, "tensor_dtypes", lit("tensor_dtypes"), n)
    )
    formats = _as_tuple(path, line, "tensor_formats", lit("tensor_formats", ("ND",)), n) or ("ND",) * n
    strides = _as_tuple(path, line, "tensor_view_strides", lit("tensor_view_strides"), n) or (None,) * n
    offsets = _as_tuple(path, line, "tensor_view_offsets", lit("tensor_view_offsets"), n) or (0,) * n
    storage = _as_tuple(path, line, "tensor_storage_shapes", lit("tensor_storage_shapes"), n) or (None,) * n
    outputs = tuple(lit("output_tensor_indexes", ()) or ())
    if not all(isinstance(i, int) and 0 <= i < n for i in outputs):
        raise TtkCaseError(path, line, "output_tensor_indexes", f"not indexes of the {n} tensors: {outputs!r}")
    attributes = lit("attributes", {}) or {}
    if not isinstance(attributes, dict):
        raise TtkCaseError(path, line, "attributes", "not a mapping")
    scalar_dtypes = tuple(
        _dtype(path, line, "scalar_dtypes", d) for d in _as_tuple(path, line, "scalar_dtypes", lit("scalar_dtypes"))
    )
    tolerances = lit("precision_tolerances")
    return TtkCase(
        name=(row.get("testcase_name") or "").strip() or f"auto_testcase_name_{index}",
        api=row["api_name"].strip(),
        shapes=shapes,
        dtypes=dtypes,
        formats=tuple(str(f) for f in formats),
        strides=tuple(None if s is None else tuple(s) for s in strides),
        offsets=tuple(int(o or 0) for o in offsets),
        storage_shapes=tuple(None if s is None else tuple(s) for s in storage),
        outputs=outputs,
        attributes=attributes,
        scalar_dtypes=scalar_dtypes,
        scalar_ranges=_as_tuple(path, line, "scalar_data_ranges", lit("scalar_data_ranges")),
        input_ranges=_as_tuple(path, line, "input_data_ranges", lit("input_data_ranges")),
        tolerances=None if tolerances is None else tuple(tuple(t) for t in tolerances),
        socs=tuple(_as_tuple(path, line, "soc_series", lit("soc_series"))),
        remark=(row.get("remark") or "").strip(),
    )


def read(path: str | Path) -> list[TtkCase]:
    """Every enabled case of a TTK ACLNN case file (CSV). A malformed cell is a TtkCaseError
    naming the line and the column."""
    text = read_text(path, what="TTK case file")
    reader = csv.DictReader(io.StringIO(text))
    if not reader.fieldnames or "api_name" not in reader.fieldnames:
        raise TtkCaseError(path, 1, None, "no api_name column: not a TTK ACLNN case file")
    found = []
    for index, row in enumerate(reader):
        if index >= MAX_ROWS:
            raise TtkCaseError(path, reader.line_num, None, f"more than {MAX_ROWS} cases")
        if not any((v or "").strip() for v in row.values() if isinstance(v, str)):
            continue  # TTK skips blank rows
        if (row.get("is_enabled") or "").strip() in ("False", "false", "0"):
            continue
        found.append(_parse_row(path, reader.line_num, row, index))
    return found


# --- back to a call ---------------------------------------------------------------------------------


def runs_on(case: TtkCase, soc: str | None) -> bool:
    """TTK's SoC filter: a name or a prefix ending in `_` selects, `-name` excludes."""

    def matches(entry: str) -> bool:
        return soc is not None and (soc == entry or (entry.endswith("_") and soc.startswith(entry)))

    wanted = [s for s in case.socs if not s.startswith("-")]
    if any(matches(s[1:]) for s in case.socs if s.startswith("-")):
        return False
    return not wanted or any(matches(s) for s in wanted)


def _draw(rng: np.random.Generator, shape, dtype: str, bounds) -> np.ndarray:
    np_dtype = NUMPY_DTYPES[dtype]
    low, high = (list(bounds) + [None, None])[:2] if bounds else (None, None)
    low = -2 if low is None else low  # TTK's defaults
    high = 2 if high is None else high
    kind = np.dtype(np_dtype).kind
    if kind == "b":
        return rng.random(shape) < 0.5
    if kind in "iu":
        return rng.integers(int(math.ceil(low)), int(math.floor(high)) + 1, size=shape).astype(np_dtype)
    real = rng.uniform(low, high, size=shape) if low != high else np.full(shape, float(low))
    if kind == "c":
        return (real + 1j * rng.uniform(low, high, size=shape)).astype(np_dtype)
    return real.astype(np_dtype)


def _placed(data: np.ndarray, strides, offset: int, storage) -> np.ndarray:
    """`data` written into a buffer of `storage` elements, viewed with `strides` from `offset`."""
    if strides is None:
        return np.ascontiguousarray(data) if data.ndim else data.copy()
    size = int(np.prod(storage)) if storage else offset + 1 + sum((d - 1) * s for d, s in zip(data.shape, strides) if d)
    buffer = np.zeros(size, dtype=data.dtype)
    item = data.dtype.itemsize
    # a view whose base is the buffer itself, so its offset and storage read back (as bindings read them)
    view = np.ndarray(
        data.shape, data.dtype, buffer=buffer, offset=offset * item, strides=tuple(s * item for s in strides)
    )
    if data.size:
        view[...] = data
    return view


def values_of(meta: Mapping, case: TtkCase, *, seed: int = 0) -> dict[str, Any]:
    """C-named arguments for one row: inputs drawn within their ranges (seeded), outputs zero,
    scalars and attributes from `attributes` (else drawn within the scalar ranges)."""
    typed = op_meta(meta)
    tensors = typed.tensors
    if len(case.shapes) != len(tensors):
        raise ValueError(f"{case.name}: {len(case.shapes)} tensors for {typed.symbol}, which takes {len(tensors)}")
    rng = np.random.default_rng(seed)
    values: dict[str, Any] = {}
    inputs = iter(case.input_ranges)
    for i, p in enumerate(tensors):
        shape = case.shapes[i]
        bounds = next(inputs, None) if p.role == "input" else None
        if shape is None:
            values[p.name] = None
            continue
        data = (
            _draw(rng, shape, case.dtypes[i], bounds)
            if p.role == "input"
            else np.zeros(shape, NUMPY_DTYPES[case.dtypes[i]])
        )
        values[p.name] = _placed(np.asarray(data), case.strides[i], case.offsets[i], case.storage_shapes[i])
    scalars = [p for p in typed.params if p.role in ("scalar", "optional_scalar")]
    ranges = iter(case.scalar_ranges)
    for p in scalars:
        bounds = next(ranges, None)
        if p.name in case.attributes:
            values[p.name] = case.attributes[p.name]
        else:
            low, high = (list(bounds or ()) + [None, None])[:2]
            low, high = (-2.0 if low is None else low), (2.0 if high is None else high)
            values[p.name] = float(rng.uniform(low, high)) if low != high else low
    for p in typed.params:
        if p.role == "attribute":
            values[p.name] = case.attributes.get(p.name, p.default)
    return values


def formats_of(meta: Mapping, case: TtkCase) -> dict[str, str]:
    """The binding's `formats=` keyword for the row's non-ND tensors (by Python name)."""
    return {p.py: f for p, f in zip(op_meta(meta).tensors, case.formats) if f != "ND"}


def within(got: np.ndarray, want: np.ndarray, pair) -> bool:
    """TTK's comparison of one output: |got - want| <= atol + rtol * |want|, NaN equal to NaN."""
    rtol, atol = pair if pair else (0.0, 0.0)
    if got.shape != want.shape:
        return False
    if got.dtype.kind in "biu" or want.dtype.kind in "biu":
        return bool(np.array_equal(got, want))
    return not outside_tolerance(got, want, rtol, atol).any()
