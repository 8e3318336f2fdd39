"""Which localizer rankers for a polyglot corpus: one pooled model, one pooled model with a language feature, or one
model per language family. Chosen on the corpus only (leave-repositories-out), never on a benchmark split.

Repositories are cut into `--folds` folds, each language family spread over every fold (seeded); a fold's
repositories are ranked by models trained on the other folds only. Variants, per level (files, functions):
- `pooled`: every training repository, the shipped feature schema;
- `pooled+language`: the same rows plus one 0/1 column per non-Python family (the candidate's language; a study
  column: the shipped schema has none);
- `per-family`: trained on the training repositories of the held-out repository's own family only;
- `python-only`: trained on the Python repositories only (today's recipe), applied to every family.
Prints, per fold and family, file Acc@5 / MRR and function Acc@10 / MRR, and which variant each fold chose.

    python -m lab.localizer.polyglot_loro --features FEAT --corpus bench/corpus --out lab/results/localizer/polyglot_loro.json \
        --set localizer_train.num_threads=1
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from pathlib import Path

import numpy as np
import polars as pl

from jobs.localizer.corpus import load_corpus
from jobs.localizer.fit import fit_ranker
from jobs.localizer.train import LEVELS, load_features, ranking_metrics
from semantica.config.training import load_train_config
from semantica.languages import language_of

FAMILIES = {"python": "python", "go": "go", "java": "java", "rust": "rust", "javascript": "js", "typescript": "js",
            "tsx": "js"}
LANGUAGE_COLUMNS = ("lang_go", "lang_java", "lang_js", "lang_rust")
VARIANTS = ("python-only", "pooled", "pooled+language", "per-family")
CHOICE_METRIC = {"files": "Acc@5", "functions": "Acc@10"}


def family_of_path(path: str) -> str:
    return FAMILIES.get(language_of(path), "other")


def repo_families(corpus_dir: str) -> dict[str, str]:
    """A repository's family: the language of most of its labelled files."""
    counts: dict[str, Counter] = {}
    for row in load_corpus(corpus_dir):
        counts.setdefault(row.repo, Counter()).update(family_of_path(p) for p in row.files)
    return {repo: c.most_common(1)[0][0] for repo, c in counts.items()}


def stratified_folds(families: dict[str, str], repos: list[str], folds: int, seed: int) -> list[list[str]]:
    rng = np.random.default_rng(seed)
    out: list[list[str]] = [[] for _ in range(folds)]
    start = 0
    for family in sorted({families[r] for r in repos}):
        members = sorted(r for r in repos if families[r] == family)
        rng.shuffle(members)
        for i, repo in enumerate(members):
            out[(start + i) % folds].append(repo)
        start += len(members)
    return [sorted(f) for f in out]


def with_language(frame: pl.DataFrame) -> pl.DataFrame:
    path = pl.col("key").str.split("::").list.first()
    family = path.map_elements(family_of_path, return_dtype=pl.Utf8)
    return frame.with_columns(family.alias("_family")).with_columns(
        *[(pl.col("_family") == name.removeprefix("lang_")).cast(pl.Float32).alias(name) for name in LANGUAGE_COLUMNS]
    ).drop("_family")


def predict(rows: pl.DataFrame, test: pl.DataFrame, cols: tuple[str, ...], depth: int, config, seed: int) -> np.ndarray:  # noqa: ANN001
    """Scores of `test` by a model fitted on `rows`; the fixed fusion's order when there is nothing to fit on."""
    if rows.filter(pl.col("label") > 0).is_empty():
        return test["fusion"].to_numpy().astype(np.float64)
    return fit_ranker(rows, cols, depth, config, seed).predict(test.select(cols).to_numpy())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--features", required=True)
    parser.add_argument("--corpus", default="bench/corpus")
    parser.add_argument("--folds", type=int, default=4)
    parser.add_argument("--seed", type=int, default=13)
    parser.add_argument("--out", required=True)
    parser.add_argument("--set", action="append", default=[], metavar="localizer_train.FIELD=VALUE")
    args = parser.parse_args(argv)
    config = load_train_config(None, args.set).localizer_train
    data, queries = load_features(args.features)
    families = repo_families(args.corpus)
    repos = sorted(queries["repo"].unique().to_list())
    folds = stratified_folds(families, repos, args.folds, args.seed)
    report: dict = {"folds": folds, "families": {r: families[r] for r in repos}, "seed": args.seed, "levels": {}}
    for level, (features, _, _, depth_field) in LEVELS.items():
        depth = getattr(config, depth_field)
        frame = with_language(data[level].frame).with_columns(
            pl.col("repo").replace_strict(families, default="other").alias("family"))
        scores = {v: np.zeros(len(frame)) for v in VARIANTS}
        for n, held in enumerate(folds):
            train = frame.filter(~pl.col("repo").is_in(held))
            test_mask = frame["repo"].is_in(held).to_numpy()
            test = frame.filter(pl.col("repo").is_in(held))
            fits = {"python-only": (train.filter(pl.col("family") == "python"), features),
                    "pooled": (train, features),
                    "pooled+language": (train, (*features, *LANGUAGE_COLUMNS))}
            for variant, (rows, cols) in fits.items():
                scores[variant][test_mask] = predict(rows, test, cols, depth, config, args.seed)
            per_family = np.zeros(int(test_mask.sum()))
            for family in sorted(set(test["family"].to_list())):
                mask = (test["family"] == family).to_numpy()
                per_family[mask] = predict(train.filter(pl.col("family") == family),
                                           test.filter(pl.col("family") == family), features, depth, config, args.seed)
            scores["per-family"][test_mask] = per_family
            print(f"{level} fold {n + 1}/{len(folds)} done", flush=True)
        gold = data[level].gold
        table: dict = {}
        for n, held in enumerate(folds):
            for family in sorted({families[r] for r in held}):
                repos_here = [r for r in held if families[r] == family]
                mask = frame["repo"].is_in(repos_here).to_numpy()
                sub = frame.filter(pl.col("repo").is_in(repos_here))
                row = {v: ranking_metrics(sub, scores[v][mask], gold) for v in VARIANTS}
                row["fusion"] = ranking_metrics(sub, sub["fusion"].to_numpy().astype(np.float64), gold)
                table.setdefault(family, {})[f"fold{n + 1}"] = row
        for family, by_fold in table.items():
            mask = frame["family"].eq(family).to_numpy()
            sub = frame.filter(pl.col("family") == family)
            by_fold["all"] = {v: ranking_metrics(sub, scores[v][mask], gold) for v in VARIANTS} | {
                "fusion": ranking_metrics(sub, sub["fusion"].to_numpy().astype(np.float64), gold)}
        report["levels"][level] = table
        metric = CHOICE_METRIC[level]
        print(f"\n{level}: {metric} / MRR (out of fold)")
        print("family fold       " + "  ".join(f"{v:>16s}" for v in ("fusion", *VARIANTS)) + "  chosen")
        for family, by_fold in sorted(table.items()):
            for fold, row in by_fold.items():
                best = max(VARIANTS, key=lambda v: (row[v][metric], row[v]["MRR"]))
                print(f"{family:6s} {fold:5s} " + "  ".join(
                    f"{row[v][metric]:6.1f} / {row[v]['MRR']:5.1f}" for v in ("fusion", *VARIANTS))
                      + f"  {best} ({row['fusion']['queries']} q)")
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(report, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
