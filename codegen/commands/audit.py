"""`aclnngen audit`: does each op's page say what the library does? (docs/audit.md)

Runs the audit package's checks for every op (or --ops) on one source of behaviour, writes the
Markdown report, the JSON and the pictures into --out, and exits 1 when a finding is neither in the
baseline nor accepted beyond its expiry date. `--repro ID` prints the reproducer of a finding of
the last report in --out.
"""

from __future__ import annotations

import argparse
import datetime
import json
import sys
from pathlib import Path


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--source", choices=("sim", "torch", "cann"), default="sim",
                        help="sim: the simulator under --profile; torch: PyTorch on the CPU (numerics); cann: a real NPU")
    parser.add_argument("--profile", default="vendor",
                        help="the simulator's behaviour profile for --source sim (default: vendor; 'spec' checks the spec against itself)")
    parser.add_argument("--ops", nargs="+", metavar="OP", help="only these ops (snake_case or aclnn name)")
    parser.add_argument("--family", help="only this product family (library checks)")
    parser.add_argument("--out", type=Path, default=Path("audit-report"), help="where the report goes (default: audit-report/)")
    parser.add_argument("--baseline", type=Path, help="accepted findings (YAML list of {id, reason, expires})")
    parser.add_argument("--repro", metavar="ID", help="print the reproducer of finding ID from the report in --out, and exit")
    parser.add_argument("--no-pictures", action="store_true", help="skip the PNG pictures")
    parser.add_argument("--jobs", type=_jobs, default=1, metavar="N", help="audit N ops at once, each in its own process (default 1)")
    parser.add_argument("--page", type=Path, action="append", default=[], metavar="PAGE",
                        help="a vendor page (Markdown or saved web page) of an audited op: read through the importer and set against the spec (repeatable)")
    parser.add_argument("--release", help="the release the --page pages describe (default: each spec's newest)")
    parser.add_argument("--headers", type=Path, metavar="DIR",
                        help="a CANN include folder: check each spec's prototypes against its aclnnop/aclnn_*.h declarations")
    parser.add_argument("--save-profile", metavar="NAME",
                        help="write what the library accepted as behaviour profile NAME (specs/profiles/NAME/<release>/<op>.yaml) "
                             "for the simulator; with --source cann (or sim, to copy a profile)")
    parser.add_argument("--profiles-dir", type=Path, metavar="DIR",
                        help="where --save-profile writes (default: the specs' profiles/ folder)")


def run(args: argparse.Namespace) -> int:
    if args.repro:
        return _repro(args.out, args.repro)
    if args.save_profile and args.source == "torch":
        print("aclnngen audit: --save-profile records what a library accepts; --source torch runs no library (use cann or sim)",
              file=sys.stderr)
        return 2
    if args.source == "torch":
        try:
            import torch  # noqa: F401  (the oracle)
        except ImportError:
            print("aclnngen audit --source torch needs PyTorch: pip install 'aclnngen[audit]'", file=sys.stderr)
            return 2
    from aclnngen import __version__
    from aclnngen.audit import baseline, checks, report
    from aclnngen.runtime import session

    from .run import _ops

    selected = _ops(args.ops)
    if args.source == "cann":
        try:
            backend = session.init("cann")
        except Exception as exc:  # no CANN: one line, not a traceback
            print(f"aclnngen audit --source cann: no CANN here ({type(exc).__name__}: {exc})", file=sys.stderr)
            return 2
        family = backend.family()
    else:
        family = args.family
    record = {"source": args.source, "profile": args.profile if args.source == "sim" else "-",
              "family": family or "every family of each op", "aclnngen": __version__,
              "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")}
    if args.source == "cann":
        record.update(soc=backend.soc_name(), cann=backend.version() or "unknown", libraries=", ".join(map(str, getattr(backend, "paths", []) or [])))
    progress = sys.stderr.isatty() and not args.json
    jobs = [(snake, args.source, args.profile if args.source == "sim" else None, family) for snake in selected]
    audits = []
    for index, result in enumerate(_audits(jobs, args.jobs if args.source != "cann" else 1), 1):
        if progress:
            print(f"\r[{index}/{len(selected)}] {result.op:<40}", end="", file=sys.stderr, flush=True)
        audits.append(result)
    if progress:
        print(file=sys.stderr)
    for page in args.page:
        problem = _page_check(page, args.release, selected, audits)
        if problem:
            print(f"aclnngen audit: {problem}", file=sys.stderr)
            return 2
    if args.headers is not None:
        if not args.headers.is_dir():
            print(f"aclnngen audit: --headers {args.headers} is not a folder", file=sys.stderr)
            return 2
        _header_check(args.headers, selected, audits)
    if args.save_profile:
        problem = _save_profile(args, selected, audits, record)
        if problem:
            print(f"aclnngen audit: {problem}", file=sys.stderr)
            return 2
    ids = [f.id for a in audits for f in a.findings]
    try:
        accepted = baseline.load(args.baseline)
    except baseline.BaselineError as exc:
        print(f"aclnngen audit: {exc}", file=sys.stderr)
        return 2
    new, ok, stale = baseline.judge(ids, accepted, datetime.date.today())
    data = report.as_json(audits, record, new, ok, stale)
    written = report.write(data, args.out)
    if not args.no_pictures:
        try:
            written += report.pictures(data, args.out) + report.error_pictures(data, args.out)
        except ImportError:
            print("aclnngen audit: pictures need matplotlib: pip install 'aclnngen[audit]'", file=sys.stderr)
    for entry in stale:
        print(f"warning: baseline entry {entry} matches no finding", file=sys.stderr)
    if args.json:
        from .jsonout import emit

        emit({"command": "audit", "ok": not new, "out": str(args.out), "checked": data["coverage"]["checked"],
              "new": new, "accepted": ok, "stale_baseline": stale})
    else:
        print(f"claims checked: {data['coverage']['checked']}; findings: {len(new)} new, {len(ok)} accepted; "
              f"report: {args.out / 'audit.md'}")
    return 1 if new else 0


