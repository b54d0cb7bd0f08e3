"""The verdict: how a result is judged. Test data (cases), the PyTorch oracle, the precision
policy and comparisons (opcheck), test directives and the pytest plugin. Shared by the generated
tests, `aclnngen run` and the audit. It imports the call path (aclnngen.runtime) and the reference
evaluator (aclnngen.evaluate), never the reverse. See docs/architecture.md."""
