"""The dense function channel's settings, chosen on the corpus by leave-one-repository-out:
`python -m lab.localizer.function_dense WIDE OUT.json --model DIR --cache DIR [--per-repo 20] [--depth 50]`.

Only repositories the encoder never trained on take part (`--model`'s train_card.json names its training
repositories; they are left out). For a seeded sample of each one's labelled commits with gold functions, the
shipped function order (learned file order from file rankers trained on the other repository folds, as
`lab/localizer/function_recall.py` builds it, then `FunctionScore`) is cut at `--depth`; each function's source
at the query's snapshot and the commit message are encoded by `--model` (vectors cached per snapshot under
`--cache`), and every (depth, rrf_k, weight) of the grid fuses the two orders with `DenseFusion`, the query path's
code. Each repository is scored with the setting best on the OTHER repositories ((Acc@10 + Recall@50) / 2).

Where the model has no weights here (cross-fitted fold models trained on a GPU machine), `--record FILE` notes every
text the study would encode and `--vectors FILE` reads back what `lab.train.text_vectors encode` computed there
(`lab/train/device_crossfit.sh`); `--skip-trained DIR` names whose training repositories to leave out of the
sample, and `--score-untrained-by DIR` scores only another model's unseen repositories on the same sample, so two
encoders are compared on the same queries and heads.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import random
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Protocol

import numpy as np
import polars as pl

from jobs.localizer.train import LevelData, load_features, ranking_metrics
from lab.localizer.function_order import REPORTED, criterion, weighted
from lab.localizer.function_recall import candidate_mask, function_parts, learned_file_ranks
from lab.train.text_vectors import StoredTextVectors, TextRecorder
from semantica.config import EncoderConfig, is_train_override, load_config, load_train_config
from semantica.runtime.encoder import Encoder
from semantica.stores.localizer.dense import (
    DenseFusion,
    channel_keys,
    cosines,
    file_cosines,
    function_sources,
)
from semantica.stores.localizer.features import FunctionScore

NO_CHANNEL = "off"
DEEP = "deep+head"  # a deep fusion, then the shipped head fusion over the same cosines (`--deep-depths`)


def fuse_in_turn(stages: Sequence[DenseFusion], order: Sequence[str], cosine: dict[str, float]) -> list[str]:
    """`order` after each fusion in turn, over the same cosines."""
    fused = list(order)
    for stage in stages:
        fused = stage.fuse(fused, cosine)
    return fused


def snapshot_texts(mirror: Path, commit: str, keys: Sequence[str],
                   normalize: Callable[[str], str] = lambda key: key) -> dict[str, str]:
    """key -> the function's `function_text` at `commit`, for the keys whose file and span exist there (keys
    compared after `normalize`)."""
    texts: dict[str, str] = {}
    by_path: dict[str, list[str]] = {}
    for key in keys:
        by_path.setdefault(key.partition("::")[0], []).append(key)
    for path, wanted in by_path.items():
        shown = subprocess.run(["git", f"--git-dir={mirror}", "show", f"{commit}:{path}"], capture_output=True)
        if shown.returncode != 0:
            continue
        found = function_sources(path, shown.stdout.decode("utf-8", "replace"))
        sources = {normalize(k): text for k, text in found.items()}
        texts.update((key, sources[normalize(key)]) for key in wanted if normalize(key) in sources)
    return texts


class SnapshotVectors:
    """Function and query vectors of one snapshot, kept in an npz so a rerun encodes nothing twice."""

    def __init__(self, file: Path | None) -> None:
        self.file = file  # None: kept in memory only (vectors recorded or read from `--vectors`)
        self.vectors: dict[str, np.ndarray] = {}
        if file is not None and file.is_file():
            with np.load(file, allow_pickle=False) as z:
                self.vectors = dict(zip(z["keys"].tolist(), z["vectors"]))

    def ensure(self, encoder: TextEncoder, texts: dict[str, str], max_length: int) -> None:
        missing = [key for key in texts if key not in self.vectors]
        if not missing:
            return
        self.vectors.update(zip(missing, encoder.encode([texts[k] for k in missing], max_length)))
        if self.file is None:
            return
        keys = sorted(self.vectors)
        self.file.parent.mkdir(parents=True, exist_ok=True)
        np.savez(self.file, keys=np.array(keys), vectors=np.stack([self.vectors[k] for k in keys]))


class TextEncoder(Protocol):
    def encode(self, texts: Sequence[str], max_length: int) -> np.ndarray: ...


class StudyEncoders:
    """Where a study's vectors come from, per group (a repository, or `dev`): the model itself (on this CPU; '' is
    the installed MiniLM), a recorder that only notes the texts (`--record`, for the GPU machine), or the vectors it
    sent back (`--vectors`). Recorded and stored vectors bypass the on-disk cache."""

    def __init__(self, model: str, record: str | None, vectors: str | None) -> None:
        self.record_path = record
        self.recorder = TextRecorder() if record else None
        self.stored = StoredTextVectors(vectors) if vectors else None
        self.encoder = None if record or vectors else Encoder(EncoderConfig(model_path=model,
                                                                            model_id=Path(model).name if model
                                                                            else EncoderConfig.model_id))

    @property
    def caches(self) -> bool:
        return self.encoder is not None

    def for_group(self, group: str) -> TextEncoder:
        if self.recorder is not None:
            return self.recorder.for_group(group)
        if self.stored is not None:
            return self.stored.for_group(group)
        assert self.encoder is not None
        return self.encoder

    def finish(self) -> None:
        if self.recorder is not None and self.record_path:
            print(f"{self.recorder.write(self.record_path)} texts recorded to {self.record_path}", file=sys.stderr)

    @staticmethod
    def add_arguments(parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--record", help="only note every text to encode, in this Parquet file (for "
                                             "`lab.train.text_vectors encode` on a GPU machine)")
        parser.add_argument("--vectors", help="read every vector from this `lab.train.text_vectors` output")


def trained_repos(model_dir: Path) -> set[str]:
    card = model_dir / "train_card.json"
    return set(json.loads(card.read_text())["repos"]) if card.is_file() else set()


def mirror_of(mirrors: Path, repo: str) -> Path:
    return mirrors / repo.replace("/", "+") / "repo"


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("wide")
    parser.add_argument("out")
    parser.add_argument("--model", required=True)
    parser.add_argument("--cache", required=True)
    mirrors = os.environ.get("SEMANTICA_MIRRORS")
    parser.add_argument("--mirrors", default=mirrors, required=mirrors is None,
                        help="bare clones as DIR/<owner>+<name>/repo (default: $SEMANTICA_MIRRORS)")
    parser.add_argument("--corpus", default="bench/corpus")
    parser.add_argument("--per-repo", type=int, default=20)
    parser.add_argument("--depth", type=int, default=50)
    parser.add_argument("--depths", default="10,20,30,50")
    parser.add_argument("--ks", default="10,30,60")
    parser.add_argument("--weights", default="0.5,1,2")
    parser.add_argument("--deep-depths", default="", help="also a deep fusion before the shipped head fusion "
                        "(localizer.dense_depth/rrf_k/weight): its depths (comma-separated; '' = none) ...")
    parser.add_argument("--deep-ks", default="30,60", help="... with these k")
    parser.add_argument("--deep-weights", default="0.25,0.5,1", help="... and these weights")
    parser.add_argument("--skip-trained", default=None,
                        help="leave out the repositories this model trained on (default: --model's)")
    parser.add_argument("--file-heads", default="30,50", help="function heads whose cosines the file channel reads")
    parser.add_argument("--file-depths", default="10,30")
    parser.add_argument("--file-weights", default="0.25,0.5,1")
    parser.add_argument("--score-untrained-by", default=None,
                        help="sample as usual, then score only the repositories this model never trained on (to "
                             "compare two encoders on the same queries)")
    parser.add_argument("--set", action="append", default=[], dest="overrides", metavar="SECTION.FIELD=VALUE",
                        help="settings the variants build on (the shipped channel, `localizer.dense_*`), e.g. "
                             "`localizer.dense_depth=30` for a deep fusion above a head of 30 (repeatable)")
    StudyEncoders.add_arguments(parser)
    parser.add_argument("--unrecorded", choices=("error", "skip"), default="error",
                        help="with --vectors: a head function whose text was never encoded is an error, or gets no "
                             "cosine (as test code; counted in the report), for a head that moved since recording")
    args = parser.parse_args(argv)
    config = load_config(None, [o for o in args.overrides if not is_train_override(o)])
    train = load_train_config(None, [o for o in args.overrides if is_train_override(o)]).localizer_train
    loc, seed = config.localizer, train.seed
    data, query_frame = load_features(args.wide)
    file_ranks, _ = learned_file_ranks(data["files"], seed, train)
    frame, parts = function_parts(data["functions"].frame, file_ranks)
    level = data["functions"]
    queries = query_frame.select("qid", "repo", "sha", "snapshot")
    shipped = FunctionScore(loc.function_file_weight, loc.function_file_rrf_k, loc.function_name_boost, loc.test_factor)
    order = loc.function_file_order if loc.function_file_order == "learned" else "fusion"
    scores = shipped(parts["lists"], shipped.file_term(parts[order]), parts["named"], parts["test"])
    scores = np.where(candidate_mask(parts, order, loc.top_files, loc.function_name_boost), scores, -1.0)
    frame = frame.with_columns(pl.Series("shipped", scores))
    skip = trained_repos(Path(args.skip_trained or args.model))
    rng = random.Random(seed)
    chosen: list[int] = []
    for repo in sorted(set(frame["repo"].unique().to_list()) - skip):
        qids = sorted(q for q in queries.filter(pl.col("repo") == repo)["qid"].to_list() if level.gold.get(q, 0) > 0)
        chosen += sorted(rng.sample(qids, min(args.per_repo, len(qids))))
    sample = frame.filter(pl.col("qid").is_in(chosen)).sort(["qid", "shipped"], descending=[False, True],
                                                             maintain_order=True)  # ties as `function_parts` put them
    messages = {}
    for part in Path(args.corpus).glob("*.jsonl"):
        for line in part.read_text().splitlines():
            row = json.loads(line)
            messages[(row["repo"], row["sha"])] = row["query"]
    encoders = StudyEncoders(args.model, args.record, args.vectors)
    max_length = loc.dense_max_length
    heads: dict[int, list[str]] = {}
    qvecs: dict[int, np.ndarray] = {}
    vectors: dict[int, dict[str, np.ndarray]] = {}
    info = {r["qid"]: r for r in queries.filter(pl.col("qid").is_in(chosen)).iter_rows(named=True)}
    by_snapshot: dict[tuple[str, str], list[int]] = {}
    unrecorded = 0  # head functions whose text `--vectors` never encoded (`--unrecorded skip`)
    # the sample (and so each query's head) stays the whole run's; only the scoring is narrowed
    unscored = trained_repos(Path(args.score_untrained_by)) if args.score_untrained_by else set()
    chosen = [qid for qid in chosen if info[qid]["repo"] not in unscored]
    for qid in chosen:
        by_snapshot.setdefault((info[qid]["repo"], info[qid]["snapshot"]), []).append(qid)
    for n, ((repo, snap), qids) in enumerate(sorted(by_snapshot.items()), 1):
        encoder = encoders.for_group(repo)
        store = SnapshotVectors(Path(args.cache) / f"{repo.replace('/', '+')}.{snap[:12]}.npz"
                                if encoders.caches else None)
        keys_of = {}
        for qid in qids:
            rows = sample.filter(pl.col("qid") == qid)
            keys_of[qid] = rows.filter(pl.col("shipped") > -1.0)["key"].to_list()[: args.depth]
        wanted = sorted({k for ks in keys_of.values() for k in ks} - set(store.vectors))
        texts = snapshot_texts(mirror_of(Path(args.mirrors), repo), snap, wanted) if wanted else {}
        if args.unrecorded == "skip" and encoders.stored is not None:  # no cosine, as the channel gives test code
            table = encoders.stored.for_group(repo)
            recorded = {k: t for k, t in texts.items() if table.recorded(t, max_length)}
            unrecorded += len(texts) - len(recorded)
            texts = recorded
        store.ensure(encoder, texts, max_length)
        for qid in qids:
            heads[qid] = keys_of[qid]
            qvecs[qid] = encoder.encode([messages.get((repo, info[qid]["sha"]), "")], loc.dense_query_max_length)[0]
            vectors[qid] = {k: store.vectors[k] for k in channel_keys(keys_of[qid]) if k in store.vectors}
        print(f"[{n}/{len(by_snapshot)}] {repo} {snap[:10]} queries {len(qids)} encoded {len(texts)}", flush=True)
    encoders.finish()
    if args.record:
        return 0
    repos = sorted({info[q]["repo"] for q in chosen})
    subs = {r: sample.filter(pl.col("repo") == r) for r in repos}
    settings = [(NO_CHANNEL, 0, 0.0, 0.0)] + [("dense", d, k, w) for d, k, w in itertools.product(
        [int(x) for x in args.depths.split(",")], [float(x) for x in args.ks.split(",")],
        [float(x) for x in args.weights.split(",")])]
    settings += [(DEEP, d, k, w) for d, k, w in itertools.product(
        [int(x) for x in args.deep_depths.split(",") if x], [float(x) for x in args.deep_ks.split(",")],
        [float(x) for x in args.deep_weights.split(",")])]
    shipped = DenseFusion(loc.dense_depth, loc.dense_rrf_k, loc.dense_weight)  # the head the deep variant builds on
    grid: dict[str, dict] = {}
    for name, depth, rrf_k, weight in settings:
        per_repo = {}
        for repo, sub in subs.items():
            new_scores = sub["shipped"].to_numpy().copy()
            keys = sub["key"].to_list()
            qids = sub["qid"].to_numpy()
            if name != NO_CHANNEL:
                stages = (DenseFusion(depth, rrf_k, weight), shipped) if name == DEEP else (
                    DenseFusion(depth, rrf_k, weight),)
                for qid in np.unique(qids):
                    rows = np.flatnonzero(qids == qid)
                    cos = cosines(qvecs[qid], list(vectors[qid]), np.stack(list(vectors[qid].values()))) \
                        if vectors[qid] else {}
                    fused = fuse_in_turn(stages, heads[qid], cos)
                    place = {key: n for n, key in enumerate(fused)}
                    base = new_scores[rows].max() + 1.0 + len(fused)
                    for row in rows:
                        if keys[row] in place:
                            new_scores[row] = base - place[keys[row]]
            per_repo[repo] = ranking_metrics(sub.select("qid", "label"), new_scores, level.gold)
        key = f"{name}/{depth}/{rrf_k}/{weight}"
        grid[key] = {"per_repo": per_repo, "overall": weighted(per_repo, repos)}
        print(key, grid[key]["overall"], flush=True)
    off_key = f"{NO_CHANNEL}/0/0.0/0.0"
    picks, loro = leave_one_repository_out(grid, repos, off_key, criterion)
    cosine_of = {qid: cosines(qvecs[qid], list(vectors[qid]), np.stack(list(vectors[qid].values())))
                 if vectors[qid] else {} for qid in chosen}
    file_grid = file_channel_grid(data["files"], file_ranks, order, heads, cosine_of, repos,
                                  {q: info[q]["repo"] for q in chosen}, args)
    file_off = f"{NO_CHANNEL}/0/0/0.0/0.0"
    file_picks, file_loro = leave_one_repository_out(file_grid, repos, file_off, file_criterion)
    report = {"wide": args.wide, "model": args.model, "vectors": args.vectors,
              "scored_untrained_by": args.score_untrained_by, "query_max_length": loc.dense_query_max_length,
              "left_out_trained": sorted(skip), "repos": repos,
              "queries": len(chosen), "depth": args.depth, "criterion": "(Acc@10 + Recall@50) / 2",
              "unrecorded_without_cosine": unrecorded,
              "metrics": list(REPORTED), "picks": picks, "loro": loro, "grid": grid,
              "files": {"criterion": "(Acc@1 + Acc@5 + Acc@10) / 3", "picks": file_picks, "loro": file_loro,
                        "grid": file_grid}}
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(report, indent=1) + "\n")
    print(json.dumps({"functions": loro, "files": file_loro}, indent=1))
    return 0


FILE_CRITERION = ("Acc@1", "Acc@5", "Acc@10")


def file_criterion(metrics: dict[str, float]) -> float:
    return sum(metrics[m] for m in FILE_CRITERION) / len(FILE_CRITERION)


def leave_one_repository_out(grid: dict[str, dict], repos: list[str], off_key: str,
                             choose: Callable[[dict[str, float]], float]) -> tuple[dict[str, str], dict]:
    """Each repository scored with the setting best on the others (ties: off); the pooled result, the channel
    off, and the setting best on every repository."""
    picks, held = {}, {}
    for repo in repos:
        others = [r for r in repos if r != repo]
        picks[repo] = max(grid, key=lambda g: (choose(weighted(grid[g]["per_repo"], others)), g == off_key))
        held[repo] = grid[picks[repo]]["per_repo"][repo]
    return picks, {"chosen": weighted(held, repos), "off": grid[off_key]["overall"],
                   "best_on_all": max(grid, key=lambda g: choose(grid[g]["overall"]))}


def file_channel_grid(files: LevelData, ranks: pl.DataFrame, order: str, heads: dict[int, list[str]],
                      cosine_of: dict[int, dict[str, float]], repos: list[str], repo_of: dict[int, str],
                      args: argparse.Namespace) -> dict[str, dict]:
    """The file order (the shipped one: `order`'s out-of-fold ranks) re-ranked by `DenseFusion` with the order of
    each file's best cosine among the channel's head functions (the first `head` of the function head), for every
    (head, file depth, k, weight); the query path's `DenseFileChannel` computes the same."""
    rank_column = "rank_learned" if order == "learned" else "rank_fusion"
    table = files.frame.select("qid", "repo", "label").with_columns(
        ranks["path"], ranks[rank_column].alias("rank")).filter(pl.col("qid").is_in(list(repo_of))).sort(
        ["qid", "rank"])
    settings = [(NO_CHANNEL, 0, 0, 0.0, 0.0)] + [("dense", h, d, k, w) for h, d, k, w in itertools.product(
        [int(x) for x in args.file_heads.split(",")], [int(x) for x in args.file_depths.split(",")],
        [float(x) for x in args.ks.split(",")], [float(x) for x in args.file_weights.split(",")])]
    subs = {r: table.filter(pl.col("repo") == r) for r in repos}
    grid: dict[str, dict] = {}
    for name, head, depth, rrf_k, weight in settings:
        per_repo = {}
        for repo, sub in subs.items():
            paths, qids = sub["path"].to_list(), sub["qid"].to_numpy()
            scores = -sub["rank"].to_numpy().astype(np.float64)
            if name != NO_CHANNEL:
                fusion = DenseFusion(depth, rrf_k, weight)
                for qid in np.unique(qids):
                    rows = np.flatnonzero(qids == qid)
                    best = file_cosines(heads[qid][:head], cosine_of[qid])
                    fused = fusion.fuse([paths[r] for r in rows], best)
                    place = {path: n for n, path in enumerate(fused)}
                    for row in rows:
                        scores[row] = -place[paths[row]]
            per_repo[repo] = ranking_metrics(sub.select("qid", "label"), scores, files.gold)
        key = f"{name}/{head}/{depth}/{rrf_k}/{weight}"
        grid[key] = {"per_repo": per_repo, "overall": weighted(per_repo, repos)}
        print("files", key, grid[key]["overall"], flush=True)
    return grid


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
