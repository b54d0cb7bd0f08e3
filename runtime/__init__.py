"""Hand-written, op-agnostic runtime: libraries, device, memory, tensors, the two-phase call,
errors, products, the simulator and precision comparison. It knows no op by name."""
