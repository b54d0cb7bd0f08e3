"""What defining a binding needs, and nothing more: `bind(meta)` and the registry of bound ops.

A generated binding runs `_CALL = bind(META)` at its import. The call path itself (runtime/call.py,
~1,200 lines, with the arrays, shapes, the typed metadata and the errors behind it) is not needed
until the binding is first used, and without cached bytecode compiling it was most of a binding's
import. So `bind` returns a `Binding` that only announces the op (runtime/bound_ops.py: the
simulator's kernels learn of every bound op through `on_bind`), and turns itself into the op's `call.BoundOp` at its first use:
the first attribute read or call builds the BoundOp and takes over its class and state, so from
then on it *is* a BoundOp and a call costs no extra step.
"""

from __future__ import annotations

import threading
from typing import Any, Mapping

from .bound_ops import announce, withdraw

__all__ = ["bind", "Binding"]

_become_lock = threading.Lock()


def bind(meta: Mapping[str, Any]) -> "Binding":
    """The callable behind a generated binding: `call(*params_in_prototype_order, stream=None,
    validate=True)`; a `call.BoundOp` from its first use on."""
    binding = Binding(meta)
    announce(meta)
    return binding


class Binding:
    """An op bound but not used yet; its first use makes it the op's `call.BoundOp`."""

    def __init__(self, meta: Mapping[str, Any]):
        self.meta = meta

    def __getattr__(self, name: str):
        # reached only for names a Binding lacks: everything of a BoundOp, before the first use
        _become_bound_op(self)
        return getattr(self, name)

    def __call__(self, *args, **kwargs):
        _become_bound_op(self)
        return self(*args, **kwargs)

    def __repr__(self) -> str:
        return f"<aclnn binding {self.meta.get('symbol') or self.meta.get('name')} (not called yet)>"


def _become_bound_op(binding: Binding) -> None:
    """Builds the BoundOp of `binding.meta` and gives `binding` its state, then its class (in this
    order: another thread that finds the class changed finds the state complete). An invalid META
    raises here, at the first use, with the BoundOp's own error (or already at `bind`, when a
    listener such as the simulator's kernels reads it), and is withdrawn from the registry."""
    with _become_lock:
        if type(binding) is not Binding:
            return  # another thread did it
        from .call import BoundOp  # deferred: the call path loads at the first use

        try:
            op = BoundOp(binding.meta)
        except BaseException:
            withdraw(binding.meta)  # as an eager bind, which never announces a META it refuses
            raise
        binding.__dict__.update(op.__dict__)
        binding.__class__ = BoundOp
