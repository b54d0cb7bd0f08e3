"""A pytest plugin that deliberately breaks one piece, to show the generated tests can fail.

Loaded with `-p mutations` (tests/data on sys.path); ACLNNGEN_MUTATION picks what to break:
- validator: the validator accepts everything;
- reference: the formula's `where` swaps its branches;
- oracle_compare: the tolerance policy compares against a shifted reference;
- descriptor: tensors reach C with their view offset dropped (a conversion bug the binding tests catch);
- attribute_branch: a `where` on a bool attribute always takes its false branch (a wrong branch that
  only a sweep of the attribute's values catches).
"""

import os

import numpy as np


def pytest_configure(config):
    mutation = os.environ.get("ACLNNGEN_MUTATION", "")
    from aclnngen.evaluate import numerics
    from aclnngen.verify import opcheck

    if mutation == "validator":
        opcheck.validate = lambda *args, **kwargs: None
    elif mutation == "reference":
        original = numerics.Numerics.where
        numerics.Numerics.where = lambda self, cond, a, b: original(self, cond, b, a)
    elif mutation == "oracle_compare":
        original_run = opcheck.OpUnderTest.run_reference
        opcheck.OpUnderTest.run_reference = lambda self, values, **kw: tuple(
            (r.astype(np.float64) + 1).astype(r.dtype) for r in original_run(self, values, **kw)
        )
    elif mutation == "descriptor":
        from aclnngen.runtime import call

        original_descriptor = call.tensor_descriptor

        def without_offset(backend, dev, **kwargs):
            saved = dev.offset
            dev.offset = 0
            try:
                return original_descriptor(backend, dev, **kwargs)
            finally:
                dev.offset = saved

        call.tensor_descriptor = without_offset
    elif mutation == "attribute_branch":
        original = numerics.Numerics.where

        def where(self, cond, a, b):
            if isinstance(cond, (bool, np.bool_)):  # an attribute, not a tensor mask
                cond = False
            return original(self, cond, a, b)

        numerics.Numerics.where = where
        # a where whose condition reads no tensor renders as a Python conditional on m.truth
        numerics.Numerics.truth = staticmethod(lambda condition: False)
    elif mutation:
        raise ValueError(f"unknown mutation {mutation!r}")
