"""Cold `semantica query --no-daemon` (a fresh process: interpreter, imports, loads, one answer), a baseline
checkout against this one in the same run, interleaved (a benchmark, not a test).

    python -m jobs.bench cold-query --index-root DIR --cache-dir DIR --repo NAME [--baseline CHECKOUT] \\
        [--query TEXT ...] [--runs 4] [--out FILE]

Every run of every query runs the baseline's CLI and this checkout's CLI one after the other (the order alternates
between runs) over the same index, records each wall and the load average beside it, and checks that both
printed the same answer (hits, files, functions, context; timings and freshness aside). Reported per query and
side: the median wall, and new / old, the figure that survives a shared machine. Without `--baseline` only this
checkout runs.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from jobs.bench.stats import write_result

REPO_ROOT = Path(__file__).resolve().parents[2]
DEFAULT_QUERIES = ("LogCaptureFixture", "monkeypatch", "pytest_collection_modifyitems")
DEFAULT_RUNS = 4
ANSWER_FIELDS = ("hits", "files", "functions", "context", "degraded", "graph")  # what must not change


def load_average() -> float:
    return round(os.getloadavg()[0], 2)


def cold_run(checkout: Path, query: str, args: argparse.Namespace) -> dict[str, Any]:
    """One fresh CLI process run from `checkout` (its own code on the path); its wall and answer."""
    env = {**os.environ, "PYTHONPATH": str(checkout), "SEMANTICA__DAEMON__ENABLED": "false",
           "TOKENIZERS_PARALLELISM": "false"}
    command = [sys.executable, "-m", "jobs.cli", "query", query, "--repo", args.repo, "--json", "--no-daemon",
               "--index-root", args.index_root, "--set", f"paths.cache_dir={args.cache_dir}"]
    load = load_average()
    start = time.perf_counter()
    done = subprocess.run(command, cwd=checkout, env=env, capture_output=True, text=True, check=True)
    wall = time.perf_counter() - start
    answer = json.loads(done.stdout)
    return {"wall_s": round(wall, 3), "load": load, "answer": {k: answer.get(k) for k in ANSWER_FIELDS},
            "timings_ms": answer.get("timings_ms", {})}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--index-root", required=True)
    parser.add_argument("--cache-dir", required=True)
    parser.add_argument("--repo", required=True)
    parser.add_argument("--baseline", type=Path, help="checkout of the old code (default: only this one runs)")
    parser.add_argument("--query", action="append", default=[], help=f"default: {', '.join(DEFAULT_QUERIES)}")
    parser.add_argument("--runs", type=int, default=DEFAULT_RUNS)
    parser.add_argument("--out", type=Path, default=REPO_ROOT / "bench" / "results" / "cold_query.json")
    args = parser.parse_args(argv)
    sides = {"new": REPO_ROOT, **({"old": args.baseline.resolve()} if args.baseline else {})}
    result: dict[str, Any] = {"repo": args.repo, "runs": args.runs, "queries": {}}
    for query in args.query or list(DEFAULT_QUERIES):
        walls: dict[str, list[float]] = {side: [] for side in sides}
        loads: list[float] = []
        identical = 0
        for run in range(args.runs):
            order = list(sides) if run % 2 else list(reversed(sides))
            answers = {}
            for side in order:
                measured = cold_run(sides[side], query, args)
                walls[side].append(measured["wall_s"])
                loads.append(measured["load"])
                answers[side] = measured["answer"]
            identical += int(len({json.dumps(a, sort_keys=True) for a in answers.values()}) == 1)
        row: dict[str, Any] = {side: {"median_s": round(statistics.median(w), 3), "walls_s": w}
                               for side, w in walls.items()}
        row["load"] = [min(loads), max(loads)]
        if "old" in sides:
            row["new_over_old"] = round(row["new"]["median_s"] / row["old"]["median_s"], 3)
            row["identical_answers"] = f"{identical}/{args.runs}"
        result["queries"][query] = row
        print(json.dumps({query: row}), flush=True)
        write_result(result, args.out)
    return 0

