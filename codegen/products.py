"""The product-family table (specs/products.yaml): doc names and aclrtGetSocName strings per family."""

from __future__ import annotations


from pydantic import Field, model_validator

from .model import CIdentifier, Frozen, NonEmptyText


class Family(Frozen):
    id: CIdentifier
    """The family's identifier, used in specs."""
    label: NonEmptyText
    """Short name in tables and docs."""
    doc_names: list[NonEmptyText] = Field(min_length=1)
    """How the doc pages name the family."""
    soc_names: list[NonEmptyText]
    """aclrtGetSocName strings of the family."""
    soc_prefixes: list[NonEmptyText]
    """Prefixes of aclrtGetSocName strings of the family."""

    @model_validator(mode="after")
    def _identifiable(self):
        if not self.soc_names and not self.soc_prefixes:
            raise ValueError(f"family {self.id!r} needs soc_names or soc_prefixes to be recognised at run time")
        return self


class ProductTable(Frozen):
    families: list[Family] = Field(min_length=1)
    """Every product family."""

    @model_validator(mode="after")
    def _unique(self):
        seen_ids: set[str] = set()
        seen_socs: dict[str, str] = {}
        for family in self.families:
            if family.id in seen_ids:
                raise ValueError(f"family id {family.id!r} is defined twice")
            seen_ids.add(family.id)
            for soc in family.soc_names:
                if soc in seen_socs:
                    raise ValueError(f"SoC name {soc!r} is in both {seen_socs[soc]!r} and {family.id!r}")
                seen_socs[soc] = family.id
        return self

    @property
    def ids(self) -> tuple[str, ...]:
        return tuple(f.id for f in self.families)

    def family(self, family_id: str) -> Family:
        for f in self.families:
            if f.id == family_id:
                return f
        raise KeyError(family_id)

    def family_of_soc(self, soc_name: str) -> Family | None:
        """Exact names first; prefixes only for families whose SKUs vary (950)."""
        for f in self.families:
            if soc_name in f.soc_names:
                return f
        for f in self.families:
            if any(soc_name.startswith(p) for p in f.soc_prefixes):
                return f
        return None

    def family_of_doc_name(self, doc_name: str) -> Family | None:
        wanted = "".join(doc_name.split())
        for f in self.families:
            if any("".join(n.split()) == wanted for n in f.doc_names):
                return f
        return None
