"""Training and measuring the LightGBM learning-to-rank model on mined hits, for the `ltr` plug-in
(lab/plugins/ltr.py): `python -m lab.train.ltr --data MINED [MINED ...] --out MODEL_DIR [--holdout REPO] [--cv]`.

The model is a LightGBM LambdaRank ranker over `lab.plugins.ltr.LTR_FEATURE_NAMES` (the 18 fusion
features plus context features derived from the query and the hit); each mined query is one group.
It is judged against the order it would replace, the fused order, on the same candidates:

- NDCG@k with graded gains (2^label - 1), normalised by the best order of that query's candidates;
- MRR: 1 / rank of the first hit with label > 0.

Queries without any relevant candidate carry no ranking signal: they are left out of training and
of the metrics (and counted). Held-out numbers come from queries the model never saw: `--holdout
GROUP` keeps repositories out of training, `--cv` adds leave-one-repository-out cross-validation.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from jobs.cli import add_common, add_training, config_from_args, print_json, train_config_from_args
from jobs.eval.mine import LABEL_COLUMN, RANK_COLUMN, MineError, load_mined
from lab.plugins.ltr import LTR_FEATURE_NAMES, LTR_FORMAT, META_FILE, MODEL_FILE, SCHEMA_KEY, LtrFeaturizer
from semantica.config import IntentConfig, MineConfig
from semantica.feature_schema import FEATURE_NAMES, FEATURE_SCHEMA_VERSION
from serving.core.intent import IntentClassifier


class TrainError(ValueError):
    """The mined data cannot train or measure a model; the message says why."""


@dataclass(frozen=True)
class LtrTrainSettings:
    """LambdaRank's settings: small, heavily regularised trees, as ~100 labelled queries overfit anything larger
    (leave-one-repo-out CV on the first 94 mined queries: 200 trees of 15 leaves lost 0.03 NDCG@10, these gained
    0.11). The labels' gains are the mine's (`MineConfig`)."""

    objective: str = "lambdarank"
    n_estimators: int = 100
    learning_rate: float = 0.03
    num_leaves: int = 3
    min_child_samples: int = 200
    eval_at: int = 10  # NDCG@eval_at is the training and report metric
    seed: int = 13


@dataclass
class RankingScores:
    """Mean per-query scores of one ordering."""

    queries: int
    ndcg: float
    mrr: float


@dataclass
class Comparison:
    """Fused order against the model's order on the same queries."""

    scope: str
    fused: RankingScores
    ltr: RankingScores

    def row(self, k: int) -> str:
        return (f"| {self.scope} | {self.fused.queries} | {self.fused.ndcg:.3f} | {self.ltr.ndcg:.3f} | "
                f"{self.ltr.ndcg - self.fused.ndcg:+.3f} | {self.fused.mrr:.3f} | {self.ltr.mrr:.3f} |")


def ndcg_at(labels: np.ndarray, k: int) -> float:
    """NDCG@k of labels listed in ranked order (graded gains 2^l - 1); 0 when nothing is relevant."""
    gains = np.power(2.0, labels.astype(np.float64)) - 1.0
    discounts = 1.0 / np.log2(np.arange(2, min(k, len(gains)) + 2))
    dcg = float((gains[:k] * discounts).sum())
    ideal = float((np.sort(gains)[::-1][:k] * discounts).sum())
    return dcg / ideal if ideal > 0 else 0.0


def reciprocal_rank(labels: np.ndarray) -> float:
    hits = np.flatnonzero(labels > 0)
    return 1.0 / (int(hits[0]) + 1) if len(hits) else 0.0


def with_signal(frame: pl.DataFrame) -> pl.DataFrame:
    """Only queries with at least one relevant candidate."""
    useful = frame.group_by("query_id").agg(pl.col(LABEL_COLUMN).max().alias("_best")).filter(pl.col("_best") > 0)
    return frame.join(useful.select("query_id"), on="query_id", how="semi")


def feature_matrix(frame: pl.DataFrame, classifier: IntentClassifier) -> np.ndarray:
    """`LTR_FEATURE_NAMES` rows: the mined fusion features plus the context features, computed from
    each row's query, path, symbol and kind by the same `LtrFeaturizer` the serving stage uses."""
    featurizers: dict[str, LtrFeaturizer] = {}
    rows = []
    for query, path, symbol, kind, *fusion in frame.select("query", "path", "symbol", "kind", *FEATURE_NAMES).iter_rows():
        featurizer = featurizers.get(query)
        if featurizer is None:
            featurizer = featurizers[query] = LtrFeaturizer(query, classifier.classify(query))
        rows.append(featurizer.row(fusion, path, symbol, kind))
    return np.asarray(rows, dtype=np.float64).reshape(len(rows), len(LTR_FEATURE_NAMES))


