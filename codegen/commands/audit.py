"""`aclnngen audit`: does each op's page say what the library does? (docs/audit.md)

Runs the audit package's checks for every op (or --ops) on one source of behaviour, folds the
findings of one cause on several families into one, marks those a spec's `defects` entry explains
as recorded, writes the Markdown report, the JSON and the pictures into --out, and exits 1 when a
finding is new (neither recorded nor in the baseline) or accepted beyond its expiry date.
`--write-baseline FILE` writes those findings as a baseline for a person to complete. `--repro ID`
prints the reproducer of a finding of the report in --out (default: the newest report written).
A failure before the verdict is one line on stderr (and the JSON failure shape under --json).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import sys
import time
from pathlib import Path

from aclnngen.core.meta import op_meta


DEFAULT_OUT = Path("audit-report")
LAST_REPORT = "audit/last-report"  # under the cache folder: where the newest report went


class AuditFailure(Exception):
    """A failure before the audit's verdict: one line, the JSON failure shape under --json."""

    def __init__(self, message: str, code: int = 2):
        super().__init__(message)
        self.code = code


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--source",
        choices=("sim", "torch", "cann"),
        default="sim",
        help="sim: the simulator under --profile; torch: PyTorch on the CPU (numerics); cann: a real NPU",
    )
    parser.add_argument(
        "--profile",
        default="vendor",
        help="the simulator's behaviour profile for --source sim (default: vendor; 'spec' checks the spec against itself)",
    )
    parser.add_argument("--ops", nargs="+", metavar="OP", help="only these ops (snake_case or aclnn name)")
    parser.add_argument("--family", help="only this product family (library checks)")
    parser.add_argument("--out", type=Path, help=f"where the report goes (default: {DEFAULT_OUT}/)")
    parser.add_argument("--baseline", type=Path, help="accepted findings (YAML list of {id, reason, expires})")
    parser.add_argument(
        "--write-baseline",
        type=Path,
        metavar="FILE",
        help="write the findings that gate (and the accepted ones) as a baseline, with a reason and an "
        "expiry placeholder a person fills",
    )
    parser.add_argument(
        "--repro",
        metavar="ID",
        help="print the reproducer of finding ID from the report in --out (default: the newest report written), and exit",
    )
    parser.add_argument("--no-pictures", action="store_true", help="skip the PNG pictures")
    parser.add_argument(
        "--jobs", type=_jobs, default=1, metavar="N", help="audit N ops at once, each in its own process (default 1)"
    )
    parser.add_argument(
        "--page",
        type=Path,
        action="append",
        default=[],
        metavar="PAGE",
        help="a vendor page (Markdown or saved web page) of an audited op: read through the importer and set against the spec (repeatable)",
    )
    parser.add_argument("--release", help="the release the --page pages describe (default: each spec's newest)")
    parser.add_argument(
        "--headers",
        type=Path,
        metavar="DIR",
        help="a CANN include folder: check each spec's prototypes against its aclnnop/aclnn_*.h declarations",
    )
    parser.add_argument(
        "--save-profile",
        metavar="NAME",
        help="write what the library accepted as behaviour profile NAME (specs/profiles/NAME/<release>/<op>.yaml) "
        "for the simulator; with --source cann (or sim, to copy a profile)",
    )
    parser.add_argument(
        "--profiles-dir",
        type=Path,
        metavar="DIR",
        help="where --save-profile writes (default: the specs' profiles/ folder)",
    )


def run(args: argparse.Namespace) -> int:
    try:
        return _run(args)
    except AuditFailure as exc:
        if args.json:
            from .jsonout import failure

            failure("audit", str(exc))
        print(f"aclnngen audit: {exc}", file=sys.stderr)
        return exc.code


