"""Latency statistics shared by the benchmarks (one definition of a percentile for every bench), and how
they write their results."""

from __future__ import annotations

import json
import os
import platform
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

PERCENTILE_99 = 0.99
RESULTS_DIR = Path(__file__).resolve().parents[2] / "bench" / "results"


def machine() -> dict[str, Any]:
    """Where a bench ran and how loaded the machine was when it started (the numbers are read beside it)."""
    return {"platform": platform.platform(), "python": platform.python_version(), "cpus": os.cpu_count(),
            "load_avg_at_start": os.getloadavg()}


def percentile(values: Sequence[float], q: float) -> float:
    """Nearest-rank percentile of `values` at `q` in [0, 1]; 0.0 for no values (a bench that timed nothing
    reports zeros rather than failing after the work it did)."""
    if not 0.0 <= q <= 1.0:
        raise ValueError(f"percentile q must be within [0, 1], got {q}")
    ordered = sorted(values)
    if not ordered:
        return 0.0
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def run_clients(worker: Callable[[int], None], clients: int) -> float:
    """`worker(0)` .. `worker(clients - 1)` on as many threads at once (load from concurrent clients); the wall
    seconds until the last one ends."""
    start = time.perf_counter()
    threads = [threading.Thread(target=worker, args=(n,)) for n in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return time.perf_counter() - start


def write_result(result: dict[str, Any], path: Path) -> None:
    """A bench's JSON result, written after each phase: a run cut short still leaves what it measured."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(result, indent=1) + "\n")


def report_result(result: dict[str, Any], path: Path) -> None:
    """`write_result`, then the same JSON on stdout: a bench run by hand shows what it wrote."""
    write_result(result, path)
    print(json.dumps(result, indent=2))
