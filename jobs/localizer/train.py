"""`semantica train-localizer`: two LightGBM LambdaRank models, files then functions, on the corpus features.

Held-out numbers are leave-repositories-out: the repositories are split (seeded) into `folds` groups;
each group is ranked by models trained on the other groups only, so every repository is scored by a
model that never saw it. The fixed fusion of the same cheap lists (`fusion` column, the baseline the
candidates are ordered by) is scored on the same candidates. A fold's models are written under
`OUT/.folds/` and reused by a re-run (resumable); the final models train on every repository.
Queries whose gold files are all missing from their (sampled) snapshot are left out of training and
of the metrics, and counted.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import lightgbm as lgb
import numpy as np
import polars as pl

from jobs.localizer.corpus import check_corpus
from jobs.localizer.fit import fit_ranker, lambdarank_params, training_rows  # noqa: F401 (re-exported)
from semantica.config import LocalizerTrainConfig
from semantica.languages import language_of
from semantica.stores.localizer.features import FILE_FEATURES, FUNCTION_FEATURES, SCHEMA_VERSION
from semantica.stores.localizer.models import FILE_MODEL, FUNCTION_MODEL, META

LEVELS = {"files": (FILE_FEATURES, "n_gold_files_in_snapshot", FILE_MODEL, "train_file_depth"),
          "functions": (FUNCTION_FEATURES, "n_gold_functions_in_snapshot", FUNCTION_MODEL, "train_function_depth")}
METRIC_KS = (1, 3, 5, 10)


LANGUAGE_GROUPS = {"javascript": "javascript/typescript", "typescript": "javascript/typescript",
                   "tsx": "javascript/typescript"}


def repo_languages(files: pl.DataFrame) -> dict[str, str]:
    """A repository's language (JavaScript and TypeScript together): the language of most of its gold files."""
    gold = files.filter(pl.col("label") > 0).select("repo", "key")
    counts: dict[str, dict[str, int]] = {}
    for repo, key in gold.iter_rows():
        language = language_of(key)
        group = counts.setdefault(repo, {})
        group[LANGUAGE_GROUPS.get(language, language)] = group.get(LANGUAGE_GROUPS.get(language, language), 0) + 1
    return {repo: max(c, key=c.__getitem__) for repo, c in counts.items()}


class TrainError(ValueError):
    """No features, or features of another schema."""


@dataclass
class LevelData:
    frame: pl.DataFrame  # qid (global), repo, label, fusion, features...
    gold: dict[int, int]  # qid -> gold items findable in its snapshot


def load_features(features_dir: str | Path) -> tuple[dict[str, LevelData], pl.DataFrame]:
    root = Path(features_dir)
    parts = sorted(root.glob("*.queries.parquet"))
    if not parts:
        raise TrainError(f"no features under {root}: run `semantica mine-localizer --out {root}` first")
    queries, levels = [], {name: [] for name in LEVELS}
    offset = 0
    for part in parts:
        stem = part.name.removesuffix(".queries.parquet")
        check_corpus([stem])
        q = pl.read_parquet(part)
        if int(q["schema_version"][0]) != SCHEMA_VERSION:
            raise TrainError(f"{part} holds feature schema {q['schema_version'][0]}, this code is {SCHEMA_VERSION}")
        queries.append(q.with_columns((pl.col("qid") + offset).alias("qid")))
        for name in LEVELS:
            frame = pl.read_parquet(root / f"{stem}.{name}.parquet")
            levels[name].append(frame.with_columns((pl.col("qid") + offset).alias("qid"),
                                                   pl.lit(q["repo"][0]).alias("repo")))
        offset += len(q) + 1
    query_frame = pl.concat(queries, how="diagonal_relaxed").with_columns(
        pl.col("gold_files_in_snapshot").alias("n_gold_files_in_snapshot"),
        pl.col("gold_functions_in_snapshot").alias("n_gold_functions_in_snapshot"))
    out = {}
    for name, (_, gold_col, _, _) in LEVELS.items():
        gold = dict(zip(query_frame["qid"].to_list(), query_frame[gold_col].to_list()))
        out[name] = LevelData(pl.concat(levels[name]).sort(["qid", "fusion"], descending=[False, True]), gold)
    return out, query_frame


