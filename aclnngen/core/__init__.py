"""The ground floor every package stands on: the vocabulary of the specs as plain Python.

- `releases`: CANN releases, their two spellings, their order, and which releases a META describes;
- `dtypes`: the dtype names a spec may use, their categories, listing order, casting and promotion;
- `rules`: what an op's META says at one (family, release): the rules that hold, the families and
  dtypes it supports, and the shapes and dtypes of its outputs, over names and shape tuples;
- `planning`, `sweeps`: which test cases an op gets (a pure function of its META);
- `externs`: the names of the hand-written code a spec may call (extern kernels, oracle recipes);
- `formats`: the tensor formats a spec may name (aclFormat's members), ND by default;
- `checks`: the validator's steps and the check order a behaviour profile may state.

It imports nothing of the project above it (codegen, runtime, verify, audit, generated) and
nothing heavy (no NumPy, pydantic, cffi, jinja2, torch, scipy): the generator, the call path, the
verdict and the audit all build on it (docs/architecture.md, tests/e2e/test_architecture.py).
"""
