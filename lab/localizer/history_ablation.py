"""The history ablation of the learned localizer: two `train-localizer` reports over the same repositories,
queries and seeded folds, one on features mined with `localizer.history_features=true` and one without.

    python -m lab.localizer.history_ablation --with WITH/report.json --without WITHOUT/report.json \\
        --out lab/results/localizer/history_ablation.json [--note TEXT]

Refuses reports of other seeds, folds or labelled commits (then the rows would not be comparable). The
held-out query counts may still differ a little: a query none of whose candidate lists reaches any file
without history is not scored (train.py's metrics skip it), and with history the votes may give it
candidates; each row says its count. Writes
both reports, a summary (fixed fusion and learned metrics per level, and the learned deltas) and the per-
repository learned deltas; prints the summary as the Markdown table docs/localizer.md shows.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

METRICS = ("Acc@1", "Acc@5", "Acc@10", "MRR")


class AblationError(ValueError):
    """The two reports were not trained on the same repositories, folds and labelled commits."""


def check_comparable(with_history: dict[str, Any], without: dict[str, Any]) -> None:
    if with_history["folds"] != without["folds"] or with_history["seed"] != without["seed"]:
        raise AblationError("the reports' seeds or repository folds differ: train both on the same repositories "
                            "with the same --seed")
    if with_history["corpus"]["repositories"] != without["corpus"]["repositories"]:
        raise AblationError("the reports were trained on other repositories or labelled commits")


def summarize(with_history: dict[str, Any], without: dict[str, Any]) -> dict[str, Any]:
    """Per level: both rows' fixed-fusion Acc@5 and learned metrics, the learned deltas, and per repository."""
    check_comparable(with_history, without)
    out: dict[str, Any] = {"repositories": len(with_history["corpus"]["repositories"]), "levels": {}}
    for level, data in with_history["levels"].items():
        base = without["levels"][level]
        rows = {name: {"fusion_Acc@5": report["levels"][level]["fusion"]["Acc@5"],
                       **{m: report["levels"][level]["learned"][m] for m in METRICS},
                       "queries": report["levels"][level]["learned"]["queries"]}
                for name, report in (("without", without), ("with", with_history))}
        delta = {m: round(rows["with"][m] - rows["without"][m], 2) for m in (*METRICS, "fusion_Acc@5")}
        per_repo = {repo: {m: round(data["per_repo"][repo]["learned"][m] - base["per_repo"][repo]["learned"][m], 2)
                           for m in METRICS} for repo in sorted(data["per_repo"])}
        out["levels"][level] = {**rows, "delta": delta, "per_repo_delta": per_repo,
                                "repositories_better_at_5": sum(1 for d in per_repo.values() if d["Acc@5"] > 0),
                                "repositories_worse_at_5": sum(1 for d in per_repo.values() if d["Acc@5"] < 0)}
    return out


def table(summary: dict[str, Any]) -> str:
    lines = ["| level | features | fixed fusion Acc@5 | learned Acc@1 | learned Acc@5 | learned Acc@10 | learned MRR "
             "| queries |", "|---|---|---|---|---|---|---|---|"]
    for level, rows in summary["levels"].items():
        for name, label in (("without", "without history"), ("with", "+ file history votes and priors")):
            r = rows[name]
            lines.append(f"| {level} | {label} | {r['fusion_Acc@5']:.1f} | " +
                         " | ".join(f"{r[m]:.1f}" for m in METRICS) + f" | {r['queries']} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--with", dest="with_history", required=True, help="train-localizer report, history features")
    parser.add_argument("--without", required=True, help="train-localizer report, the same corpus without them")
    parser.add_argument("--out", required=True)
    parser.add_argument("--note", default="")
    args = parser.parse_args(argv)
    with_history, without = (json.loads(Path(p).read_text()) for p in (args.with_history, args.without))
    try:
        summary = summarize(with_history, without)
    except AblationError as exc:
        parser.exit(2, f"error: {exc}\n")
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps({"note": args.note, "summary": summary, "with": with_history,
                                          "without": without}, indent=1) + "\n")
    print(table(summary))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
