"""aclnngen: Python bindings, validators, references, tests and docs for Ascend aclnn operators,
generated from YAML specs. The subpackages are `aclnngen.codegen` (the generator),
`aclnngen.runtime` (the hand-written runtime) and `aclnngen.generated` (the rendered bindings);
the spec tables ship as package data in `aclnngen.specs`."""

__all__ = ["__version__"]


def __getattr__(name: str):
    # Read on first use, not at import: importlib.metadata costs more than a binding's own import.
    if name == "__version__":
        from importlib.metadata import PackageNotFoundError, version  # deferred: start-up cost

        try:  # single-sourced from the package metadata (pyproject.toml's version)
            found = version("aclnngen")
        except PackageNotFoundError:  # a source tree that was never installed
            found = "0+unknown"
        globals()["__version__"] = found
        return found
    raise AttributeError(f"module 'aclnngen' has no attribute {name!r}")