def group_sizes(frame: pl.DataFrame) -> list[int]:
    """Rows per query, in the frame's (query-contiguous) order."""
    ids = frame["query_id"].to_list()
    sizes: list[int] = []
    for index, qid in enumerate(ids):
        if index and qid == ids[index - 1]:
            sizes[-1] += 1
        else:
            sizes.append(1)
    return sizes


def score_orderings(frame: pl.DataFrame, predictions: np.ndarray, k: int) -> tuple[RankingScores, RankingScores]:
    """Fused order vs prediction order (ties keep the fused order), averaged over the frame's queries."""
    labels = frame[LABEL_COLUMN].to_numpy()
    ranks = frame[RANK_COLUMN].to_numpy()
    fused_n, fused_r, model_n, model_r = [], [], [], []
    start = 0
    for size in group_sizes(frame):
        group = slice(start, start + size)
        start += size
        by_fused = np.argsort(ranks[group], kind="stable")
        by_model = np.lexsort((ranks[group], -predictions[group]))
        fused_n.append(ndcg_at(labels[group][by_fused], k))
        fused_r.append(reciprocal_rank(labels[group][by_fused]))
        model_n.append(ndcg_at(labels[group][by_model], k))
        model_r.append(reciprocal_rank(labels[group][by_model]))
    n = len(fused_n)

    def mean(values: list[float]) -> float:
        return round(float(np.mean(values)), 4) if values else 0.0

    return RankingScores(n, mean(fused_n), mean(fused_r)), RankingScores(n, mean(model_n), mean(model_r))


@dataclass
class TrainReport:
    """What the trainer did and measured; written into the model directory's ltr.json."""

    train_queries: int
    train_rows: int
    dropped_queries: int
    holdout: list[Comparison] = field(default_factory=list)
    cross_validation: list[Comparison] = field(default_factory=list)
    importance: dict[str, float] = field(default_factory=dict)
    seconds: float = 0.0

    def table(self, k: int) -> str:
        lines = [f"| scope | queries | fused NDCG@{k} | LTR NDCG@{k} | change | fused MRR | LTR MRR |",
                 "|---|---|---|---|---|---|---|"]
        lines += [c.row(k) for c in self.holdout]
        lines += [c.row(k) for c in self.cross_validation]
        return "\n".join(lines)


