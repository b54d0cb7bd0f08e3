"""Shapes and dtypes of op arguments, derived generically from an op's META rules.

- `broadcast_shapes(*shapes)`: NumPy/PyTorch broadcasting, raising `BroadcastError`.
- `PROMOTION` / `promote_dtypes(*dtypes)`: PyTorch-style type promotion over the dtype names a
  spec may use (bool < integers < floating < complex; float16 + bfloat16 -> float32).
- `infer_outputs(meta, values, version)`: the shape and dtype of every output tensor, from the
  rules that hold at `version` (see its docstring).
- `dtype_name(x)`, `is_contiguous(x)`, `shape_of(x)`, `numel(shape)`: what the validator and the
  case builders read from array-likes (NumPy arrays, or anything with `.shape` and `.dtype`).

META is plain data (codegen/metadata.py); nothing here knows an op by name.
"""

from __future__ import annotations

import functools
import operator
from collections import OrderedDict
from typing import Any, Callable, Iterable, Mapping

import ml_dtypes
import numpy as np

from .versions import CannVersion, holds_at

# The dtype names a spec may use, as NumPy and ml_dtypes spell them (codegen.model.DTYPES is this
# list; the runtime does not import codegen).
ALL_DTYPES: tuple[str, ...] = (
    "float16",
    "float32",
    "bfloat16",
    "float64",
    "int8",
    "int16",
    "int32",
    "int64",
    "uint8",
    "uint16",
    "uint32",
    "uint64",
    "bool",
    "complex64",
    "complex128",
)

NUMPY_DTYPES: dict[str, np.dtype] = {
    name: np.dtype(ml_dtypes.bfloat16) if name == "bfloat16" else np.dtype(name) for name in ALL_DTYPES
}


# native-byte-order dtype objects -> their name (np.dtype.name is slow to compute)
_DTYPE_NAMES: dict[Any, str] = {dt: name for name, dt in NUMPY_DTYPES.items()}


class BroadcastError(ValueError):
    """Shapes that do not broadcast together. `shapes` holds them; `axis` is the first axis
    (counted from the end, -1 = last) where two sizes disagree."""

    def __init__(self, shapes: Iterable[tuple[int, ...]], axis: int):
        self.shapes = tuple(tuple(s) for s in shapes)
        self.axis = axis
        listed = " and ".join(str(s) for s in self.shapes)
        super().__init__(f"shapes {listed} do not broadcast (sizes differ at axis {axis} from the end)")


class PromotionError(TypeError):
    """Dtypes that have no common dtype under `PROMOTION` (or a dtype the table does not know)."""


# --- broadcasting -------------------------------------------------------------------------------


def broadcast_shapes(*shapes: Iterable[int]) -> tuple[int, ...]:
    """The shape `shapes` broadcast to (NumPy rules: align on the right, size 1 stretches)."""
    shapes = tuple(tuple(s) for s in shapes)
    if not shapes:
        return ()
    first = shapes[0]
    if all(s == first for s in shapes):
        return first
    ndim = max(len(s) for s in shapes)
    out = []
    for i in range(1, ndim + 1):
        size = 1
        for s in shapes:
            if len(s) < i:
                continue
            d = s[-i]
            if d == 1:
                continue
            if size == 1:
                size = d
            elif d != size:
                raise BroadcastError(shapes, -i)
        out.append(size)
    return tuple(reversed(out))


def broadcasts_to(shape: tuple[int, ...], target: tuple[int, ...]) -> bool:
    """Whether `shape` broadcasts to exactly `target` (the result of broadcasting is `target`)."""
    try:
        return broadcast_shapes(shape, target) == tuple(target)
    except BroadcastError:
        return False


def numel(shape: Iterable[int]) -> int:
    n = 1
    for d in shape:
        n *= d
    return n


def channels(shape: tuple[int, ...]) -> int:
    """The per-channel count of an input: dim 1 when it has more than one dim, else 1."""
    return shape[1] if len(shape) > 1 else 1


# --- dtype promotion ----------------------------------------------------------------------------

_KIND = {"bool": 0}
_BITS: dict[str, int] = {"bool": 1}
for _n in ("int8", "int16", "int32", "int64"):
    _KIND[_n], _BITS[_n] = 1, int(_n[3:])
for _n in ("uint8", "uint16", "uint32", "uint64"):
    _KIND[_n], _BITS[_n] = 1, int(_n[4:])
