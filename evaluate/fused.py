"""An elementwise function traced once into a program of NumPy steps, then run piece by piece.

Whole-array NumPy makes every intermediate of `a * b + c` a fresh full-size temporary. Here the
function is called once on `Node`s instead of arrays: each ufunc call, `np.where` and cast it
makes is recorded as a step (repeated steps once). The program then runs over pieces of the
inputs: each step a ufunc with `out=` into buffers its thread keeps across pieces and calls (slots
given by liveness), the last step of each output writing straight into the output's memory.

The steps are the very ufuncs whole-array evaluation calls, on the same dtypes, so each element
gets the same bits (tested). One exception of form, not of value: `where` selects bit patterns
(`b ^ ((a ^ b) & mask)`, branch-free) where NumPy's `np.where` branches per element, about 5x
slower on data whose selection is unpredictable.

A function whose result depends on more than elementwise steps (a reduction, a branch on a
tensor's value, a ufunc method) raises NotFusable while it is traced: the caller evaluates it
another way.
"""

from __future__ import annotations

import itertools
import math
import threading
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

import numpy as np


class NotFusable(Exception):
    """The traced function does something a program of elementwise steps cannot hold."""


_NONE: dict = {}  # a call's keywords when it has none
_OUT_BY_NAME = (np.maximum, np.minimum)
_SELECT_FROM = 4096  # elements: below, np.where's own branch costs less than the passes
_BITS = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}  # a where's select, by itemsize


@dataclass(frozen=True)
class Step:
    kind: str  # "input", "ufunc", "where", "cast"
    fn: Any  # the input's name, the ufunc, or None
    args: tuple  # Node indices (int) or ("const", value)
    dtype: np.dtype


class Node:
    """A traced value: one step's result. Operators map to the ufuncs ndarray's operators call."""

    __slots__ = ("program", "index", "dtype")
    __hash__ = None  # type: ignore[assignment]  # `==` builds a step; Nodes are not keys

    def __init__(self, program: Program, index: int, dtype: np.dtype):
        self.program, self.index, self.dtype = program, index, dtype

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        if method != "__call__" or kwargs or ufunc.nout != 1:
            raise NotFusable(f"{ufunc.__name__}.{method} with {sorted(kwargs)} on a traced tensor")
        return self.program.ufunc(ufunc, inputs)

    def __array_function__(self, func, types, args, kwargs):
        if func is np.where and len(args) == 3 and not kwargs:
            return self.program.where(*args)
        raise NotFusable(f"np.{func.__name__} on a traced tensor")

    def __bool__(self):
        raise NotFusable("a tensor's values decide a Python branch")

    def astype(self, dtype) -> Node:
        return self.program.cast(self, np.dtype(dtype))

    __add__ = lambda s, o: np.add(s, o)  # noqa: E731
    __radd__ = lambda s, o: np.add(o, s)  # noqa: E731
    __sub__ = lambda s, o: np.subtract(s, o)  # noqa: E731
    __rsub__ = lambda s, o: np.subtract(o, s)  # noqa: E731
    __mul__ = lambda s, o: np.multiply(s, o)  # noqa: E731
    __rmul__ = lambda s, o: np.multiply(o, s)  # noqa: E731
    __truediv__ = lambda s, o: np.true_divide(s, o)  # noqa: E731
    __rtruediv__ = lambda s, o: np.true_divide(o, s)  # noqa: E731
    __floordiv__ = lambda s, o: np.floor_divide(s, o)  # noqa: E731
    __rfloordiv__ = lambda s, o: np.floor_divide(o, s)  # noqa: E731
    __mod__ = lambda s, o: np.remainder(s, o)  # noqa: E731
    __rmod__ = lambda s, o: np.remainder(o, s)  # noqa: E731
    __pow__ = lambda s, o: np.power(s, o)  # noqa: E731
    __rpow__ = lambda s, o: np.power(o, s)  # noqa: E731
    __and__ = lambda s, o: np.bitwise_and(s, o)  # noqa: E731
    __rand__ = lambda s, o: np.bitwise_and(o, s)  # noqa: E731
    __or__ = lambda s, o: np.bitwise_or(s, o)  # noqa: E731
    __ror__ = lambda s, o: np.bitwise_or(o, s)  # noqa: E731
    __xor__ = lambda s, o: np.bitwise_xor(s, o)  # noqa: E731
    __rxor__ = lambda s, o: np.bitwise_xor(o, s)  # noqa: E731
    __lt__ = lambda s, o: np.less(s, o)  # noqa: E731
    __le__ = lambda s, o: np.less_equal(s, o)  # noqa: E731
    __gt__ = lambda s, o: np.greater(s, o)  # noqa: E731
    __ge__ = lambda s, o: np.greater_equal(s, o)  # noqa: E731
    __eq__ = lambda s, o: np.equal(s, o)  # type: ignore[assignment]  # noqa: E731
    __ne__ = lambda s, o: np.not_equal(s, o)  # type: ignore[assignment]  # noqa: E731
    __neg__ = lambda s: np.negative(s)  # noqa: E731
    __pos__ = lambda s: np.positive(s)  # noqa: E731
    __abs__ = lambda s: np.absolute(s)  # noqa: E731
    __invert__ = lambda s: np.invert(s)  # noqa: E731


