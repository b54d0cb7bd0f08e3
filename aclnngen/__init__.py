"""aclnngen: Python bindings, validators, references, tests and docs for Ascend aclnn operators,
generated from YAML specs. The subpackages are `aclnngen.codegen` (the generator),
`aclnngen.runtime` (the hand-written runtime) and `aclnngen.generated` (the rendered bindings);
the spec tables ship as package data in `aclnngen.specs`."""

import os as _os

__all__ = ["__version__"]

# In a checkout this folder holds only the package's own files; the subpackages are the folders
# beside it (pyproject.toml's package-dir). Python started in the repository's root imports this
# folder itself rather than the installed package, so the subpackages are looked for there too;
# imported through the editable install's links (buildsys/aclnngen_build.py), a module added to
# this folder since the install is found in the folder itself.
_HERE = _os.path.dirname(_os.path.realpath(__file__))
_ROOT = _os.path.dirname(_HERE)
if _os.path.isfile(_os.path.join(_ROOT, "pyproject.toml")) and _os.path.isfile(
    _os.path.join(_ROOT, "codegen", "__init__.py")
):
    __path__.extend(p for p in (_HERE, _ROOT) if p not in __path__)


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
