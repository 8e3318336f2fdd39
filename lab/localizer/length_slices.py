"""The corpus's leave-repositories-out file metrics by query length: does the learned ranker's gain over the
fixed fusion hold on long, issue-like queries (the dev split's issues are a median 841 characters, the corpus's
commit messages 63)? And the weight of a "today" proxy (the fixed fusion) in a reciprocal-rank blend with the
learned ranking, chosen by leave-one-repository-out (today's weight 0).

Reads a `train-localizer` output directory: the fold models it kept under `OUT/.folds/` rank each held-out
repository, exactly as its report's held-out numbers were made, and the corpus gives each query's length.

    python -m lab.localizer.length_slices FEATURES MODELS OUT.json [--corpus bench/corpus] [--edges 100 300 800]
        [--weights 0 0.25 0.5 1 2]
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
from semantica.stores.localizer.features import FILE_FEATURES


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


def _ranks(scores: np.ndarray, qids: np.ndarray) -> np.ndarray:
    """Each row's 1-based rank within its query (rows grouped by qid), best score first, ties in row order."""
    out = np.empty(len(scores))
    bounds = np.flatnonzero(np.diff(qids)) + 1
    for start, end in zip(np.r_[0, bounds], np.r_[bounds, len(qids)]):
        order = np.argsort(-scores[start:end], kind="stable")
        out[start + order] = np.arange(1, end - start + 1)
    return out


def proxy_blend(frame: pl.DataFrame, fusion: np.ndarray, learned: np.ndarray, gold: dict[int, int],
                weights: Sequence[float], rrf_k: float) -> dict:
    """`w / (k + fusion rank) + 1 / (k + learned rank)` for each w: pooled Acc@5 per weight, and per held-out
    repository the weight that is best on the other repositories (file Acc@5), scored on it."""
    qids = frame["qid"].to_numpy()
    by_fusion, by_learned = _ranks(fusion, qids), _ranks(learned, qids)
    repos = sorted(frame["repo"].unique().to_list())
    repo_of = frame["repo"].to_numpy()
    per: dict[tuple[float, str], dict] = {}
    for w in weights:
        scores = w / (rrf_k + by_fusion) + 1.0 / (rrf_k + by_learned)
        for repo in repos:
            mask = repo_of == repo
            per[(w, repo)] = ranking_metrics(frame.filter(pl.Series(mask)), scores[mask], gold)

    def pooled(w: float, members: Sequence[str], metric: str = "Acc@5") -> float:
        n = sum(per[(w, r)]["queries"] for r in members)
        return sum(per[(w, r)][metric] * per[(w, r)]["queries"] for r in members) / max(n, 1)

    chosen = {r: max(weights, key=lambda w: (pooled(w, [o for o in repos if o != r]), -w)) for r in repos}
    return {"rrf_k": rrf_k,
            "pooled": {str(w): {m: round(pooled(w, repos, m), 2) for m in ("Acc@1", "Acc@5", "Acc@10")}
                       for w in weights},
            "chosen": chosen,
            "loo": {m: round(pooled_choice(per, chosen, m), 2) for m in ("Acc@1", "Acc@5", "Acc@10")}}


def pooled_choice(per: dict[tuple[float, str], dict], chosen: dict[str, float], metric: str) -> float:
    n = sum(per[(w, r)]["queries"] for r, w in chosen.items())
    return sum(per[(w, r)][metric] * per[(w, r)]["queries"] for r, w in chosen.items()) / max(n, 1)


def length_slices(features: str | Path, models: str | Path, corpus: str | Path,
                  edges: Sequence[int], weights: Sequence[float] = (), rrf_k: float = 60.0) -> dict:
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
    if weights:
        out["proxy_blend"] = proxy_blend(frame, fusion, learned, level.gold, weights, rrf_k)
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("features")
    parser.add_argument("models")
    parser.add_argument("out")
    parser.add_argument("--corpus", default="bench/corpus")
    parser.add_argument("--edges", type=int, nargs="+", default=[100, 300, 800], help="query length bounds (chars)")
    parser.add_argument("--weights", type=float, nargs="*", default=[], help="proxy blend weights to choose from")
    args = parser.parse_args(argv)
    from semantica.config import load_config

    result = length_slices(args.features, args.models, args.corpus, args.edges, args.weights,
                           load_config(None, []).localizer.blend_rrf_k)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(result, indent=1) + "\n")
    blend = result.pop("proxy_blend", None)
    for name, row in result.items():
        f, m = row["fusion"], row["learned"]
        print(f"{name:12s} n {m['queries']:5d}  fusion Acc@1/5/10 {f['Acc@1']:.1f}/{f['Acc@5']:.1f}/{f['Acc@10']:.1f}"
              f"  learned {m['Acc@1']:.1f}/{m['Acc@5']:.1f}/{m['Acc@10']:.1f}")
    if blend:
        picks = {w: list(blend["chosen"].values()).count(w) for w in args.weights}
        print(f"proxy blend, file Acc@5 by weight {blend['pooled']}; leave-one-repository-out picks {picks}, "
              f"scores {blend['loo']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