for _n, _b in (("float16", 16), ("bfloat16", 16), ("float32", 32), ("float64", 64)):
    _KIND[_n], _BITS[_n] = 2, _b
for _n, _b in (("complex64", 64), ("complex128", 128)):
    _KIND[_n], _BITS[_n] = 3, _b


def _promote_pair(a: str, b: str) -> str | None:
    if a == b:
        return a
    ka, kb = _KIND[a], _KIND[b]
    if ka != kb:
        hi, lo = (a, b) if ka > kb else (b, a)
        if _KIND[hi] == 3 and _KIND[lo] == 2 and _BITS[lo] == 64:
            return "complex128"  # complex64 with float64 keeps float64's precision
        return hi  # bool < integer < floating < complex: the higher kind wins (PyTorch)
    if ka == 1:
        sa, sb = not a.startswith("u"), not b.startswith("u")
        if sa == sb:
            return a if _BITS[a] >= _BITS[b] else b
        signed, unsigned = (a, b) if sa else (b, a)
        if _BITS[signed] > _BITS[unsigned]:
            return signed
        wider = 2 * _BITS[unsigned]
        return f"int{wider}" if wider <= 64 else None  # uint64 with a signed int has no common type
    if ka == 2:
        if {a, b} == {"float16", "bfloat16"}:
            return "float32"
        return a if _BITS[a] >= _BITS[b] else b
    return a if _BITS[a] >= _BITS[b] else b


# PROMOTION[(a, b)]: the dtype a and b promote to, or None when they have no common dtype.
PROMOTION: dict[tuple[str, str], str | None] = {
    (a, b): _promote_pair(a, b) for a in ALL_DTYPES for b in ALL_DTYPES
}


def promote_names(names: Iterable[str]) -> str | None:
    """The promoted dtype name of `names`, or None if they have none (or a name is unknown)."""
    result = None
    for name in names:
        if name not in _KIND:
            return None
        result = name if result is None else PROMOTION[(result, name)]
        if result is None:
            return None
    return result


def promote_dtypes(*dtypes: Any) -> np.dtype:
    """The dtype `dtypes` (NumPy dtypes, dtype names or arrays' `.dtype`) promote to, like
    torch.result_type: float16 + bfloat16 -> float32, int + float -> the float, bool + x -> x.
    Raises PromotionError if they have no common dtype."""
    if not dtypes:
        raise PromotionError("promote_dtypes needs at least one dtype")
    names = [dtype_name_of(d) for d in dtypes]
    result = promote_names(names)
    if result is None:
        raise PromotionError(f"dtypes {', '.join(map(str, names))} have no common dtype")
    return NUMPY_DTYPES[result]


# --- reading array-likes ------------------------------------------------------------------------


def dtype_name_of(dtype: Any) -> str:
    """The spec's name for a dtype object (NumPy dtype, scalar type, name, or e.g. torch.float32).

    A non-native byte order is reported as such, so it never passes for the native dtype."""
    try:
        known = _DTYPE_NAMES.get(dtype)  # fast path: a native dtype of the table
    except TypeError:  # unhashable
        known = None
    if known is not None:
        return known
    if dtype is None:  # np.dtype(None) would mean float64
        return "None"
    try:
        dt = np.dtype(dtype)
    except Exception:
        text = str(dtype)
        return text.rsplit(".", 1)[-1] if text.startswith("torch.") else text
    name = dt.name
    if not dt.isnative:
        return f"{name} (non-native byte order)"
    return name


def dtype_name(x: Any) -> str:
    """The dtype name of an array-like's `.dtype`."""
    return dtype_name_of(x.dtype)


def shape_of(x: Any) -> tuple[int, ...]:
    """`x.shape` as a tuple of non-negative ints; ValueError/TypeError if it is not one."""
    shape = x.shape
    if type(shape) is tuple and all(type(d) is int and d >= 0 for d in shape):
        return shape  # fast path: NumPy arrays
    shape = tuple(operator.index(d) for d in shape)
    for d in shape:
        if d < 0:
            raise ValueError(f"negative dimension {d} in shape {shape}")
    return shape


def _itemsize(x: Any) -> int | None:
    size = getattr(x, "itemsize", None)
    if isinstance(size, int):
        return size
    try:
        return np.dtype(x.dtype).itemsize
    except Exception:
        return None


def c_contiguous(shape, strides) -> bool:
    """Whether `strides` (in elements) lay `shape` out C-contiguously; sizes of 1 ignore their
    stride and an empty tensor is contiguous."""
    if 0 in tuple(shape):
        return True
    expected = 1
    for d, s in zip(reversed(tuple(shape)), reversed(tuple(strides))):
        if d != 1 and s != expected:
            return False
        expected *= d
    return True


