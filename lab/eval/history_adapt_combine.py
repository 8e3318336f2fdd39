"""Pools `lab.eval.history_adapt` reports run on disjoint instance sets (e.g. one process per repository
group) into one: per-repository results kept, overall results re-weighted by each repository's counts.

    python -m lab.eval.history_adapt_combine --out FILE.json REPORT.json [REPORT.json ...]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from jobs.eval.tables import level_table


def pooled(by_repo: dict[str, dict[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for level in ("file", "function"):
        parts = [r[level] for r in by_repo.values() if r[level].get("n")]
        n = sum(p["n"] for p in parts)
        metrics = {k for p in parts for k in p if k != "n"}
        out[level] = {"n": n} | {k: sum(p[k] * p["n"] for p in parts) / n if n else 0.0 for k in sorted(metrics)}
    return out


def combine(reports: list[dict[str, Any]]) -> dict[str, Any]:
    rows: dict[str, Any] = {}
    for name in reports[0]["rows"]:
        by_repo = {repo: result for report in reports for repo, result in report["rows"][name]["by_repo"].items()}
        rows[name] = {"overall": pooled(by_repo), "by_repo": dict(sorted(by_repo.items()))}
    return {"parts": [{k: v for k, v in r.items() if k != "rows"} for r in reports], "rows": rows}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", required=True)
    parser.add_argument("reports", nargs="+")
    args = parser.parse_args(argv)
    report = combine([json.loads(Path(p).read_text()) for p in args.reports])
    Path(args.out).write_text(json.dumps(report, indent=1) + "\n")
    for name, result in report["rows"].items():
        print(f"\n## {name}\n{level_table(result)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
