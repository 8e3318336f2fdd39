"""The first query of a fresh install, with and without the install-time ONNX export (a benchmark).

    python -m lab.bench.first_query --index-root DIR --cache-dir DIR --repo NAME [--query TEXT] [--pairs 2]

Each pair runs `semantica query --no-daemon` in a fresh process twice, order alternating: once with an empty
`encoder.export_dir` (a fresh install before this change: the query exports, importing torch) and once
after `python -m semantica.runtime.export_encoders` filled it (what `make install` now runs; its own time is reported as
the install step). The index must have been built with this machine's export (exports are deterministic:
the same sha256 in any directory). The load average is recorded beside every run: the machine may be shared.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[2]
RESULTS = REPO_ROOT / "lab" / "results" / "fast" / "first_query.json"


def timed(command: list[str]) -> dict[str, Any]:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
    load = round(os.getloadavg()[0], 2)
    start = time.perf_counter()
    subprocess.run(command, cwd=REPO_ROOT, env=env, check=True, capture_output=True)
    return {"wall_s": round(time.perf_counter() - start, 2), "load_before": load}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--index-root", required=True)
    parser.add_argument("--cache-dir", required=True)
    parser.add_argument("--repo", required=True)
    parser.add_argument("--query", default="getfixturevalue")
    parser.add_argument("--pairs", type=int, default=2)
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    query = [sys.executable, "-m", "jobs.cli", "query", args.query, "--repo", args.repo, "--json", "--no-daemon",
             "--index-root", args.index_root, "--set", f"paths.cache_dir={args.cache_dir}"]
    runs: dict[str, list[dict[str, Any]]] = {"fresh_no_export": [], "after_install_export": [], "install_export_step": []}
    with tempfile.TemporaryDirectory(prefix="first-query-") as work:
        for number in range(args.pairs):
            fresh, installed = Path(work) / f"fresh{number}", Path(work) / f"installed{number}"
            runs["install_export_step"].append(timed([sys.executable, "-m", "semantica.runtime.export_encoders", "--set",
                                                      f"encoder.export_dir={installed}"]))
            sides = [("fresh_no_export", fresh), ("after_install_export", installed)]
            for name, directory in sides if number % 2 == 0 else sides[::-1]:
                runs[name].append(timed([*query, "--set", f"encoder.export_dir={directory}"]))
    medians = {name: statistics.median(r["wall_s"] for r in rows) for name, rows in runs.items()}
    out = {"command": "python -m lab.bench.first_query " + " ".join(sys.argv[1:] if argv is None else argv),
           "cpus": os.cpu_count(), "runs": runs, "median_s": medians,
           "after_over_fresh": round(medians["after_install_export"] / medians["fresh_no_export"], 3)}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(out, indent=1) + "\n")
    print(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
