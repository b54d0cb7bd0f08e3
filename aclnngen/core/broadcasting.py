"""Shapes as plain tuples: NumPy/PyTorch broadcasting, element counts, the channel count of an
input. The rule kinds and the planner read them; nothing here imports NumPy."""

from __future__ import annotations

from typing import Iterable


class BroadcastError(ValueError):
    """Shapes that do not broadcast together. `shapes` holds them; `axis` is the first axis
    (counted from the end, -1 = last) where two sizes disagree."""

    def __init__(self, shapes: Iterable[tuple[int, ...]], axis: int):
        self.shapes = tuple(tuple(s) for s in shapes)
        self.axis = axis
        listed = " and ".join(str(s) for s in self.shapes)
        super().__init__(f"shapes {listed} do not broadcast (sizes differ at axis {axis} from the end)")


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
