"""`aclnngen run`: run every generated op on the active backend and compare with the reference.

For each op in aclnngen.generated.OPS and each dtype it supports on the current product family
(or only the first with --one-dtype), the inputs are `runtime.cases.make_values(meta, "contiguous",
dtype)`; the binding's results are compared with the generated reference (opmath mode): bit for
bit on the simulator, within opcheck's tolerance policy on CANN. Prints a table (op, dtype, shape,
status, max |diff|, match) and exits 1 when anything failed. An op the family does not support is
listed as skipped, not failed.
"""

from __future__ import annotations

import argparse
import importlib

from aclnngen.core.meta import op_meta


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--backend",
        choices=("cann", "sim"),
        help="use this backend (default: $ACLNNGEN_BACKEND, else CANN when found, else the simulator)",
    )
    parser.add_argument("--ops", nargs="+", metavar="OP", help="only these ops (snake_case or aclnn name)")
    parser.add_argument("--one-dtype", action="store_true", help="one supported dtype per op instead of all")
    parser.add_argument("--seed", type=_seed, default=0, help="seed of the input data, 0 to 2**32-1 (default 0)")
    parser.add_argument(
        "--cases",
        metavar="FILE.csv",
        help="run the cases of a TTK ACLNN case file (aclnngen export --ttk writes them) instead",
    )
    parser.add_argument(
        "--package",
        help="with --cases: the generated package whose ops the cases call (default: aclnngen's own)",
    )


