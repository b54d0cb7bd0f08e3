"""The call path, hand-written and op-agnostic: libraries, device, memory, tensors, the two-phase
call, validation, errors, products and versions. It knows no op by name, and imports neither the
simulator's kernels (aclnngen.runtime.sim, loaded by name when the simulator backend is chosen)
nor the verdict (aclnngen.verify). See docs/architecture.md."""
