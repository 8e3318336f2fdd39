"""`semantica query` end to end, wall clock per CLI process: in-process (cold, `--no-daemon`), the first
query that starts the daemon, and warm queries answered by the daemon.

    python -m lab.bench.cli_daemon --index-root DIR --cache-dir DIR --repo psf/requests [--runs 10]

Each figure is a fresh `python -m jobs.cli query ...` process (interpreter start and imports included),
the way a user or an agent calls it. The queries rotate through distinct texts, so the daemon's
response cache never answers. Results: lab/results/cli_daemon.json (and the docs/results.md table).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from jobs.bench.ratios import REQUESTS_QUERIES, summary
from jobs.bench.stats import report_result

REPO_ROOT = Path(__file__).resolve().parents[2]
RESULTS = REPO_ROOT / "lab" / "results" / "cli_daemon.json"
QUERIES = [q for qs in REQUESTS_QUERIES.values() for q in qs]


def _env() -> dict[str, str]:
    return {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false",
            "SEMANTICA__DAEMON__ENABLED": "true", "PYTHONPATH": str(REPO_ROOT)}


def _run(args: list[str]) -> float:
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "jobs.cli", *args], cwd=REPO_ROOT, env=_env(), capture_output=True,
                          text=True)
    wall = (time.perf_counter() - start) * 1000
    if done.returncode != 0:
        raise RuntimeError(f"{args[:2]} failed: {done.stderr.strip()[-500:]}")
    return wall


def bench(common: list[str], repo: str, runs: int, cold_runs: int) -> dict[str, Any]:
    query = lambda i: ["query", QUERIES[i % len(QUERIES)], "--repo", repo, "--json", *common]  # noqa: E731
    _run(["daemon", "stop", *common])
    in_process = [_run([*query(i), "--no-daemon"]) for i in range(cold_runs)]
    first = []
    for i in range(cold_runs):  # stop, then a query that starts the daemon and waits for its answer
        _run(["daemon", "stop", *common])
        first.append(_run(query(i)))
    warm = [_run(query(i)) for i in range(runs)]
    status = json.loads(subprocess.run([sys.executable, "-m", "jobs.cli", "daemon", "status", "--json", *common],
                                       cwd=REPO_ROOT, env=_env(), capture_output=True, text=True).stdout)
    floor = [_run(["daemon", "--help"]) for _ in range(min(runs, 5))]  # interpreter + CLI imports, nothing loaded
    _run(["daemon", "stop", *common])
    daemon = next((s for s in status if s.get("current")), {})
    return {
        "repo": repo, "queries": "distinct per run (jobs.bench.ratios.REQUESTS_QUERIES)",
        "cold_in_process": {"wall_ms": [round(w) for w in in_process], **summary(in_process)},
        "first_query_starts_daemon": {"wall_ms": [round(w) for w in first], **summary(first)},
        "warm_daemon": {"wall_ms": [round(w) for w in warm], **summary(warm)},
        "floor_cli_start": {"wall_ms": [round(w) for w in floor], **summary(floor)},
        "speedup_warm_vs_cold_p50": round(statistics.median(in_process) / statistics.median(warm), 1),
        "daemon_max_rss_mb": daemon.get("max_rss_mb"),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m lab.bench.cli_daemon", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--index-root", required=True)
    parser.add_argument("--cache-dir", required=True)
    parser.add_argument("--repo", default="psf/requests")
    parser.add_argument("--runs", type=int, default=10, help="warm queries")
    parser.add_argument("--cold-runs", type=int, default=5, help="in-process and daemon-start queries")
    parser.add_argument("--out", default=str(RESULTS))
    args = parser.parse_args(argv)
    common = ["--index-root", args.index_root, "--set", f"paths.cache_dir={args.cache_dir}"]
    result = {"machine": {"cpus": os.cpu_count(), "python": platform.python_version(),
                          "load_avg_1m_at_start": round(os.getloadavg()[0], 2)},
              **bench(common, args.repo, args.runs, args.cold_runs)}
    result["machine"]["load_avg_1m_at_end"] = round(os.getloadavg()[0], 2)
    report_result(result, Path(args.out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
