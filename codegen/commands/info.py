"""`aclnngen info`: the active backend, its libraries, the SoC, the product family and the CANN
version (with where the version came from)."""

from __future__ import annotations

import argparse
import os


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--backend",
        choices=("cann", "sim"),
        help="use this backend (default: $ACLNNGEN_BACKEND, else CANN when found, else the simulator)",
    )


def _why(args, kind: str) -> str:
    from aclnngen.runtime.backend import BACKEND_ENV

    if args.backend:
        return "--backend"
    env = os.environ.get(BACKEND_ENV, "").strip()
    if env and env != "auto":
        return f"${BACKEND_ENV}={env}"
    return "CANN found" if kind == "cann" else "no CANN found; the simulator is the default"


def rows(args) -> tuple[list[tuple[str, str]], int]:
    from aclnngen.runtime import products, session
    from aclnngen.runtime.errors import UnknownSocError

    b = session.init(args.backend)
    status = 0
    out: list[tuple[str, str]] = []
    label = "CANN" if b.kind == "cann" else "simulator"
    out.append(("backend", f"{b.kind} ({label}; {_why(args, b.kind)})"))
    out.append(("runtime library", b.libraries.get("ascendcl", "?")))
    out.append(("tensor library", b.libraries.get("nnopbase", "?")))
    op_libs = [c for c in b.op_library_candidates() if os.path.sep in c]
    out.append(
        ("op libraries", ", ".join(op_libs) if op_libs else "none found by path (the loader is searched per op)")
    )
    missing = getattr(b.api, "optional_missing", [])
    if missing:
        out.append(("optional functions missing", ", ".join(missing)))
    soc = b.soc_name()
    out.append(("SoC", soc if soc is not None else "unknown (aclrtGetSocName returned NULL)"))
    try:
        family = products.family_of(soc)
        out.append(("product family", f"{family} ({products.family_label(family)})"))
    except UnknownSocError as exc:
        out.append(("product family", f"unknown: {exc}"))
        status = 1
    version, source = b.version_info()
    out.append(("CANN version", f"{version or 'unknown'} (from {source})"))
    out.append(("call path", _call_path()))
    if b.kind == "sim":
        out.extend(_compiled_kernels(b))
    return out, status


def _call_path() -> str:
    """How a binding call of a known signature is made: by the call plans' C helper
    (runtime/callplan.py), or the Python way, with why."""
    from aclnngen.runtime import callplan

    if callplan.mode() == "python":
        return f"Python ({callplan.MODE_ENV}=python)"
    why = callplan.probe()
    if why is not None:
        return f"Python: the C helper is unavailable ({why})"
    return "C helper (a plan per call signature, made after its first call)"


def _compiled_kernels(b) -> list[tuple[str, str]]:
    """The simulator's compiled kernels (runtime/sim/compiled.py): which ops have one, and the
    ops that run the reference instead, with why."""
    try:
        found = b.compiled_kernels()
    except ValueError as exc:  # a bad $ACLNNGEN_SIM_KERNELS
        return [("compiled kernels", str(exc))]
    if found["error"]:
        return [("compiled kernels", f"none: every op runs the reference ({found['error']})")]
    rows = [
        (
            "compiled kernels",
            f"{len(found['ops'])} ops ({found['setting']}={found['mode']}): {', '.join(found['ops'])}",
        )
    ]
    falls = sorted(found["fallbacks"].items())
    rows.append(("reference kernels", "; ".join(f"{s}: {r}" for s, r in falls) if falls else "none"))
    return rows


def run(args: argparse.Namespace) -> int:
    table, status = rows(args)
    if args.json:
        from .jsonout import emit

        emit({"command": "info", "ok": status == 0, **{key.lower().replace(" ", "_"): value for key, value in table}})
        return status
    width = max(len(k) for k, _ in table)
    for key, value in table:
        print(f"{key.ljust(width)}  {value}")
    return status