def _run(args: argparse.Namespace) -> int:
    if args.repro is not None:
        if not args.repro.strip():
            raise AuditFailure("--repro: give the id of a finding (the report lists them)", code=2)
        return _repro(args.out, args.repro, args.json)
    out = args.out or DEFAULT_OUT
    if os.path.lexists(out) and not out.is_dir():  # found before the audit runs, not after
        raise AuditFailure(f"--out {out}: exists and is not a folder; name a folder for the report", code=2)
    if args.save_profile and args.source == "torch":
        raise AuditFailure(
            "--save-profile records what a library accepts; --source torch runs no library (use cann or sim)"
        )
    if args.source == "torch":
        try:
            import torch  # noqa: F401  (the oracle)
        except ImportError:
            raise AuditFailure("--source torch needs PyTorch: pip install 'aclnngen[audit]'") from None
    from aclnngen import __version__
    from aclnngen.audit import baseline, checks, findings, report
    from aclnngen.runtime import session

    from .run import _ops

    accepted = _baseline(args, baseline)
    selected = _ops(args.ops)
    if args.source == "cann":
        from aclnngen.runtime.backend import cann_not_found
        from aclnngen.runtime.errors import CannNotFoundError

        try:
            backend = session.init("cann")
        except CannNotFoundError as exc:  # the same exit code as every command; what works for audit instead
            raise cann_not_found(
                exc.searched,
                instead="to audit without an NPU, use --source sim (the simulator) or --source torch (numerics)",
            ) from None
        family = backend.family()
    else:
        family = args.family
    record = {
        "source": args.source,
        "profile": args.profile if args.source == "sim" else "- (no simulator)",
        "family": family or "every family of each op",
        "aclnngen": __version__,
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
    }
    if args.source == "cann":
        record.update(
            soc=backend.soc_name(),
            cann=backend.version() or "unknown",
            libraries=", ".join(map(str, getattr(backend, "paths", []) or [])),
        )
    jobs = [(snake, args.source, args.profile if args.source == "sim" else None, family) for snake in selected]
    audits = []
    started = time.monotonic()
    for index, result in enumerate(_audits(jobs, args.jobs if args.source != "cann" else 1), 1):
        # progress on stderr, always (stdout holds only the summary or the JSON)
        print(
            f"audit: op {index}/{len(selected)} {result.op}: {result.checked} claims checked, "
            f"{len(result.findings)} observations ({time.monotonic() - started:.1f} s)",
            file=sys.stderr,
            flush=True,
        )
        audits.append(result)
    for page in args.page:
        problem = _page_check(page, args.release, selected, audits)
        if problem:
            raise AuditFailure(problem)
    if args.headers is not None:
        if not args.headers.is_dir():
            raise AuditFailure(f"--headers {args.headers} is not a folder")
        _header_check(args.headers, selected, audits)
    if args.save_profile:
        problem = _save_profile(args, selected, audits, record)
        if problem:
            raise AuditFailure(problem)
    # one finding per cause, the families listed; a finding a spec's defects entry explains is recorded
    recorded: dict[str, dict] = {}
    for snake, audit in zip(selected, audits):
        audit.findings = findings.by_cause(audit.findings)
        recorded.update(checks.explanations(audit.findings, checks.spec_defects(snake), audit.release))
    _describe_run(record, audits, args.source)
    ids = [f.id for a in audits for f in a.findings]
    judgement = baseline.judge(ids, accepted, datetime.date.today(), recorded=recorded)
    data = report.as_json(audits, record, judgement, recorded, accepted, None if args.out is None else out)
    written = report.write(data, out)
    _remember(out)
    if not args.no_pictures:
        try:
            written += report.pictures(data, out) + report.error_pictures(data, out)
        except ImportError:
            print("aclnngen audit: pictures need matplotlib: pip install 'aclnngen[audit]'", file=sys.stderr)
    for entry in judgement.stale:
        print(f"warning: baseline entry {entry} matches no finding", file=sys.stderr)
    for entry in judgement.expired:
        print(
            f"warning: baseline entry {entry} expired on {accepted[entry].expires.isoformat()}: it gates like a new finding",
            file=sys.stderr,
        )
    if args.write_baseline is not None:
        try:
            args.write_baseline.write_text(
                baseline.dump([f for op in data["ops"] for f in op["findings"]], accepted, judgement), encoding="utf-8"
            )
        except OSError as exc:
            raise AuditFailure(
                f"--write-baseline {args.write_baseline}: cannot write it ({exc.strerror or exc})"
            ) from None
        waiting = len(judgement.new) + len(judgement.expired)
        print(
            f"baseline: {args.write_baseline} ({waiting} entr{'y' if waiting == 1 else 'ies'} to fill in: "
            f"reason and expires; then pass --baseline {args.write_baseline})",
            file=sys.stderr,
        )
    if args.json:
        from .jsonout import emit

        emit(
            {
                "command": "audit",
                "ok": not judgement.gates,
                "out": str(out),
                "checked": data["coverage"]["checked"],
                "new": judgement.new,
                "recorded": judgement.recorded,
                "accepted": judgement.accepted,
                "expired": judgement.expired,
                "stale_baseline": judgement.stale,
                "run": record,
                "repro_command": data["repro_command"],
            }
        )
    else:
        print(
            f"claims checked: {data['coverage']['checked']}; findings: {report.summary(data)}; "
            f"report: {out / 'audit.md'}"
        )
    return 1 if judgement.gates else 0


def _baseline(args: argparse.Namespace, baseline) -> dict:
    """The accepted findings of --baseline; a --write-baseline target that does not exist yet is
    an empty baseline."""
    if args.baseline is None:
        return {}
    if (
        args.write_baseline is not None
        and not args.baseline.exists()
        and args.baseline.resolve() == args.write_baseline.resolve()
    ):
        return {}
    try:
        return baseline.load(args.baseline)
    except baseline.BaselineError as exc:
        raise AuditFailure(str(exc)) from None