def _probe(value):
    """What stands for `value` when a step's result dtype is found: a 1-element array of a Node's
    dtype, the constant itself (a Python number stays weak, as NumPy treats it)."""
    return np.zeros(1, value.dtype) if isinstance(value, Node) else value


def _const_key(value) -> tuple:
    if isinstance(value, (np.generic, np.ndarray)):
        array = np.asarray(value)
        return ("array", array.dtype.str, array.shape, array.tobytes())
    return ("py", type(value).__name__, repr(value))


@dataclass
class Program:
    """The steps of one traced function; `outputs` are the Nodes (or constants) it returned."""

    steps: list[Step] = field(default_factory=list)
    outputs: list = field(default_factory=list)
    _seen: dict = field(default_factory=dict)

    def _add(self, kind: str, fn, args: Sequence, dtype: np.dtype) -> Node:
        for a in args:
            if isinstance(a, Node) and a.program is not self:
                raise NotFusable("a Node of another program")
        encoded = tuple(a.index if isinstance(a, Node) else ("const", a) for a in args)
        key = (
            kind,
            fn if kind != "input" else ("input", fn),
            tuple(e if isinstance(e, int) else _const_key(e[1]) for e in encoded),
        )
        if kind != "input" and key in self._seen:  # the same step twice (sigmoid's `one + e`): once
            index = self._seen[key]
            return Node(self, index, self.steps[index].dtype)
        self.steps.append(Step(kind, fn, encoded, np.dtype(dtype)))
        self._seen[key] = len(self.steps) - 1
        return Node(self, len(self.steps) - 1, np.dtype(dtype))

    def input(self, name: str, dtype) -> Node:
        return self._add("input", name, (), np.dtype(dtype))

    def ufunc(self, ufunc, inputs: Sequence) -> Node:
        if any(isinstance(a, np.ndarray) and a.ndim for a in inputs):
            raise NotFusable(f"{ufunc.__name__} of a traced tensor and an array")
        with np.errstate(all="ignore"):
            dtype = np.asarray(ufunc(*[_probe(a) for a in inputs])).dtype
        return self._add("ufunc", ufunc, inputs, dtype)

    def where(self, cond, a, b):
        dtype = np.where(np.zeros(1, bool), _probe(a), _probe(b)).dtype
        if not isinstance(cond, Node):  # decided before any tensor is read: the side it picks
            if np.ndim(cond):
                raise NotFusable("a where whose condition is an array")
            pick = a if bool(cond) else b
            return pick.astype(dtype) if isinstance(pick, Node) else np.asarray(pick, dtype)
        if cond.dtype != np.bool_:
            cond = np.not_equal(cond, 0)
        if dtype.itemsize not in _BITS:
            raise NotFusable(f"a where selecting {dtype}")
        a = a.astype(dtype) if isinstance(a, Node) and a.dtype != dtype else a
        b = b.astype(dtype) if isinstance(b, Node) and b.dtype != dtype else b
        consts = [np.asarray(v, dtype) for v in (a, b) if not isinstance(v, Node)]
        if any(c.ndim for c in consts):
            raise NotFusable("a where with an array side")
        return self._add("where", None, (cond, a, b), dtype)

    def cast(self, node: Node, dtype: np.dtype) -> Node:
        return node if node.dtype == dtype else self._add("cast", None, (node,), dtype)