def _save_profile(args: argparse.Namespace, selected: list[str], audits: list, record: dict) -> str | None:
    """Write each audited op's observations as profile `args.save_profile`; a message on failure."""
    import importlib

    from aclnngen.audit import observed
    from aclnngen.codegen.loader import DEFAULT_SPECS_DIR
    from aclnngen.runtime import profiles
    from aclnngen.runtime.releases import known_releases
    from aclnngen.runtime.versions import is_version

    directory = args.profiles_dir or DEFAULT_SPECS_DIR / "profiles"
    by_name = {a.op: a for a in audits}
    where = f", SoC {record['soc']}" if record.get("soc") else f", profile {record['profile']}"
    for snake in selected:
        meta = importlib.import_module(f"aclnngen.generated.meta.{snake}").META
        release = record.get("cann") if args.source == "cann" else str(known_releases(meta)[-1])
        if not release or not is_version(str(release)):
            return f"--save-profile: the installed CANN release {release!r} is not a release number a profile can hold"
        # a NULL out pointer is never probed (an implementation that does not check it crashes):
        # what the profile it was audited under (or the vendor's) says carries over
        base = args.profile if args.source == "sim" else "vendor"
        null = "checked" if base not in profiles.names() or profiles.null_out_pointers_checked(base, meta["name"], str(release)) \
            else "unchecked"
        data = observed.observed(by_name[meta["name"]], meta, str(release), source=args.source, null_out_pointers=null)
        try:
            path = observed.write(data, directory, args.save_profile, snake, source=args.source, where=where)
        except observed.SaveProfileError as exc:
            return str(exc)
        print(f"profile: {path}", file=sys.stderr)
    print("run `aclnngen generate` to give the simulator the saved profile", file=sys.stderr)
    return None


def _jobs(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of processes") from None
    if not 1 <= value <= 64:
        raise argparse.ArgumentTypeError(f"{value} is out of range; --jobs takes 1 to 64")
    return value


def _audit_one(job: tuple):
    from aclnngen.audit import checks

    snake, source, profile, family = job
    result = checks.audit_op(snake, source, profile=profile, family=family)
    result.findings += checks.recorded_defects(snake, result.op)
    return result


def _audits(jobs: list[tuple], workers: int):
    """Each op's audit, in the order of `jobs` (one process per worker; the simulator and the
    session are per process, so ops never share one). A real NPU is audited one op at a time."""
    if workers <= 1 or len(jobs) <= 1:
        for job in jobs:
            yield _audit_one(job)
        return
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    with ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("spawn")) as pool:
        yield from pool.map(_audit_one, jobs)


def _header_check(include: Path, selected: list[str], audits: list) -> None:
    import importlib

    from aclnngen.audit import headers
    from aclnngen.codegen.loader import DEFAULT_SPECS_DIR, load_products, load_spec

    products = load_products()
    by_name = {a.op: a for a in audits}
    for snake in selected:
        meta = importlib.import_module(f"aclnngen.generated.meta.{snake}").META
        spec = load_spec(DEFAULT_SPECS_DIR / "ops" / f"{snake}.yaml", products).spec
        found, checked = headers.compare(include, [meta], {meta["name"]: {
            "get_workspace_size": spec.prototypes.get_workspace_size, "launch": spec.prototypes.launch}})
        by_name[meta["name"]].findings += found
        by_name[meta["name"]].checked += checked
        by_name[meta["name"]].claims += checked


def _page_check(page: Path, release: str | None, selected: list[str], audits: list) -> str | None:
    """Set one page against the spec of the op it documents; a message when that cannot be done."""
    import importlib

    from aclnngen.audit.page import page_findings
    from aclnngen.codegen.importer.merge import load_round_trip
    from aclnngen.codegen.importer.pages import PageError, read_page
    from aclnngen.runtime.versions import release_of
    from aclnngen.codegen.loader import DEFAULT_SPECS_DIR, load_products
    from aclnngen.runtime.releases import known_releases

    products = load_products()
    try:
        op = read_page(page, products).op
    except PageError as exc:
        return str(exc)
    snake = next((s for s in selected if importlib.import_module(f"aclnngen.generated.meta.{s}").META["name"] == op), None)
    if snake is None:
        return f"--page {page} documents {op!r}, which is not among the audited ops"
    meta = importlib.import_module(f"aclnngen.generated.meta.{snake}").META
    at = release_of(release) if release else str(known_releases(meta)[-1])
    spec = load_round_trip(DEFAULT_SPECS_DIR / "ops" / f"{snake}.yaml")
    found, checked = page_findings(page, spec, at, products)
    audit = next(a for a in audits if a.op == op)
    audit.findings += found
    audit.checked += checked
    audit.claims += checked
    return None


def _repro(out: Path, finding: str) -> int:
    path = out / "audit.json"
    if not path.exists():
        print(f"aclnngen audit --repro: no report at {path}; run the audit with --out {out} first", file=sys.stderr)
        return 2
    data = json.loads(path.read_text(encoding="utf-8"))
    for op in data["ops"]:
        for f in op["findings"]:
            if f["id"] == finding:
                if not f["repro"]:
                    print(f"# {finding}: recorded by the spec itself ({f['observed']})")
                else:
                    print(f["repro"], end="")
                return 0
    print(f"aclnngen audit --repro: no finding {finding!r} in {path}", file=sys.stderr)
    return 2