def is_contiguous(x: Any) -> bool:
    """Whether an array-like is C-contiguous: from a boolean `contiguous` attribute, NumPy
    `.flags`, an `is_contiguous()` method, or `.strides` (in bytes, NumPy-style, or in elements).
    Sizes of 1 ignore their stride; an empty tensor is contiguous. Without any of these, True."""
    attr = getattr(x, "contiguous", None)
    if isinstance(attr, (bool, np.bool_)):
        return bool(attr)
    flags = getattr(x, "flags", None)
    if flags is not None:
        try:
            return bool(flags["C_CONTIGUOUS"])
        except Exception:
            value = getattr(flags, "c_contiguous", None)
            if value is not None:
                return bool(value)
    method = getattr(x, "is_contiguous", None)
    if callable(method):
        return bool(method())
    strides = getattr(x, "strides", None)
    if strides is None:
        return True
    shape = shape_of(x)
    strides = tuple(int(s) for s in strides)
    if len(strides) != len(shape):
        return False
    if 0 in shape:
        return True
    units = [1]
    itemsize = _itemsize(x)
    if itemsize and itemsize != 1:
        units.append(itemsize)
    for unit in units:
        expected, ok = unit, True
        for d, s in zip(reversed(shape), reversed(strides)):
            if d != 1 and s != expected:
                ok = False
                break
            expected *= d
        if ok:
            return True
    return False


# --- per-META caching ---------------------------------------------------------------------------


class MetaCache:
    """A small LRU of values computed from one META at one (family, version).

    Keyed by `meta["name"]`, the META's identity and the extra key; the entry keeps a reference
    to its META, so a key can never be reused by another dict. A META is treated as immutable:
    mutate a copy, not a META that has been used.
    """

    def __init__(self, build: Callable[..., Any], maxsize: int = 512):
        self._build = build
        self._maxsize = maxsize
        self._entries: OrderedDict = OrderedDict()

    def get(self, meta: Mapping, *key: Any) -> Any:
        full = (meta["name"], id(meta), *key)
        entry = self._entries.get(full)
        if entry is not None and entry[0] is meta:
            self._entries.move_to_end(full)
            return entry[1]
        value = self._build(meta, *key)
        self._entries[full] = (meta, value)
        if len(self._entries) > self._maxsize:
            self._entries.popitem(last=False)
        return value

    def clear(self) -> None:
        self._entries.clear()


@functools.lru_cache(maxsize=256)
def version_key(version: str | CannVersion) -> str:
    """`version` as text, checked (cached): a ValueError names a malformed release."""
    text = str(version)
    CannVersion(text)
    return text


def rules_at(meta: Mapping, version: str | CannVersion, family: str | None = None) -> tuple[dict, ...]:
    """The META's rules that hold at `version` on product `family`, in spec order (cached). Without
    a family, every family's rules (a rule limited to some families included)."""
    return _RULES.get(meta, version_key(version), family)


def holds_on(rule: Mapping, family: str | None) -> bool:
    """Whether a rule holds on `family` (a rule without `families` holds on all; None: any)."""
    return family is None or not rule.get("families") or family in rule["families"]


def _build_rules(meta: Mapping, version: str, family: str | None) -> tuple[dict, ...]:
    return tuple(r for r in meta["rules"] if holds_at(r.get("since"), r.get("until"), version) and holds_on(r, family))


_RULES = MetaCache(_build_rules)


# --- output inference ---------------------------------------------------------------------------


def _output_plan(meta: Mapping, version: str, family: str | None):
    rules = rules_at(meta, version, family)
    if family is None:
        # Every family's rules at once: where one family broadcasts and another demands one shape,
        # the broadcast shape is the answer (it equals the shared shape whenever the inputs agree).
        rules = tuple(sorted(rules, key=lambda r: r["kind"] != "broadcast"))
    inputs = tuple(p["name"] for p in meta["params"] if p["role"] == "input")
    return rules, inputs, tuple(meta["outputs"])


_OUTPUT_PLANS = MetaCache(_output_plan)


