"""MODEL_CARD.md of a trained localizer, written from `train-localizer`'s report (nothing typed by hand)."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

from jobs.localizer.train import METRIC_KS

COLUMNS = (*(f"Acc@{k}" for k in METRIC_KS), "NDCG@10", "Recall@50", "MRR")


def _row(name: str, metrics: dict) -> str:
    return f"| {name} | " + " | ".join(f"{metrics[c]:.1f}" for c in COLUMNS) + f" | {metrics['queries']} |"


def model_card(report: dict, command: str, corpus_counts: dict[str, int]) -> str:
    corpus = report["corpus"]
    counted = Counter((report.get("languages") or {}).values())
    languages = ", ".join(f"{lang} {n}" for lang, n in sorted(counted.items(), key=lambda i: (-i[1], i[0]))) \
        or "Python"
    lines = ["# Learned localizer (files, then functions)", "",
             "Two LightGBM LambdaRank models (`files.txt`, `functions.txt`, LightGBM text format; `meta.json` names "
             f"the feature schema, version {report['schema_version']}) that rank the candidates of "
             "`serving/localizer` (see docs/localizer.md). Trained on issue-like commits of public "
             f"repositories ({languages}): the commit message is the query, the non-test files and outer functions "
             "it changed (at its parent) are the labels. **No SWE-bench repository (astropy, django, matplotlib, "
             "seaborn, flask, requests, xarray, pylint, pytest, scikit-learn, sphinx, sympy) nor any of their "
             "organisations, no Multi-SWE-bench repository (its 39, by name) is in the corpus, and no dev-split "
             "label trained anything** (tests/jobs/localizer/test_corpus_guard.py).", "",
             "## How it was made", "", f"```\n{command}\n```", "",
             f"Seed {report['seed']}; parameters: `{json.dumps(report['params'])}`.", "",
             "## Held-out metrics (leave-repositories-out)", "",
             f"Repositories split into {len(report['folds'])} seeded folds; each repository is ranked by models "
             "trained on the other folds only. `fixed fusion` is the reciprocal-rank fusion of the same cheap lists "
             "(with the test-file damping and named-path boost of today's localizer) on the same candidates. "
             "Acc@k as LocAgent (all gold in the top k, or the top k all gold). Queries whose gold is missing from "
             "their sampled snapshot are left out.", ""]
    for level in ("files", "functions"):
        m = report["levels"][level]
        lines += [f"### {level}", "", "| ranking | " + " | ".join(COLUMNS) + " | queries |",
                  "|---|" + "---|" * (len(COLUMNS) + 1), _row("fixed fusion", m["fusion"]), _row("learned", m["learned"]), ""]
    by_language = {level: report["levels"][level].get("by_language") or {} for level in ("files", "functions")}
    if by_language["files"]:
        lines += ["### By language (file Acc@5 / MRR, function Acc@10 / MRR: fixed fusion -> learned)", "",
                  "| language | repositories | queries | file Acc@5 | file MRR | function Acc@10 | function MRR |",
                  "|---|---|---|---|---|---|---|"]
        for language, f in by_language["files"].items():
            g = by_language["functions"].get(language, f)
            lines.append(f"| {language} | {counted[language]} | {f['learned']['queries']} | "
                         f"{f['fusion']['Acc@5']:.1f} -> {f['learned']['Acc@5']:.1f} | "
                         f"{f['fusion']['MRR']:.1f} -> {f['learned']['MRR']:.1f} | "
                         f"{g['fusion']['Acc@10']:.1f} -> {g['learned']['Acc@10']:.1f} | "
                         f"{g['fusion']['MRR']:.1f} -> {g['learned']['MRR']:.1f} |")
        lines.append("")
    lines += ["### Per repository (file Acc@5 / function Acc@10: fixed fusion -> learned)", "",
              "| repository | corpus commits | trained on | file Acc@5 | function Acc@10 |", "|---|---|---|---|---|"]
    files, funcs = report["levels"]["files"]["per_repo"], report["levels"]["functions"]["per_repo"]
    for repo in sorted(corpus_counts, key=str.lower):
        used = corpus["repositories"].get(repo, 0)
        if repo in files:
            f, g = files[repo], funcs[repo]
            lines.append(f"| {repo} | {corpus_counts[repo]} | {used} | {f['fusion']['Acc@5']:.1f} -> "
                         f"{f['learned']['Acc@5']:.1f} | {g['fusion']['Acc@10']:.1f} -> {g['learned']['Acc@10']:.1f} |")
        else:
            lines.append(f"| {repo} | {corpus_counts[repo]} | 0 (features not mined) | | |")
    s = corpus["staleness"]
    lines += ["", "## Snapshots and staleness", "",
              f"Features come from sampled snapshots: each labelled commit is answered on the parent of the oldest "
              f"commit of its group (at most `localizer_mine.snapshot_every` commits, none more than "
              f"`localizer_mine.max_staleness` first-parent commits later), so a snapshot is never later than a commit's "
              f"parent. Staleness in first-parent commits: mean {s['mean']:.1f}, median {s['p50']:.0f}, "
              f"p90 {s['p90']:.0f}, max {s['max']}. {corpus['queries_without_findable_gold_file']} of "
              f"{corpus['queries']} queries had no gold file in their snapshot (a file added after it).", "",
              "Snapshot commits per repository:", ""]
    for repo, snaps in sorted(corpus["snapshots"].items(), key=lambda item: item[0].lower()):
        lines.append(f"- {repo} ({len(snaps)}): " + ", ".join(sha[:10] for sha in snaps))
    lines += ["", "## Feature importances (gain, final models)", ""]
    for level in ("files", "functions"):
        top = list(report["levels"][level]["importance_gain"].items())
        total = sum(v for _, v in top) or 1.0
        lines.append(f"- {level}: " + ", ".join(f"{k} {100 * v / total:.1f}%" for k, v in top[:15] if v > 0))
    with_history = corpus.get("queries_with_history", 0)
    history_line = (f"- History features: file votes and priors as of each snapshot for {with_history} of "
                    f"{corpus['queries']} queries (`localizer.history_features`); serve this model with them on, "
                    "else it sees NaN where it learned values." if with_history else
                    "- History votes and priors are in the schema but absent (NaN) in this corpus: the models never saw them.")
    lines += ["", "## Limits", "", history_line,
              "- Traceback-frame features almost never fire in commit messages, so their weight is not learned.",
              "- The corpus's queries are commit messages and PR titles/bodies, shorter and more code-aware than "
              "bug reports; see docs/localizer.md for how this transfers to the SWE-bench dev split.", ""]
    return "\n".join(lines)


def write_card(report_file: str | Path, out: str | Path, command: str, corpus_dir: str | Path) -> Path:
    report = json.loads(Path(report_file).read_text())
    counts = {}
    for file in Path(corpus_dir).glob("*.jsonl"):
        with file.open() as fh:
            first = fh.readline()
            n = 1 + sum(1 for _ in fh) if first.strip() else 0
        counts[json.loads(first)["repo"] if first.strip() else file.stem.replace("+", "/")] = n
    target = Path(out) / "MODEL_CARD.md"
    target.write_text(model_card(report, command, counts))
    return target