def trace(function: Callable[..., tuple], input_dtypes: Mapping[str, object]) -> Program:
    """The program of `function(**nodes)` (one Node per input name), which returns a tuple of
    results: Nodes, or constants an output is filled with."""
    program = Program()
    nodes = {name: program.input(name, dtype) for name, dtype in input_dtypes.items()}
    results = function(**nodes)
    program.outputs = list(results)
    return program


# --- running ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Plan:
    """A program laid out for running: per step its slot (by dtype) and the outputs' last steps."""

    steps: list[Step]
    slots: list  # per step: (dtype, slot number) or an ("output", i) or None (an input)
    masks: list  # per where step: its mask's (dtype, slot)
    counts: dict  # dtype -> slots needed
    outputs: list  # per output: ("node", index) or ("const", 0-d array)
    finals: dict  # output index -> step index written straight into the output
    dtypes: list  # per output: its dtype


def plan(program: Program, output_dtypes: Sequence[np.dtype]) -> Plan:
    """Slots for every step's result: a slot is free again after its value's last reader."""
    steps, outputs = program.steps, program.outputs
    if len(outputs) != len(output_dtypes):
        raise ValueError(f"the function returned {len(outputs)} results for {len(output_dtypes)} outputs")
    readers: dict[int, int] = {}
    for i, step in enumerate(steps):
        for a in step.args:
            if isinstance(a, int):
                readers[a] = readers.get(a, 0) + 1
    last = {a: i for i, step in enumerate(steps) for a in step.args if isinstance(a, int)}
    out_nodes = [r.index for r in outputs if isinstance(r, Node)]
    # an output's last step writes into the output itself when nothing else reads its value
    finals = {
        o: r.index
        for o, r in enumerate(outputs)
        if isinstance(r, Node)
        and steps[r.index].kind != "input"
        and r.dtype == output_dtypes[o]
        and r.index not in readers
        and out_nodes.count(r.index) == 1
    }
    final_steps = {i: o for o, i in finals.items()}
    free: dict[np.dtype, list[int]] = {}
    counts: dict[np.dtype, int] = {}

    def take(dtype):
        pool = free.setdefault(dtype, [])
        if pool:
            return (dtype, pool.pop())
        counts[dtype] = counts.get(dtype, 0) + 1
        return (dtype, counts[dtype] - 1)

    slots: list = [None] * len(steps)
    masks: list = [None] * len(steps)
    pinned = set(out_nodes)
    for i, step in enumerate(steps):
        dying = [
            a
            for a in dict.fromkeys(a for a in step.args if isinstance(a, int))
            if last[a] == i and a not in pinned and slots[a] is not None and slots[a][0] != "output"
        ]
        # a ufunc writes in place over an argument read for the last time: fewer buffers in cache
        in_place = [a for a in dying if step.kind == "ufunc" and slots[a][0] == step.dtype]
        if i in final_steps:
            slots[i] = ("output", final_steps[i])
        elif in_place:
            slots[i] = slots[in_place[0]]
            dying.remove(in_place[0])
        elif step.kind != "input":
            slots[i] = take(step.dtype)
        if step.kind == "where":
            masks[i] = take(np.dtype(_BITS[step.dtype.itemsize]))
            free[masks[i][0]].append(masks[i][1])
        for a in dying:
            free[slots[a][0]].append(slots[a][1])
    consts = [("const", np.asarray(r)) if not isinstance(r, Node) else ("node", r.index) for r in outputs]
    return Plan(steps, slots, masks, counts, consts, finals, [np.dtype(d) for d in output_dtypes])


