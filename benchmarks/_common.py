"""Shared by the benchmark scripts: the header (machine, date) and interleaved timing.

Interleaved: the variants run in turns (round 1: A, B, C; round 2: A, B, C; ...), so a change in
the machine's load hits all of them alike; each variant's figure is its best round (the least
disturbed), and ratios are taken between figures of the same run."""

from __future__ import annotations

import datetime
import os
import platform
import time
from typing import Callable, Mapping


def header(title: str) -> str:
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo", encoding="ascii", errors="replace") as info:
            for line in info:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    try:
        load = "load average {:.2f} {:.2f} {:.2f} (1, 5, 15 min)".format(*os.getloadavg())
    except OSError:
        load = "load average unknown"
    return (
        f"== {title}\n"
        f"machine: {cpu}, {os.cpu_count()} cores, {platform.system()} {platform.release()}, "
        f"Python {platform.python_version()}\n"
        f"date: {now}; {load}"
    )


def interleaved(variants: Mapping[str, Callable[[], object]], *, calls: int, rounds: int) -> dict[str, float]:
    """Seconds per call of each variant: its best round of `calls` calls, the variants taking
    turns round by round."""
    best = {name: float("inf") for name in variants}
    for fn in variants.values():  # warm-up: first-use costs stay out of the figures
        for _ in range(max(10, calls // 10)):
            fn()
    for _ in range(rounds):
        for name, fn in variants.items():
            start = time.perf_counter()
            for _ in range(calls):
                fn()
            best[name] = min(best[name], (time.perf_counter() - start) / calls)
    return best


def row(name: str, value: str, note: str = "") -> str:
    return f"  {name:<44} {value:>14}  {note}".rstrip()
