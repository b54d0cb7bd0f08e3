"""The reference evaluator: runs a generated reference's formula bodies in NumPy. `reference`
(`Reference`: an op's arguments onto its formula, output shapes and dtypes from its rules),
`numerics` (the functions rendered formulas call, the precision modes, `evaluate`), `chunking`
(an elementwise formula in cache-sized pieces on threads) and `fastmath` (a vectorised float32
`erf`). The simulator's kernels and the verdict both compute with it; it stands on the ground
floor and the NumPy view of its dtypes (aclnngen.runtime.shapes) only. See docs/architecture.md."""
