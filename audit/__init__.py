"""The audit: does each op's page say what the library does? (`aclnngen audit`)

Built above everything else: the bindings with `validate=False` (so the library's own checks
answer), the simulator under a behaviour profile (`runtime.session.simulated(profile=...)`), the
PyTorch oracle and the verdict. Nothing else in aclnngen imports it.

- `findings`: the Finding record and its stable id.
- `probe`: one first-phase call (GetWorkspaceSize) on a source, its status.
- `checks`: what is checked per op (dtypes, shapes, return codes, numerics, recorded page defects)
  and which sources can answer each check.
- `baseline`: accepted findings with a reason and an expiry date; the judgement (new, recorded,
  accepted, expired) and `--write-baseline`'s file.
- `report`: the Markdown report, the JSON and the pictures.
"""
