"""A spec's facts at one CANN release: which families, dtypes, rules and return codes hold then."""

from __future__ import annotations

from dataclasses import dataclass

from .model import OpSpec


@dataclass(frozen=True)
class ResolvedOp:
    spec: OpSpec
    version: str
    families: tuple[str, ...]
    dtypes: dict  # (param name, family) -> tuple of dtype names

    @property
    def name(self) -> str:
        return self.spec.name

    def dtypes_of(self, param: str, family: str) -> tuple[str, ...]:
        return self.dtypes.get((param, family), ())

    def dtype_summary(self, family: str) -> str:
        """The tensors' dtypes for one family: one list when all tensors agree, else per tensor."""
        tensors = [p for p in self.spec.parameters if p.is_tensor]
        lists = {p.name: self.dtypes_of(p.name, family) for p in tensors}
        distinct = set(lists.values())
        if len(distinct) == 1:
            return ", ".join(next(iter(distinct)))
        return "; ".join(f"{name}: {', '.join(d)}" for name, d in lists.items())


def resolve(spec: OpSpec, version: str) -> ResolvedOp:
    families = tuple(p.family for p in spec.products if p.supported and p.holds_at(version))
    dtypes: dict = {}
    for p in spec.parameters:
        for entry in p.dtypes:
            if entry.holds_at(version) and not entry.when:  # conditional dtypes are not the plain list
                for family in entry.families:
                    dtypes[(p.name, family)] = tuple(entry.dtypes)
    return ResolvedOp(spec, version, families, dtypes)
