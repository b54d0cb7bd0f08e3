"""The audit's outputs: a Markdown report for a person, JSON for tools, pictures where a person
would rather look than read (the claimed-versus-observed dtype matrix, with matplotlib)."""

from __future__ import annotations

import json
from pathlib import Path
import shlex
from typing import Mapping, Sequence

from aclnngen.core import defects as defect_kinds
from aclnngen.files import locked, write_atomic

from .baseline import Accepted, Judgement
from .checks import HISTOGRAM_EDGES, OpAudit
from .findings import GROUPS

SCHEMA = "aclnngen-audit/2"

SETS = ("claimed, works", "claimed, rejected", "not claimed, works", "not claimed, rejected")
_TITLES = {"mismatch": "Mismatches", "undocumented": "Undocumented behaviour", "page_defect": "Page defects"}


def as_json(
    audits: Sequence[OpAudit],
    record: dict,
    judgement: Judgement,
    recorded: Mapping[str, dict],
    accepted: Mapping[str, Accepted],
    out: Path | None = None,
) -> dict:
    """The report's data. `recorded`: finding id -> the spec's defects entry that explains it;
    `accepted`: the baseline's entries; `out`: where the report is written (for the reproducer's
    command line)."""

    def finding(f) -> dict:
        data = {**f.as_dict(), "status": judgement.status(f.id)}
        if f.id in recorded:
            data["recorded"] = recorded[f.id]
        if f.id in accepted and data["status"] in ("accepted", "expired"):
            data["baseline"] = {"reason": accepted[f.id].reason, "expires": accepted[f.id].expires.isoformat()}
        return data

    return {
        "schema": SCHEMA,
        "run": record,
        "coverage": {"checked": sum(a.checked for a in audits), "claims": sum(a.claims for a in audits)},
        "new": judgement.new,
        "recorded": judgement.recorded,
        "accepted": judgement.accepted,
        "expired": judgement.expired,
        "stale_baseline": judgement.stale,
        "repro_command": repro_command(out),
        "ops": [
            {
                "op": a.op,
                "source": a.source,
                "release": a.release,
                "socs": a.socs,
                "checked": a.checked,
                "claims": a.claims,
                "errors": a.errors,
                "support": a.matrix,
                "partial": {f: d for f, d in a.partial.items() if d},
                "error_histogram": a.error_histogram,
                "findings": [finding(f) for f in a.findings],
            }
            for a in audits
        ],
        "histogram_edges_log10": list(HISTOGRAM_EDGES),
    }


def repro_command(out: Path | None) -> str:
    """The command that prints a finding's reproducer from the report in `out`, as a user types it."""
    where = "" if out is None else f" --out {shlex.quote(str(out))}"
    return f"aclnngen audit{where} --repro ID"


def markdown(data: dict) -> str:
    run, cov = data["run"], data["coverage"]
    findings = [f for op in data["ops"] for f in op["findings"]]
    lines = [
        "# aclnngen audit",
        "",
        f"Claims checked: {cov['checked']} of {cov['claims'] or cov['checked']}; findings: {summary(data)}.",
        "",
        "| run | |",
        "|---|---|",
        *(f"| {k} | {v} |" for k, v in run.items()),
        "",
        "## Summary",
        "",
        "| op | source | checked | " + " | ".join(_TITLES[g].lower() for g in GROUPS) + " |",
        "|---|---|---|" + "---|" * len(GROUPS),
    ]
    for op in data["ops"]:
        counts = [sum(1 for f in op["findings"] if f["group"] == g) for g in GROUPS]
        lines.append(f"| {op['op']} | {op['source']} | {op['checked']} | " + " | ".join(map(str, counts)) + " |")
    families = sorted(
        {fam for op in data["ops"] for f in op["findings"] for fam in f["families"]}
        | {fam for op in data["ops"] for fam in op["support"]}
    )
    if families:
        lines += [
            "",
            "### By product family",
            "",
            "findings (of them new) per op and family; `-` where nothing was checked",
            "",
            "| op | " + " | ".join(families) + " |",
            "|---|" + "---|" * len(families),
        ]
        for op in data["ops"]:
            cells = []
            for fam in families:
                mine = [f for f in op["findings"] if fam in f["families"]]
                new = sum(1 for f in mine if f["status"] in ("new", "expired"))
                cells.append(f"{len(mine)} ({new})" if mine or fam in op["support"] else "-")
            lines.append(f"| {op['op']} | " + " | ".join(cells) + " |")
    for op in data["ops"]:
        partial = op.get("partial") or {}
        if not op["findings"] and not op["errors"] and not partial:
            continue
        lines += ["", f"## {op['op']}", ""]
        if partial:
            lines += ["Partial support (a dtype that works with some shapes or values only):", ""]
            lines += [
                f"- {dtype} on {family}: {what}"
                for family, found in sorted(partial.items())
                for dtype, what in sorted(found.items())
            ]
            lines.append("")
        for group in GROUPS:
            mine = [f for f in op["findings"] if f["group"] == group]
            if not mine:
                continue
            lines += [
                f"### {_TITLES[group]}",
                "",
                "| id | source | what | families | claimed | observed | status |",
                "|---|---|---|---|---|---|---|",
            ]
            for f in mine:
                lines.append(
                    f"| `{f['id']}` | {f['source']} | {_cell(f['subject'])} | {', '.join(f['families']) or '-'} | "
                    f"{_cell(f['claimed'])} | {_cell(f['observed'])} | {_cell(_status(f))} |"
                )
            lines.append("")
        if op["errors"]:
            lines += ["Not checked (the probe could not reach the library):", ""] + [f"- {e}" for e in op["errors"]]
    if data["expired"]:
        lines += [
            "",
            "## Expired baseline entries",
            "",
            "accepted until a date now past: each gates like a new finding until it is fixed or accepted again",
            "",
        ]
        lines += [
            f"- `{f['id']}` expired on {f['baseline']['expires']} ({f['baseline']['reason']})"
            for f in findings
            if f["status"] == "expired"
        ]
    if data["stale_baseline"]:
        lines += ["", "## Stale baseline entries", ""] + [f"- `{i}` matches no finding" for i in data["stale_baseline"]]
    lines += ["", f"Reproduce a finding: `{data['repro_command']}` prints a script that shows it.", ""]
    return "\n".join(lines)


