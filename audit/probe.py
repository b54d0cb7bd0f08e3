"""One call of an op's first phase (GetWorkspaceSize) on a source of behaviour, and its status.

The library checks its parameters in the first phase, so a probe never launches a kernel: 0 when
the library accepted the arguments, else its status (161001, 161002, ...). `validate=False` keeps
the binding's own checks out of the way, so the answer is the library's.
"""

from __future__ import annotations

from aclnngen.core.meta import op_meta

import contextlib
import importlib
from typing import Any, Mapping

import numpy as np

from aclnngen.runtime import session
from aclnngen.runtime.errors import AclnnError, AclnnStatusError

SOURCES = ("sim", "torch", "cann")


def bound_op(snake: str, package: str = "aclnngen.generated"):
    """The generated binding's call object (`prepare` runs the first phase only)."""
    return importlib.import_module(f"{package}.ops.{snake}")._CALL


@contextlib.contextmanager
def on_source(source: str, family: str, version: str, profile: str | None):
    """The body runs on `source` as product `family`: the simulator under `profile`, or the
    installed CANN (whose family is the machine's; another family is skipped by the caller)."""
    if source == "sim":
        with session.simulated(family=family, version=version, profile=profile):
            yield
    elif source == "cann":
        yield
    else:
        raise ValueError(f"source {source!r} cannot run the library; it is one of sim, cann")


def first_phase(call, meta: Mapping, values: Mapping[str, Any], formats: Mapping[str, str] | None = None) -> int:
    """The status of the first phase with `values` (C names), each tensor in its format of
    `formats` (Python names, the binding's keyword; ND when absent): 0 when accepted."""
    op = op_meta(meta)
    args = [values.get(p.name) for p in op.params]  # prototype order, outputs included
    try:
        prepared = call.prepare(*args, validate=False, formats=formats)
    except AclnnStatusError as exc:
        return exc.status
    except (AclnnError, TypeError, ValueError) as exc:  # refused before the library: not an answer of it
        raise ProbeError(f"{op.name}: the probe could not call the library: {type(exc).__name__}: {exc}") from exc
    prepared.close()
    return 0


class ProbeError(RuntimeError):
    """A probe that could not reach the library (bad test data, not a finding)."""


def snippet_values(meta: Mapping, values: Mapping[str, Any]) -> list[str]:
    """Python lines that rebuild `values` (C names) as the smallest equivalent arguments."""
    lines = []
    for p in op_meta(meta).params:
        lines.append(f"    {p.name!r}: {_literal(values.get(p.name))},")
    return lines


def _formats_arg(formats: Mapping[str, str] | None) -> str:
    return f", formats={dict(formats)!r}" if formats else ""


def _literal(value: Any) -> str:
    if isinstance(value, np.ndarray):
        dtype = "ml_dtypes.bfloat16" if value.dtype.name == "bfloat16" else f"np.{value.dtype.name}"
        if value.flags.c_contiguous or value.ndim == 0:
            return f"np.zeros({value.shape!r}, dtype={dtype})"
        wide = value.shape[:-1] + (value.shape[-1] * 2,)
        return f"np.zeros({wide!r}, dtype={dtype})[..., ::2]  # a strided view"
    if isinstance(value, np.generic):
        return repr(value.item())
    return repr(value)


def probe_snippet(
    snake: str,
    meta: Mapping,
    values: Mapping[str, Any],
    family: str,
    version: str,
    profile: str | None,
    source: str,
    formats: Mapping[str, str] | None = None,
) -> str:
    """A self-contained script that makes the same first-phase call and prints its status."""
    where = (
        f"session.simulated(family={family!r}, version={version!r}, profile={profile!r})"
        if source == "sim"
        else "contextlib.nullcontext()  # the installed CANN"
    )
    return (
        "\n".join(
            [
                "import contextlib",
                "import ml_dtypes",
                "import numpy as np",
                "from aclnngen.audit.probe import bound_op, first_phase",
                "from aclnngen.runtime import session",
                f"from aclnngen.generated.meta.{snake} import META",
                "",
                "values = {",
                *snippet_values(meta, values),
                "}",
                f"with {where}:",
                f"    print('status', first_phase(bound_op({snake!r}), META, values{_formats_arg(formats)}))",
            ]
        )
        + "\n"
    )