def _shape_from_rules(name, rules, known, strict):
    for rule in rules:
        kind = rule["kind"]
        if kind == "broadcast" and rule["output"] == name:
            present = [known[i] for i in rule["inputs"] if i in known]
            if not present:
                continue
            try:
                return broadcast_shapes(*present)
            except BroadcastError:
                if strict:
                    raise
                return present[0]  # the validator (or the library) rejects these inputs anyway
        elif kind == "same_shape" and name in rule["params"]:
            for other in rule["params"]:
                if other != name and other in known:
                    return known[other]
        elif kind == "per_channel" and rule.get("grad") == name:
            weight, source = known.get(rule["weight"]), known.get(rule["input"])
            if weight is not None and numel(weight) == 1:
                return weight
            if source is not None:
                return (channels(source),)
            if weight is not None:
                return (numel(weight),)
        elif kind == "broadcast_to":
            if rule["param"] == name and rule["target"] in known:
                return known[rule["target"]]
            if rule["target"] == name and rule["param"] in known:
                return known[rule["param"]]
    return None


def _dtype_from_rules(name, rules, known, first_input, strict):
    for rule in rules:
        kind = rule["kind"]
        if kind in ("promote", "castable") and rule["output"] == name:
            present = [known[i] for i in rule["inputs"] if i in known]
            if not present:
                continue
            promoted = promote_names(present)
            if promoted is None:
                if strict:
                    raise PromotionError(f"dtypes {', '.join(present)} have no common dtype")
                return present[0]
            return promoted
        if kind == "same_dtype" and name in rule["params"]:
            for other in rule["params"]:
                if other != name and other in known:
                    return known[other]
    return first_input


def infer_outputs(
    meta: Mapping, values: Mapping[str, Any], version: str | CannVersion, *, strict: bool = False,
    family: str | None = None,
) -> dict[str, tuple[tuple[int, ...], np.dtype]]:
    """Shape and dtype of every output tensor, from the rules that hold at `version` (on `family`,
    when given: rules limited to other families are left out).

    Shape: an output a `broadcast` rule names gets the broadcast shape of its inputs; one in a
    `same_shape` rule gets the shape of another member (inputs first, then outputs already
    inferred); the `grad` of a `per_channel` rule gets the weight's shape when the weight has one
    element, else `(C,)` with C = the input's dim 1 (1 for rank <= 1); a `broadcast_to` param or
    target gets the other's shape; otherwise the shape of the first input tensor.
    Dtype: an output a `promote` rule names gets the promoted dtype of its inputs; one in a
    `same_dtype` rule gets another member's dtype; otherwise the first input tensor's dtype.

    `values` maps C names to array-likes (`.shape`, `.dtype`); inputs that are None, absent or
    not array-likes are left out. An output nothing can be derived for (no input present) is left out of the result.
    With `strict=False` (the default) inputs that do not broadcast or promote give a best guess
    (the first input's shape or dtype), so the validator, or the library, reports the error with
    its status; `strict=True` raises BroadcastError / PromotionError instead.
    """
    rules, inputs, outputs = _OUTPUT_PLANS.get(meta, version_key(version), family)
    shapes: dict[str, tuple[int, ...]] = {}
    dtypes: dict[str, str] = {}
    for name in inputs:
        value = values.get(name)
        if value is None:
            continue
        try:
            shape, dtype = shape_of(value), dtype_name(value)
        except Exception:
            if strict:
                raise TypeError(f"{name} is not a tensor: {type(value).__name__} has no valid .shape/.dtype") from None
            continue  # not a tensor: the validator reports it with its status
        shapes[name] = shape
        dtypes[name] = dtype
    first_shape = next(iter(shapes.values()), None)
    first_dtype = next(iter(dtypes.values()), None)

    pending = list(outputs)
    while pending:  # outputs may follow other outputs (same_shape [out1, out2])
        progressed = False
        for name in list(pending):
            shape = _shape_from_rules(name, rules, shapes, strict)
            if shape is not None:
                shapes[name] = shape
                pending.remove(name)
                progressed = True
        if not progressed:
            break
    for name in pending:
        if first_shape is not None:
            shapes[name] = first_shape

    for name in outputs:
        dtype = _dtype_from_rules(name, rules, dtypes, first_dtype, strict)
        if dtype is not None:
            dtypes[name] = dtype

    result = {}
    for name in outputs:
        if name in shapes and name in dtypes:
            np_dtype = NUMPY_DTYPES.get(dtypes[name])
            if np_dtype is None:
                try:
                    np_dtype = np.dtype(dtypes[name])
                except Exception:
                    if strict:
                        raise PromotionError(f"{dtypes[name]!r} is not a NumPy dtype") from None
                    continue
            result[name] = (shapes[name], np_dtype)
    return result