def summary(data: dict) -> str:
    """ "K new, R recorded, J accepted" (and E expired), as the report and the command say it."""
    text = f"{len(data['new'])} new, {len(data['recorded'])} recorded, {len(data['accepted'])} accepted"
    return text + (f", {len(data['expired'])} expired" if data["expired"] else "")


def _title(kind: str) -> str:
    """The defect kind as the op page titles it, with its spec name where the two differ."""
    title = defect_kinds.BY_NAME[kind].title if kind in defect_kinds.BY_NAME else kind
    return kind if title.lower() == kind else f"{title}: {kind}"


def _status(f: dict) -> str:
    """A finding's status cell: new; recorded, with the spec's entry (whole); accepted or expired,
    with the baseline's date and reason."""
    if f["status"] == "recorded":
        entry = f["recorded"]
        if f["check"] == "defect":  # the entry itself: its note is the observed cell
            return f"recorded: defects #{entry['defect']} ({_title(entry['kind'])})"
        return f"recorded: defects #{entry['defect']} ({_title(entry['kind'])}): {entry['note']}"
    if f["status"] in ("accepted", "expired"):
        entry = f["baseline"]
        verb = "accepted until" if f["status"] == "accepted" else "expired on"
        return f"{f['status']}: {verb} {entry['expires']} ({entry['reason']})"
    return "new"


def _cell(text: str) -> str:
    """A table cell, whole: only what would break the table is escaped."""
    return str(text).replace("|", "\\|").replace("\n", " ")


def pictures(data: dict, out: Path) -> list[Path]:
    """One PNG per op: families x dtypes, each cell coloured by its OpInfo set. Needs matplotlib."""
    import matplotlib  # deferred: an optional dependency (the `audit` extra)

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.colors import ListedColormap

    colours = ListedColormap(["#2e7d32", "#c62828", "#f9a825", "#e0e0e0"])
    written = []
    for op in data["ops"]:
        support = op["support"]
        if not support:
            continue
        families = list(support)
        dtypes = sorted({d for row in support.values() for d in row})
        grid = [[SETS.index(support[f].get(d, SETS[3])) for d in dtypes] for f in families]
        fig, ax = plt.subplots(figsize=(1 + 0.45 * len(dtypes), 1 + 0.4 * len(families)))
        ax.imshow(grid, cmap=colours, vmin=0, vmax=3, aspect="auto")
        ax.set_xticks(range(len(dtypes)), dtypes, rotation=60, ha="right", fontsize=7)
        ax.set_yticks(range(len(families)), families, fontsize=7)
        ax.set_title(
            f"{op['op']} ({op['source']}): "
            + ", ".join(f"{c}={s}" for c, s in zip(("green", "red", "yellow", "grey"), SETS)),
            fontsize=6,
        )
        fig.tight_layout()
        path = out / f"{op['op']}-support.png"
        fig.savefig(path, dpi=90)
        plt.close(fig)
        written.append(path)
    return written


def error_pictures(data: dict, out: Path) -> list[Path]:
    """One PNG per op audited with numerics: the distribution of the opmath reference's relative
    error against the float64 golden, one line per dtype. Needs matplotlib."""
    import matplotlib  # deferred: an optional dependency (the `audit` extra)

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    edges = data["histogram_edges_log10"]
    written = []
    for op in data["ops"]:
        if not op.get("error_histogram"):
            continue
        fig, ax = plt.subplots(figsize=(5, 3))
        for dtype, counts in sorted(op["error_histogram"].items()):
            ax.step(edges[:-1], counts, where="post", label=dtype)
        ax.set_yscale("symlog")
        ax.set_xlabel("log10 relative error, opmath against float64 golden")
        ax.set_ylabel("elements")
        ax.set_title(f"{op['op']}: error distribution on benign data", fontsize=8)
        ax.legend(fontsize=6)
        fig.tight_layout()
        path = out / f"{op['op']}-errors.png"
        fig.savefig(path, dpi=90)
        plt.close(fig)
        written.append(path)
    return written


def write(data: dict, out: Path) -> list[Path]:
    """audit.json, then audit.md, each atomically, under the report folder's lock."""
    out.mkdir(parents=True, exist_ok=True)
    with locked(out, what="report folder"):
        write_atomic(out / "audit.json", json.dumps(data, indent=1, sort_keys=True) + "\n", what="report")
        write_atomic(out / "audit.md", markdown(data), what="report")
    return [out / "audit.md", out / "audit.json"]