def repo_folds(repos: Sequence[str], folds: int, seed: int) -> list[list[str]]:
    order = sorted(repos)
    np.random.default_rng(seed).shuffle(order)
    k = max(2, min(folds, len(order)))
    return [sorted(order[i::k]) for i in range(k)]


def ranking_metrics(frame: pl.DataFrame, scores: np.ndarray, gold: dict[int, int]) -> dict[str, float]:
    """Acc@k (LocAgent's), NDCG@10, Recall@50 and MRR of each query's candidates ranked by `scores`,
    over queries with at least one findable gold item (gold missing from the candidates counts as a miss)."""
    qids = frame["qid"].to_numpy()
    labels = frame["label"].to_numpy()
    totals = {f"Acc@{k}": 0.0 for k in METRIC_KS} | {"NDCG@10": 0.0, "Recall@50": 0.0, "MRR": 0.0}
    n = 0
    bounds = np.flatnonzero(np.diff(qids)) + 1
    for start, end in zip(np.r_[0, bounds], np.r_[bounds, len(qids)]):
        n_gold = gold.get(int(qids[start]), 0)
        if n_gold <= 0:
            continue
        n += 1
        order = np.argsort(-scores[start:end], kind="stable")
        rel = labels[start:end][order]
        for k in METRIC_KS:
            totals[f"Acc@{k}"] += float(rel[:k].sum() >= min(n_gold, k))
        dcg = float((rel[:10] / np.log2(np.arange(2, min(10, len(rel)) + 2))).sum())
        ideal = float((1.0 / np.log2(np.arange(2, min(10, n_gold) + 2))).sum())
        totals["NDCG@10"] += dcg / ideal
        totals["Recall@50"] += float(rel[:50].sum()) / n_gold
        hits = np.flatnonzero(rel)
        totals["MRR"] += 1.0 / (hits[0] + 1) if len(hits) else 0.0
    return {k: round(100 * v / n, 2) if n else math.nan for k, v in totals.items()} | {"queries": n}