_LOCAL = threading.local()


def _buffers(counts: Mapping[np.dtype, int], length: int) -> dict:
    """This thread's buffers of at least `length` elements, by dtype, kept across pieces and calls
    (one set per dtype, grown to the longest piece asked for: memory stays bounded by it)."""
    kept = getattr(_LOCAL, "buffers", None)
    if kept is None:
        kept = _LOCAL.buffers = {}
    out = {}
    for dtype, count in counts.items():
        pool = kept.setdefault(dtype, [])
        pool[:] = [b if len(b) >= length else np.empty(length, dtype) for b in pool]
        while len(pool) < count:
            pool.append(np.empty(length, dtype))
        out[dtype] = pool
    return out


def lower(p: Plan, length: int, n: int) -> list[tuple]:
    """The plan as calls on pieces of `n` elements, for this thread (its buffers of `length`):
    (function, arguments, keywords, whether it has references), where an argument or the `out` keyword may be a reference to
    the piece's inputs or outputs, ("in", name, view) or ("out", number, view), filled per piece."""
    buffers = _buffers(p.counts, length)
    values: list = [None] * len(p.steps)  # per step: its value as an array or a reference

    def target(i):
        slot = p.slots[i]
        return ("out", slot[1], None) if slot[0] == "output" else buffers[slot[0]][slot[1]][:n]

    def arg(a):
        return values[a] if isinstance(a, int) else a[1]

    calls: list[tuple] = []
    for i, step in enumerate(p.steps):
        if step.kind == "input":
            values[i] = ("in", step.fn, None)
            continue
        out = values[i] = target(i)
        if step.kind == "ufunc":
            args = tuple(arg(a) for a in step.args)
            # out positional parses faster; NumPy deprecates that for maximum and minimum only
            calls.append((step.fn, args, {"out": out}) if step.fn in _OUT_BY_NAME else (step.fn, (*args, out), _NONE))
        elif step.kind == "cast":
            calls.append((np.copyto, (out, arg(step.args[0])), {"casting": "unsafe"}))
        else:  # where: the bits of a where cond holds, else of b
            cond, a, b = (arg(x) for x in step.args)
            bits = np.dtype(_BITS[step.dtype.itemsize])
            mask = buffers[p.masks[i][0]][p.masks[i][1]][:n]
            a, b, o = (_as_bits(v, step.dtype, bits) for v in (a, b, out))
            calls.append((np.copyto, (mask, cond), {"casting": "unsafe"}))  # 0 or 1
            calls += _select(a, b, o, mask, bits)
    for o, (kind, value) in enumerate(p.outputs):
        if o not in p.finals:
            calls.append(
                (np.copyto, (("out", o, None), values[value] if kind == "node" else value), {"casting": "unsafe"})
            )
    # whether a call reads or writes the piece's own arrays: decided here, once, not per piece
    return [(fn, args, kw, any(map(_is_ref, (*args, *kw.values())))) for fn, args, kw in calls]


def _select(a, b, o, mask: np.ndarray, bits: np.dtype) -> list[tuple]:
    """Calls leaving in `o` the bits of `a` where `mask` is 1, else of `b` (bit patterns, `mask`
    0 or 1 on entry); a side of zero bits (+0.0, the usual `where(c, x, 0)`) costs no pass."""
    if _is_zero(b):  # a & (0 - mask): all ones where selected
        return [(np.negative, (mask, mask), _NONE), (np.bitwise_and, (a, mask, o), _NONE)]
    if _is_zero(a):  # b & (mask - 1): all ones where not selected
        return [(np.subtract, (mask, bits.type(1), mask), _NONE), (np.bitwise_and, (b, mask, o), _NONE)]
    return [
        (np.negative, (mask, mask), _NONE),  # 0 or all ones
        (np.bitwise_xor, (a, b, o), _NONE),
        (np.bitwise_and, (o, mask, o), _NONE),
        (np.bitwise_xor, (o, b, o), _NONE),
    ]


