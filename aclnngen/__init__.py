"""aclnngen: Python bindings, validators, references, tests and docs for Ascend aclnn operators,
generated from YAML specs. The subpackages are `aclnngen.codegen` (the generator),
`aclnngen.runtime` (the hand-written runtime) and `aclnngen.generated` (the rendered bindings);
the spec tables ship as package data in `aclnngen.specs`."""

from importlib.metadata import PackageNotFoundError, version

try:  # single-sourced from the package metadata (pyproject.toml's version)
    __version__ = version("aclnngen")
except PackageNotFoundError:  # a source tree that was never installed
    __version__ = "0+unknown"

__all__ = ["__version__"]
