"""One op as the renderers read it: everything derived from its loaded spec, derived once.

`generate` builds one OpView per op per run, and every renderer (metadata, binding, reference,
tests, reference page, the shared index pages and simulator entry points through the op's record)
reads its fields instead of deriving them again: the formula is parsed once, the META built once,
the page data built once. Each field is computed when first read and kept (a run that needs only
the simulator entry points computes nothing else).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

from . import docs as page_builder
from . import formula, metadata, testplan
from .consistency import forward_program, oracle_expression, oracle_expressions
from .model import OpSpec
from .products import ProductTable
from .resolve import ResolvedOp, resolve


@dataclass(frozen=True)
class Body:
    """One formula rendered as the body of a Python function of the reference module."""

    key: str  # FORMULAS' key: "spec", "claimed:N" or "observed:N" (the forward's input for FORWARDS)
    name: str  # the function's name
    lines: list[str]


@dataclass(frozen=True, eq=False)
class OpView:
    spec: OpSpec
    products: ProductTable
    package: str = "aclnngen.generated"  # the package the generated modules form

    @cached_property
    def program(self) -> formula.FormulaProgram | None:
        """The spec's formula, parsed (None for a binding-tier spec, which has none)."""
        return metadata.program(self.spec, self.spec.formula) if self.spec.computes else None

    @cached_property
    def prototypes(self) -> tuple:
        """The two C prototypes, parsed: (get_workspace_size, launch)."""
        return metadata.prototypes(self.spec)

    @cached_property
    def meta(self) -> dict:
        """The run-time metadata (generated/meta/<op>.py)."""
        return metadata.build(self.spec, self.program, self.prototypes)

    @cached_property
    def version(self) -> str:
        """The newest release the spec documents: what its tests and its docs show."""
        return testplan.newest_version(self.spec)

    @cached_property
    def resolved(self) -> ResolvedOp:
        """The spec's families and dtypes at `version`."""
        return resolve(self.spec, self.version)

    @cached_property
    def bodies(self) -> list[Body]:
        """The formula and every defect's claimed or observed formula, as function bodies."""
        spec = self.spec
        if not spec.computes:
            return []
        bodies = [Body("spec", "_spec", formula.render_program(self.program))]
        for index, defect in enumerate(spec.defects):
            for which in ("claimed", "observed"):
                expr = getattr(defect, which)
                if expr is not None:
                    lines = formula.render_program(metadata.program(spec, expr))
                    bodies.append(Body(f"{which}:{index}", f"_{which}_{index}", lines))
        return bodies

    @cached_property
    def forwards(self) -> list[Body]:
        """Each forward-output input's forward function of `x`, as a function body."""
        return [
            Body(
                p.py_name,
                f"_forward_{i}",
                formula.render_program(forward_program(self.spec, p, loc=("parameters", i, "forward"))),
            )
            for i, p in enumerate(self.spec.parameters)
            if p.forward is not None
        ]

    @cached_property
    def oracle_expressions(self) -> list[Body]:
        """Each oracle argument's `{expr: ...}` over the scalars and attributes, as a function body."""
        if not self.spec.computes:
            return []
        return [
            Body(source, f"_oracle_{i}", formula.render_program(oracle_expression(self.spec, source, ())))
            for i, source in enumerate(oracle_expressions(self.spec))
        ]

    @cached_property
    def docs(self) -> page_builder.OpDocs:
        """What the binding's docstring, the reference page and the support matrix say of the op."""
        return page_builder.op_docs(self.spec, self.products, self.package, self.meta, self.resolved, self.prototypes)

    @cached_property
    def test_plan(self) -> dict:
        """The generated tests' cases (tests/generated/test_<op>.py)."""
        return testplan.build(self.spec, self.products, meta=self.meta, resolved=self.resolved)