def _seed(text: str) -> int:
    """A seed NumPy accepts (an argparse type: a bad one is a usage error, exit 2)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
    if not 0 <= value < 2**32:
        raise argparse.ArgumentTypeError(f"{value} is out of range; a seed is 0 to {2**32 - 1}")
    return value


def _max_diff(got, want) -> float:
    import numpy as np

    if got.size == 0 or got.shape != want.shape:
        return 0.0
    # complex results: the modulus of the complex difference, so an imaginary part counts too
    wide = np.complex128 if np.iscomplexobj(got) or np.iscomplexobj(want) else np.float64
    a, b = got.astype(wide), want.astype(wide)
    with np.errstate(invalid="ignore"):
        diff = np.abs(a - b)
    same = (a == b) | (np.isnan(a) & np.isnan(b))  # a complex NaN has a NaN part
    diff = np.where(same, 0.0, diff)
    return float(np.nanmax(np.where(np.isnan(diff), np.inf, diff)))


def _ops(selected):
    from aclnngen.generated import OPS

    if not selected:
        return list(OPS)
    chosen = []
    for name in selected:
        snake = name
        if name not in OPS:
            for op in OPS:
                typed = op_meta(importlib.import_module(f"aclnngen.generated.meta.{op}").META)
                if name in (typed.name, typed.symbol):
                    snake = op
        if snake not in OPS:
            from ..errors import GenerateError

            raise GenerateError(f"unknown op {name!r}; known: {', '.join(OPS)}")
        chosen.append(snake)
    return chosen


def check_op(snake: str, family: str, version: str, backend_kind: str, *, one_dtype: bool, seed: int):
    """Rows (op, dtype, shape, status, max |diff|, match) for one op; match is True/False/None."""
    import numpy as np

    from aclnngen.verify import cases, directives, opcheck
    from aclnngen.runtime.errors import AclnnError
    from aclnngen.core.rules import supported_dtypes, supported_families

    meta = importlib.import_module(f"aclnngen.generated.meta.{snake}").META
    binding = getattr(importlib.import_module(f"aclnngen.generated.ops.{snake}"), snake)
    reference = importlib.import_module(f"aclnngen.generated.reference.{snake}")
    op = opcheck.OpUnderTest(meta, reference=reference, binding=binding, version=version)
    typed = op_meta(meta)
    name = typed.name
    if family not in supported_families(meta, version):
        return [(name, "-", "-", f"skipped: not supported on {family} at CANN {version}", "-", None)]
    tensors = [p.name for p in typed.tensors]
    dtypes = [
        d
        for d in supported_dtypes(meta, tensors[0], family, version)
        if all(d in supported_dtypes(meta, t, family, version) for t in tensors)
    ]
    if one_dtype:
        dtypes = dtypes[:1]
    if not dtypes:
        return [(name, "-", "-", f"skipped: no dtype every tensor accepts on {family}", "-", None)]
    kinds = typed.formula.outputs
    rows = []
    for dtype in dtypes:
        values = dict(cases.make_values(meta, "contiguous", dtype, version=version, seed=seed))
        shape = "x".join(str(d) for d in values[typed.by_role("input")[0].name].shape) or "()"
        positional, keywords, _ = op.split(values)
        try:
            result = binding(*positional, **keywords)
        except AclnnError as exc:
            rows.append((name, dtype, shape, f"error: {type(exc).__name__}: {exc}", "-", False))
            continue
        got = result if isinstance(result, tuple) else (result,)
        want = op.run_reference(values)
        worst, ok, problems = 0.0, True, []
        for (py, kind), g, w in zip(kinds.items(), got, want):
            g = np.asarray(g)
            worst = max(worst, _max_diff(g, w))
            if backend_kind == "sim":
                try:  # the simulator's compiled kernel against the reference (opcheck)
                    opcheck.renderings_agree(op, values, py, g, w)
                except AssertionError as exc:
                    ok = False
                    problems.append(str(exc).splitlines()[0])
            else:
                tolerance = directives.load().tolerance(name, "binding", family, dtype, package=op.package)
                try:
                    opcheck.compare_within_policy(op, values, py, kind, dtype, g, w, tolerance)
                except AssertionError as exc:
                    ok = False
                    problems.append(str(exc).splitlines()[0])
        status = "ok" if ok else "; ".join(problems)
        rows.append((name, dtype, shape, status, f"{worst:.3g}", ok))
    return rows


BUILT_IN = "aclnngen.generated"


def package_ops(package: str) -> tuple[str, ...]:
    """The ops (snake names) of a generated package: aclnngen's own, or one `aclnngen generate
    --out` wrote (importable by its name)."""
    from ..errors import GenerateError

    try:
        return tuple(importlib.import_module(package).OPS)
    except (ImportError, AttributeError) as exc:
        raise GenerateError(f"--package {package}: not an importable generated package ({exc})") from None


def _op_of_api(api: str, package: str = BUILT_IN) -> str | None:
    """The snake name of the package's op whose symbol is `api`."""
    for snake in package_ops(package):
        if importlib.import_module(f"{package}.meta.{snake}").META["symbol"] == api:
            return snake
    return None


def check_case(case, family: str, soc: str | None, version: str | None, *, seed: int, package: str = BUILT_IN):
    """The row (case, op, dtype, status, max |diff|, match) of one TTK case: the call's status on
    the active backend and, where the op has a reference, its outputs against the reference
    within the case's precision pairs."""
    import numpy as np

    from aclnngen.runtime.call import _newest_version
    from aclnngen.runtime.errors import AclnnError
    from aclnngen.verify import opcheck, ttk

    dtype = case.dtypes[0] if case.dtypes else "-"
    snake = _op_of_api(case.api, package)
    if snake is None:
        return (case.name, case.api, dtype, f"error: no op of {package} has this API", "-", False)
    if not ttk.runs_on(case, soc):
        return (case.name, case.api, dtype, f"skipped: soc_series leaves out {soc}", "-", None)
    meta = importlib.import_module(f"{package}.meta.{snake}").META
    binding = getattr(importlib.import_module(f"{package}.ops.{snake}"), snake)
    try:
        reference = importlib.import_module(f"{package}.reference.{snake}")
    except ModuleNotFoundError:
        reference = None  # a binding-tier op: the status is the verdict
    op = opcheck.OpUnderTest(meta, reference=reference, binding=binding, version=version or _newest_version(meta))
    try:
        values = ttk.values_of(meta, case, seed=seed)
    except ValueError as exc:
        return (case.name, case.api, dtype, f"error: {exc}", "-", False)
    positional, keywords, outputs = op.split(values)
    keywords |= {"out": tuple(outputs.values()) if len(outputs) > 1 else next(iter(outputs.values()))}
    formats = ttk.formats_of(meta, case)
    try:
        result = binding(*positional, **keywords, **({"formats": formats} if formats else {}))
    except AclnnError as exc:
        return (case.name, case.api, dtype, f"error: {type(exc).__name__}: {_first_line(exc)}", "-", False)
    if reference is None:
        return (case.name, case.api, dtype, "ok (no reference: status only)", "-", True)
    got = result if isinstance(result, tuple) else (result,)
    want = op.run_reference(values, family=family)
    worst = max((_max_diff(np.asarray(g), w) for g, w in zip(got, want)), default=0.0)
    if case.tolerances:
        ok = all(ttk.within(np.asarray(g), w, pair) for g, w, pair in zip(got, want, case.tolerances))
        return (
            case.name,
            case.api,
            dtype,
            "ok" if ok else "outside the case's precision_tolerances",
            f"{worst:.3g}",
            ok,
        )
    # a row that states no pair: aclnngen's own precision policy per output kind
    pys = [op.typed.param(n).py for n in op.typed.written]
    try:
        for py, g, w in zip(pys, got, want):
            opcheck.renderings_agree(op, values, py, np.asarray(g), w)
    except AssertionError as exc:
        return (case.name, case.api, dtype, f"outside the precision policy: {_first_line(exc)}", f"{worst:.3g}", False)
    return (case.name, case.api, dtype, "ok", f"{worst:.3g}", True)


def _first_line(exc: BaseException) -> str:
    return " ".join(str(exc).split())[:200]


def run(args: argparse.Namespace) -> int:
    from aclnngen.runtime import session
    from aclnngen.core.releases import is_version

    if args.cases:
        return _run_cases(args)
    selected = _ops(args.ops)
    backend = session.init(args.backend)
    family = backend.family()
    version = backend.version()
    shown_version = version or "unknown"
    if version is None or not is_version(version):
        version = None
    if not args.json:
        print(f"backend {backend.kind}, SoC {backend.soc_name()}, family {family}, CANN {shown_version}")
    rows = []
    for snake in selected:
        if version is None:
            from aclnngen.runtime.call import _newest_version

            meta = importlib.import_module(f"aclnngen.generated.meta.{snake}").META
            op_version = _newest_version(meta)
        else:
            op_version = version
        rows += check_op(snake, family, op_version, backend.kind, one_dtype=args.one_dtype, seed=args.seed)
    return _report(args, backend, family, version, rows, ("op", "dtype", "shape", "status", "max_diff", "match"))


def _run_cases(args: argparse.Namespace) -> int:
    from aclnngen.core.releases import is_version
    from aclnngen.runtime import session
    from aclnngen.verify import ttk

    found = ttk.read(args.cases)
    package = args.package or BUILT_IN
    for snake in package_ops(package):  # its simulator entry points register on import, before the backend starts
        importlib.import_module(f"{package}.ops.{snake}")
    if package != BUILT_IN:
        session.reset()  # a simulator built before the import would lack them
    backend = session.init(args.backend)
    family, version = backend.family(), backend.version()
    version = version if version is not None and is_version(version) else None
    if not args.json:
        print(f"backend {backend.kind}, SoC {backend.soc_name()}, family {family}, CANN {version or 'unknown'}")
        print(f"{args.cases}: {len(found)} cases")
    rows = [
        check_case(case, family, backend.soc_name(), version, seed=args.seed + i, package=package)
        for i, case in enumerate(found)
    ]
    return _report(args, backend, family, version, rows, ("case", "op", "dtype", "status", "max_diff", "match"))


def _report(args, backend, family, version, rows, keys) -> int:
    """The table (or --json object) of rows whose last column is True / False / None (skipped)."""
    failed = sum(1 for r in rows if r[5] is False)
    passed = sum(1 for r in rows if r[5] is True)
    skipped = sum(1 for r in rows if r[5] is None)
    if args.json:
        from .jsonout import emit

        emit(
            {
                "command": "run",
                "ok": not failed,
                "backend": backend.kind,
                "soc": backend.soc_name(),
                "family": family,
                "cann": version,
                "matched": passed,
                "failed": failed,
                "skipped": skipped,
                "rows": [dict(zip(keys, r)) for r in rows],
            }
        )
        return 1 if failed else 0
    header = tuple("max |diff|" if k == "max_diff" else k for k in keys)
    table = [header] + [
        (r[0], r[1], r[2], r[3], r[4], "-" if r[5] is None else ("yes" if r[5] else "no")) for r in rows
    ]
    widths = [max(len(str(row[i])) for row in table) for i in range(len(header))]
    for index, row in enumerate(table):
        print("  ".join(str(cell).ljust(width) for cell, width in zip(row, widths)).rstrip())
        if index == 0:
            print("  ".join("-" * width for width in widths))
    print(f"{passed} matched, {failed} failed, {skipped} skipped")
    return 1 if failed else 0