def _describe_run(record: dict, audits: list, source: str) -> None:
    """The CANN release(s) and the SoC(s) audited, in the run record."""
    releases = sorted({a.release for a in audits if a.release})
    socs = {}
    for a in audits:
        socs.update(a.socs)
    if source == "cann":
        record["cann"] = f"{record['cann']} (installed); the specs' facts at " + ", ".join(releases)
        return
    record["cann"] = (
        (releases[0] if len(releases) == 1 else ", ".join(releases) + " (each op at its newest release)")
        if releases
        else "-"
    )
    if source == "sim":
        record["soc"] = ", ".join(f"{fam}: {soc}" for fam, soc in socs.items()) + " (simulated)" if socs else "-"
    else:
        record["soc"] = "- (PyTorch on the CPU)"


def _remember(out: Path) -> None:
    """Record where the newest report went, so `--repro ID` finds it without --out. Only saves
    typing: a cache that cannot be written is ignored."""
    from aclnngen.cachedir import cache_root

    from aclnngen.files import write_atomic

    try:
        path = cache_root() / LAST_REPORT
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(path, str(out.resolve()) + "\n", what="cache record")
    except OSError:
        pass


def _last_report() -> Path | None:
    from aclnngen.cachedir import cache_root

    from aclnngen.files import read_text

    try:  # a record of a path, no more: bounded, and a FIFO or device there is ignored
        return Path(read_text(cache_root() / LAST_REPORT, what="cache record", limit=4096).strip())
    except (OSError, ValueError):
        return None


def _save_profile(args: argparse.Namespace, selected: list[str], audits: list, record: dict) -> str | None:
    """Write each audited op's observations as profile `args.save_profile`; a message on failure."""
    import importlib

    from aclnngen.audit import observed
    from aclnngen.codegen.loader import DEFAULT_SPECS_DIR
    from aclnngen.runtime import profiles
    from aclnngen.core.releases import known_releases
    from aclnngen.core.releases import is_version

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
        null = (
            "checked"
            if base not in profiles.names()
            or profiles.null_out_pointers_checked(base, op_meta(meta).name, str(release))
            else "unchecked"
        )
        data = observed.observed(
            by_name[op_meta(meta).name], meta, str(release), source=args.source, null_out_pointers=null
        )
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
        found, checked = headers.compare(
            include,
            [meta],
            {
                op_meta(meta).name: {
                    "get_workspace_size": spec.prototypes.get_workspace_size,
                    "launch": spec.prototypes.launch,
                }
            },
        )
        audited = by_name[op_meta(meta).name]
        audited.findings += found
        audited.checked += checked
        audited.claims += checked


def _page_check(page: Path, release: str | None, selected: list[str], audits: list) -> str | None:
    """Set one page against the spec of the op it documents; a message when that cannot be done."""
    import importlib

    from aclnngen.audit.page import page_findings
    from aclnngen.codegen.importer.merge import load_round_trip
    from aclnngen.codegen.importer.pages import PageError, read_page
    from aclnngen.core.releases import release_of
    from aclnngen.codegen.loader import DEFAULT_SPECS_DIR, load_products
    from aclnngen.core.releases import known_releases

    products = load_products()
    try:
        op = read_page(page, products).op
    except PageError as exc:
        return str(exc)
    snake = next(
        (s for s in selected if importlib.import_module(f"aclnngen.generated.meta.{s}").META["name"] == op), None
    )
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


def _repro(out: Path | None, finding: str, as_json: bool) -> int:
    """The reproducer of `finding` from the report in `out`; without --out, from audit-report/ or
    the newest report written."""
    places = (
        [out] if out is not None else list(dict.fromkeys(p for p in (DEFAULT_OUT, _last_report()) if p is not None))
    )
    reports = [p / "audit.json" for p in places if (p / "audit.json").exists()]
    if not reports:
        raise AuditFailure(
            f"--repro: no report at {' or '.join(str(p / 'audit.json') for p in places)}; "
            "run the audit first (with --out DIR, then pass the same --out)"
        )
    from aclnngen.files import read_text

    for path in reports:
        try:
            data = json.loads(read_text(path, what="report"))
            found = [f for op in data["ops"] for f in op["findings"] if f["id"] == finding]
            text = (
                (found[0]["repro"] or f"# {finding}: recorded by the spec itself ({found[0]['observed']})\n")
                if found
                else None
            )
        except (OSError, ValueError, KeyError, TypeError, IndexError) as exc:
            raise AuditFailure(
                f"--repro: {path} is not a report aclnngen wrote ({type(exc).__name__}: {exc}); "
                "run the audit again to rewrite it"
            ) from None
        if isinstance(text, str):
            if as_json:
                from .jsonout import emit

                emit({"command": "audit", "ok": True, "id": finding, "report": str(path), "repro": text})
            else:
                print(text, end="")
            return 0
    raise AuditFailure(f"--repro: no finding {finding!r} in {', '.join(map(str, reports))}")
