"""The corpus's leave-repositories-out file metrics by query length: does the learned ranker's gain over the
fixed fusion hold on long, issue-like queries (the dev split's issues are a median 841 characters, the corpus's
commit messages 63)?

Reads a `train-localizer` output directory: the fold models it kept under `OUT/.folds/` rank each held-out
repository, exactly as its report's held-out numbers were made, and the corpus gives each query's length.

    python -m jobs.localizer.length_slices FEATURES MODELS OUT.json [--corpus bench/corpus] [--edges 100 300 800]
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from pathlib import Path

import lightgbm as lgb
import numpy as np
import polars as pl

from jobs.localizer.corpus import load_corpus
from jobs.localizer.train import load_features, ranking_metrics
from semantica.localizer.features import FILE_FEATURES


def out_of_fold(frame: pl.DataFrame, models: Path) -> np.ndarray:
    """Each row's score from the fold model that did not see its repository (`OUT/.folds/*-files.txt`)."""
    scores = np.full(len(frame), np.nan)
    for names in sorted(models.glob(".folds/*-files.repos.json")):
        held_out = json.loads(names.read_text())
        model = lgb.Booster(model_file=str(names).removesuffix(".repos.json") + ".txt")
        mask = frame["repo"].is_in(held_out).to_numpy()
        scores[mask] = model.predict(frame.filter(pl.Series(mask)).select(FILE_FEATURES).to_numpy(), num_threads=1)
    if np.isnan(scores).any():
        raise ValueError(f"{models}/.folds does not cover every repository of the features")
    return scores


def length_slices(features: str | Path, models: str | Path, corpus: str | Path,
                  edges: Sequence[int]) -> dict:
    data, queries = load_features(features)
    level = data["files"]
    frame = level.frame
    length = {(row.repo, row.sha): len(row.query) for row in load_corpus(corpus)}
    by_qid = {q: length.get((r, s), 0) for q, r, s in queries.select("qid", "repo", "sha").iter_rows()}
    lengths = frame["qid"].replace_strict(by_qid, default=0).to_numpy()
    learned = out_of_fold(frame, Path(models))
    fusion = frame["fusion"].to_numpy().astype(np.float64)
    bounds = [0, *edges, None]
    out = {}
    for lo, hi in zip(bounds, bounds[1:]):
        mask = (lengths >= lo) & (lengths < hi if hi is not None else True)
        if not mask.any():  # no query of that length: no slice
            continue
        sub = frame.filter(pl.Series(mask))
        out[f"[{lo},{hi if hi is not None else 'inf'})"] = {
            "fusion": ranking_metrics(sub, fusion[mask], level.gold),
            "learned": ranking_metrics(sub, learned[mask], level.gold)}
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("features")
    parser.add_argument("models")
    parser.add_argument("out")
    parser.add_argument("--corpus", default="bench/corpus")
    parser.add_argument("--edges", type=int, nargs="+", default=[100, 300, 800], help="query length bounds (chars)")
    args = parser.parse_args(argv)
    result = length_slices(args.features, args.models, args.corpus, args.edges)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(result, indent=1) + "\n")
    for name, row in result.items():
        f, m = row["fusion"], row["learned"]
        print(f"{name:12s} n {m['queries']:5d}  fusion Acc@1/5/10 {f['Acc@1']:.1f}/{f['Acc@5']:.1f}/{f['Acc@10']:.1f}"
              f"  learned {m['Acc@1']:.1f}/{m['Acc@5']:.1f}/{m['Acc@10']:.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
