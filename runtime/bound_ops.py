"""Which ops are bound, and who hears of it: the registry behind `bind(meta)`.

Every binding announces its META here when it is defined (runtime/binding.py's `bind`, or
runtime/call.py's eager `bind`); listeners registered with `on_bind` (the simulator's kernels)
hear of every op bound before and after. Kept apart from both binds so that the lazy one, which
a binding's import loads, and the call path share it without importing each other.
"""

from __future__ import annotations

import sys
import threading
from typing import Any, Callable, Mapping

__all__ = ["announce", "on_bind", "package_of", "withdraw"]

_lock = threading.Lock()
_bound: list[Mapping[str, Any]] = []  # every META bound so far, in order
_listeners: list[Callable[[Mapping[str, Any]], Any]] = []


def on_bind(listener: Callable[[Mapping[str, Any]], Any]) -> None:
    """Calls `listener(meta)` for every op bound so far and for every op bound from now on. The
    simulator (aclnngen.runtime.sim) registers its kernels this way; the call path knows no
    listener by name."""
    with _lock:
        _listeners.append(listener)
        bound = list(_bound)
    for meta in bound:
        listener(meta)


def announce(meta: Mapping[str, Any]) -> None:
    """Records `meta` as bound and tells every listener; a listener that refuses it (the simulator
    reads the META) withdraws it before the error goes on."""
    with _lock:
        _bound.append(meta)
        listeners = list(_listeners)
    try:
        for listener in listeners:
            listener(meta)
    except BaseException:
        withdraw(meta)
        raise


def withdraw(meta: Mapping[str, Any]) -> None:
    """Forgets a META that turned out unusable (its BoundOp could not be built), so that no
    listener registered later hears of it."""
    with _lock:
        for index, bound in enumerate(_bound):
            if bound is meta:
                del _bound[index]
                break


def package_of(meta: Mapping[str, Any]) -> str | None:
    """The package whose `meta.<snake>` module defines this very META dict (e.g.
    "aclnngen.generated", or a stand-alone generated package); None for a META of no package."""
    # a META dict (an OpMeta, whose data has the same field, is accepted as op_meta accepts it)
    snake = meta.get("snake", "") if isinstance(meta, Mapping) else getattr(meta, "snake", "")
    suffix = f".meta.{snake}"
    for name, module in list(sys.modules.items()):
        if name.endswith(suffix) and getattr(module, "META", None) is meta:
            return name[: -len(suffix)]
    return None