def where(cond, a, b):
    """np.where(cond, a, b) of arrays, bit for bit, by `_select` on large results: np.where
    branches per element, ~4 ns per element on an unpredictable condition."""
    if any(isinstance(v, Node) for v in (cond, a, b)):
        return np.where(cond, a, b)  # traced: a step
    dtype = np.where(np.zeros(1, bool), _probe(a), _probe(b)).dtype
    shape = np.broadcast_shapes(*(np.shape(v) for v in (cond, a, b)))
    if np.asarray(cond).dtype != np.bool_ or dtype.itemsize not in _BITS or math.prod(shape) < _SELECT_FROM:
        return np.where(cond, a, b)
    bits = np.dtype(_BITS[dtype.itemsize])
    mask = np.empty(shape, bits)
    np.copyto(mask, cond, casting="unsafe")
    out = np.empty(shape, dtype)
    a, b = (np.asarray(v, dtype).view(bits) if np.ndim(v) else _as_bits(v, dtype, bits) for v in (a, b))
    for fn, args, keywords in _select(a, b, out.view(bits), mask, bits):
        fn(*args, **keywords)
    return out


def _is_zero(value) -> bool:
    return isinstance(value, np.generic) and value == 0


def _is_ref(value) -> bool:
    return isinstance(value, tuple) and len(value) == 3 and value[0] in ("in", "out")


def _as_bits(value, dtype: np.dtype, bits: np.dtype) -> Any:
    if _is_ref(value):
        return (value[0], value[1], bits)
    if isinstance(value, np.ndarray) and value.ndim:
        return value.view(bits)
    return np.asarray(value, dtype).view(bits)[()]


def run_calls(calls: list[tuple], inputs: Mapping[str, np.ndarray], outputs: Sequence[np.ndarray]) -> None:
    """Lowered calls on one piece: `inputs` by name and `outputs`, 1-d arrays of the piece."""

    def fill(value):
        if not _is_ref(value):
            return value
        array = inputs[value[1]] if value[0] == "in" else outputs[value[1]]
        return array if value[2] is None else array.view(value[2])

    for fn, args, keywords, dynamic in calls:
        if dynamic:
            args = tuple(fill(a) for a in args)
            keywords = {k: fill(v) for k, v in keywords.items()}
        fn(*args, **keywords)


def run(
    p: Plan,
    inputs: Mapping[str, np.ndarray],
    outputs: Sequence[np.ndarray],
    chunk: int,
    threads: int = 1,
    pool=None,
) -> None:
    """The plan over 1-d `inputs` into 1-d `outputs` of one size, in pieces of `chunk` elements,
    on `threads` threads (`pool`: an executor with at least threads - 1 workers)."""
    size = len(outputs[0])
    count = -(-size // chunk)
    length = min(chunk, size)
    turns = itertools.count()  # pieces handed out in order, to whichever thread is free

    def work():
        full = lower(p, length, length)  # this thread's calls, lowered once for its whole pieces
        with np.errstate(all="ignore"):  # inf/NaN are legitimate results
            while (k := next(turns)) < count:
                s = slice(k * chunk, min((k + 1) * chunk, size))
                piece = ({name: a[s] for name, a in inputs.items()}, [o[s] for o in outputs])
                n = s.stop - s.start
                run_calls(full if n == length else lower(p, length, n), *piece)

    helpers = min(threads, count) - 1
    futures = [pool.submit(work) for _ in range(helpers)] if helpers > 0 and pool is not None else []
    work()
    for f in futures:
        f.result()