class LtrTrainer:
    """Fits a LightGBM LambdaRank model on mined rows and compares it with the fused order."""

    def __init__(self, config: LtrTrainSettings | None = None, intent: IntentConfig | None = None,
                 mine: MineConfig | None = None) -> None:
        self.config = config or LtrTrainSettings()
        self.mine = mine or MineConfig()
        self.classifier = IntentClassifier(intent or IntentConfig())

    def features(self, frame: pl.DataFrame) -> np.ndarray:
        return feature_matrix(frame, self.classifier)

    def fit(self, frame: pl.DataFrame) -> Any:
        """A `lightgbm.Booster` (the native API: no scikit-learn needed)."""
        import lightgbm

        if frame.height == 0:
            raise TrainError("no training query has a relevant candidate: mine more queries")
        c = self.config
        params = {
            "objective": c.objective, "learning_rate": c.learning_rate, "num_leaves": c.num_leaves,
            "min_data_in_leaf": c.min_child_samples, "seed": c.seed, "deterministic": True, "num_threads": 1,
            "force_row_wise": True, "verbosity": -1,
            "label_gain": [float(2 ** g - 1) for g in range(max(self.mine.function_gain, self.mine.file_gain, 1) + 1)],
        }
        data = lightgbm.Dataset(self.features(frame), label=frame[LABEL_COLUMN].to_numpy(),
                                group=group_sizes(frame), feature_name=list(LTR_FEATURE_NAMES))
        return lightgbm.train(params, data, num_boost_round=c.n_estimators)

    def compare(self, model: Any, frame: pl.DataFrame, scope: str) -> Comparison:
        predictions = np.asarray(model.predict(self.features(frame)), dtype=np.float64) if frame.height else np.zeros(0)
        fused, ltr = score_orderings(frame, predictions, self.config.eval_at)
        return Comparison(scope, fused, ltr)

    def cross_validate(self, frame: pl.DataFrame) -> list[Comparison]:
        """Leave one group (repository) out: train on the others, measure on it; then all folds pooled."""
        groups = sorted(frame["group"].unique().to_list())
        if len(groups) < 2:
            raise TrainError(f"--cv needs queries from at least two repositories, got {groups}")
        folds: list[Comparison] = []
        pooled_frames, pooled_predictions = [], []
        for group in groups:
            test = frame.filter(pl.col("group") == group)
            model = self.fit(frame.filter(pl.col("group") != group))
            folds.append(self.compare(model, test, f"cv: {group}"))
            pooled_frames.append(test)
            pooled_predictions.append(np.asarray(model.predict(self.features(test)), dtype=np.float64))
        fused, ltr = score_orderings(pl.concat(pooled_frames), np.concatenate(pooled_predictions), self.config.eval_at)
        return [*folds, Comparison("cv: all folds", fused, ltr)]

    def train(self, frame: pl.DataFrame, holdout_groups: list[str], cv: bool) -> tuple[Any, TrainReport]:
        started = time.perf_counter()
        total_queries = frame["query_id"].n_unique()
        useful = with_signal(frame)
        known = set(useful["group"].unique().to_list())
        unknown = sorted(set(holdout_groups) - known)
        if unknown:
            raise TrainError(f"--holdout {unknown}: no mined query with a relevant hit in it; groups: {sorted(known)}")
        held = useful.filter(pl.col("group").is_in(holdout_groups))
        training = useful.filter(~pl.col("group").is_in(holdout_groups))
        model = self.fit(training)
        report = TrainReport(train_queries=training["query_id"].n_unique(), train_rows=training.height,
                             dropped_queries=total_queries - useful["query_id"].n_unique())
        report.holdout.append(self.compare(model, training, "train (seen)"))
        for group in holdout_groups:
            report.holdout.append(self.compare(model, held.filter(pl.col("group") == group), f"holdout: {group}"))
        if cv:
            report.cross_validation = self.cross_validate(training)
        gains = model.feature_importance(importance_type="gain")
        total = float(gains.sum()) or 1.0
        report.importance = {name: round(float(g) / total, 4) for name, g in
                             sorted(zip(LTR_FEATURE_NAMES, gains), key=lambda item: -item[1])}
        report.seconds = round(time.perf_counter() - started, 2)
        return model, report

    def save(self, model: Any, report: TrainReport, out: str | os.PathLike[str], sources: list[str]) -> Path:
        """model.txt (LightGBM text format) + ltr.json (features, config, data and measurements)."""
        root = Path(out)
        root.mkdir(parents=True, exist_ok=True)
        temp = root / (MODEL_FILE + ".tmp")
        model.save_model(str(temp))
        os.replace(temp, root / MODEL_FILE)
        meta = {"format": LTR_FORMAT, SCHEMA_KEY: FEATURE_SCHEMA_VERSION, "feature_names": list(LTR_FEATURE_NAMES),
                "config": {**asdict(self.config), **asdict(self.mine)}, "data": sources, "report": asdict(report)}
        (root / META_FILE).write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")
        return root


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m lab.train.ltr", description=(
        "Fit a LightGBM LambdaRank model on mined hits (`semantica mine`) and compare it with the fused order "
        "(NDCG@k, MRR) on held-out queries. Writes MODEL_DIR/model.txt and MODEL_DIR/ltr.json."))
    parser.add_argument("--data", required=True, nargs="+", metavar="DIR_OR_FILE",
                        help="mine output directories or Parquet files")
    parser.add_argument("--out", required=True, metavar="MODEL_DIR", help="where to write the model")
    parser.add_argument("--holdout", action="extend", nargs="+", default=[], metavar="GROUP",
                        help="repositories kept out of training and measured (e.g. sympy/sympy)")
    parser.add_argument("--cv", action="store_true", help="also leave-one-repository-out cross-validation")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    add_common(parser)
    add_training(parser)
    args = parser.parse_args(argv)
    trainer = LtrTrainer(LtrTrainSettings(), config_from_args(args).intent, train_config_from_args(args).mine)
    try:
        model, report = trainer.train(load_mined(args.data), list(args.holdout), args.cv)
    except (MineError, TrainError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    out = trainer.save(model, report, args.out, list(args.data))
    if args.json:
        print_json(asdict(report))
        return 0
    print(f"trained on {report.train_queries} queries ({report.train_rows} rows; {report.dropped_queries} "
          f"queries without a relevant candidate left out) in {report.seconds:.1f} s")
    print(report.table(trainer.config.eval_at))
    top = ", ".join(f"{name} {share:.2f}" for name, share in list(report.importance.items())[:5])
    print(f"feature importance (gain share): {top}")
    print(f"model: {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