class LocalizerTrainer:
    def __init__(self, config: LocalizerTrainConfig, features_dir: str | Path, out: str | Path,
                 folds: int | None = None, seed: int | None = None, report: str | None = None) -> None:
        self.config = config
        self.features_dir = Path(features_dir)
        self.out = Path(out)
        self.folds = folds or config.folds
        self.seed = config.seed if seed is None else seed
        self.report = report

    def params(self) -> dict:
        return lambdarank_params(self.config, self.seed)

    def fit(self, frame: pl.DataFrame, features: Sequence[str], depth: int) -> lgb.Booster:
        return fit_ranker(frame, features, depth, self.config, self.seed)

    def _fold_model(self, level: str, fold: int, frame: pl.DataFrame, features: Sequence[str],
                    held_out: list[str], depth: int) -> lgb.Booster:
        target = self.out / ".folds" / f"seed{self.seed}-fold{fold}-of{self.folds}-{level}.txt"
        names = self.out / ".folds" / f"seed{self.seed}-fold{fold}-of{self.folds}-{level}.repos.json"
        if target.is_file() and names.is_file() and json.loads(names.read_text()) == held_out:
            return lgb.Booster(model_file=str(target))
        model = self.fit(frame.filter(~pl.col("repo").is_in(held_out)), features, depth)
        target.parent.mkdir(parents=True, exist_ok=True)
        model.save_model(str(target))
        names.write_text(json.dumps(held_out))
        return model

    def run(self) -> dict:
        data, queries = load_features(self.features_dir)
        repos = sorted(queries["repo"].unique().to_list())
        folds = repo_folds(repos, self.folds, self.seed)
        print(f"{len(queries)} labelled commits from {len(repos)} repositories; {len(folds)} repository folds, "
              f"seed {self.seed}")
        results: dict = {"seed": self.seed, "folds": folds, "schema_version": SCHEMA_VERSION,
                         "params": self.params() | {"num_rounds": self.config.num_rounds,
                                                      "train_file_depth": self.config.train_file_depth,
                                                      "train_function_depth": self.config.train_function_depth,
                                                      "tail_every": self.config.tail_every}, "levels": {}}
        languages = repo_languages(data["files"].frame)
        results["languages"] = languages
        for level, (features, _, model_file, depth_field) in LEVELS.items():
            depth = getattr(self.config, depth_field)
            level_data = data[level]
            frame = level_data.frame
            learned = np.zeros(len(frame), dtype=np.float64)
            for n, held_out in enumerate(folds):
                start = time.perf_counter()
                model = self._fold_model(level, n, frame, features, held_out, depth)
                mask = frame["repo"].is_in(held_out).to_numpy()
                learned[mask] = model.predict(frame.filter(pl.col("repo").is_in(held_out)).select(features).to_numpy(),
                                              num_threads=self.config.num_threads)
                print(f"  {level} fold {n + 1}/{len(folds)} ({len(held_out)} repositories held out) "
                      f"{time.perf_counter() - start:.0f} s", flush=True)
            fusion = frame["fusion"].to_numpy().astype(np.float64)
            per_repo = {}
            for repo in repos:
                mask = (frame["repo"] == repo).to_numpy()
                sub = frame.filter(pl.col("repo") == repo)
                per_repo[repo] = {"fusion": ranking_metrics(sub, fusion[mask], level_data.gold),
                                  "learned": ranking_metrics(sub, learned[mask], level_data.gold)}
            by_language = {}
            for language in sorted(set(languages.values())):
                mask = frame["repo"].is_in([r for r, lang in languages.items() if lang == language]).to_numpy()
                sub = frame.filter(pl.Series(mask))
                by_language[language] = {"fusion": ranking_metrics(sub, fusion[mask], level_data.gold),
                                         "learned": ranking_metrics(sub, learned[mask], level_data.gold)}
            summary = {"fusion": ranking_metrics(frame, fusion, level_data.gold),
                       "learned": ranking_metrics(frame, learned, level_data.gold), "per_repo": per_repo,
                       "by_language": by_language}
            final = self.fit(frame, features, depth)
            self.out.mkdir(parents=True, exist_ok=True)
            final.save_model(str(self.out / model_file))
            gain = final.feature_importance("gain")
            summary["importance_gain"] = {f: round(float(g), 1) for f, g in
                                          sorted(zip(features, gain), key=lambda item: -item[1])}
            results["levels"][level] = summary
            print(f"{level} (leave-repositories-out, {summary['learned']['queries']} queries)")
            for name in ("fusion", "learned"):
                m = summary[name]
                print(f"  {name:8s} " + "  ".join(f"{k} {m[k]:.1f}" for k in
                                                   (*(f"Acc@{k}" for k in METRIC_KS), "NDCG@10", "Recall@50", "MRR")))
        stale = queries["staleness"].to_numpy()
        results["corpus"] = {
            "repositories": {r: int((queries["repo"] == r).sum()) for r in repos},
            "snapshots": {r: sorted(set(queries.filter(pl.col("repo") == r)["snapshot"].to_list())) for r in repos},
            "staleness": {"mean": float(stale.mean()), "p50": float(np.median(stale)), "p90": float(np.percentile(stale, 90)),
                          "max": int(stale.max())},
            "queries_without_findable_gold_file": int((queries["n_gold_files_in_snapshot"] == 0).sum()),
            "queries_with_history": int((queries["history_commits"] > 0).sum()) if "history_commits" in queries.columns
            else 0,
            "queries": len(queries)}
        (self.out / META).write_text(json.dumps({"schema_version": SCHEMA_VERSION, "file_features": list(FILE_FEATURES),
                                                 "function_features": list(FUNCTION_FEATURES), "seed": self.seed,
                                                 "params": results["params"], "trained_on": results["corpus"]["repositories"]},
                                                indent=1) + "\n")
        if self.report:
            Path(self.report).parent.mkdir(parents=True, exist_ok=True)
            Path(self.report).write_text(json.dumps(results, indent=1) + "\n")
        return results

