"""Re-rank a replay's cached file candidates under an edited rule, in seconds instead of a replay's minutes.

`lab.localizer.mswe_replay` keeps each instance's candidates and file feature rows in its cache
(`<cache>/localizer-candidates/*.npz`). This recomputes the fixed fusion from the cached list ranks, as
`CandidateGenerator.build` does, under an edit: paths a regex makes test code (the `is_test` column and the fusion's
test damping), per-list weights, or a path regex flipping the `is_example` column; then the file model re-orders
the rows, and each repository's file metrics are reported before and after. The rows only hold the files that made
the `max_file_candidates` cut: a repository under the cut (every file a candidate) is exact, a larger one misses a
file the edit would have let in. Against real replays (lab/notes/polyglot.md, 2026-12-07) the test-support rule gave
the replay's metrics to the second decimal.

    python -m lab.localizer.rescore --instances corpus.jsonl --cache CACHE --models models/localizer-history \
        --test-rule '(^|/)test-[^/]+/' --weight body=2 --out rescore.json
"""

from __future__ import annotations

import argparse
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from jobs.eval.instances import Instance, load_instances
from jobs.eval.metrics import mean_metrics
from semantica.stores.localizer.features import FILE_FEATURES, FILE_LISTS, RRF_K, CandidateConfig
from serving.localizer.stage import LocalizerModels

METRICS = ("Acc@1", "Acc@5", "Acc@10", "MRR")
COLUMN = {name: i for i, name in enumerate(FILE_FEATURES)}


@dataclass
class FusionEdit:
    """What changes against the product's fusion: paths made test code or examples, and list weights."""

    test_rule: re.Pattern[str] | None = None
    example_rule: re.Pattern[str] | None = None
    weights: dict[str, float] = field(default_factory=dict)

    def weight(self, name: str) -> float:
        return self.weights.get(name, 1.0)


@dataclass
class CachedCandidates:
    """One instance's file candidates and feature rows, as the replay stored them."""

    files: list[str]
    features: np.ndarray

    @classmethod
    def load(cls, cache: Path, instance_id: str) -> CachedCandidates | None:
        """The stored rows with feature columns (every stored config of an instance holds the same file rows);
        None when the replay never reached the instance."""
        for stored in sorted((cache / "localizer-candidates").glob(f"{instance_id.replace('/', '+')}-*.npz")):
            with np.load(stored, allow_pickle=False) as z:
                if z["file_features"].shape[1] == len(FILE_FEATURES):
                    return cls(list(z["files"]), z["file_features"].astype(np.float64))
        return None


class Rescorer:
    """The fixed fusion recomputed from the cached rows under an edit, then the file model's order."""

    def __init__(self, model: LocalizerModels, config: CandidateConfig) -> None:
        self.model = model
        self.config = config

    def edited_rows(self, cands: CachedCandidates, edit: FusionEdit) -> np.ndarray:
        rows = cands.features.copy()
        for n, path in enumerate(cands.files):
            if edit.test_rule is not None and edit.test_rule.search(path):
                rows[n, COLUMN["is_test"]] = 1.0
            if edit.example_rule is not None and edit.example_rule.search(path):
                rows[n, COLUMN["is_example"]] = 1.0
        return rows

    def fusion(self, rows: np.ndarray, edit: FusionEdit) -> np.ndarray:
        """`CandidateGenerator.build`'s fusion: list reciprocal ranks, tests damped, named paths boosted."""
        score = np.zeros(len(rows))
        for name in FILE_LISTS:
            rank = rows[:, COLUMN[f"{name}_rank"]]
            score += np.where(np.isnan(rank), 0.0, edit.weight(name) / (RRF_K + np.nan_to_num(rank)))
        score *= np.where(rows[:, COLUMN["is_test"]] > 0, self.config.test_factor, 1.0)
        named = (rows[:, COLUMN["path_named"]] > 0) | (rows[:, COLUMN["module_named"]] > 0) | \
            (rows[:, COLUMN["frame_hits"]] > 0)
        return np.where(named, score * self.config.path_boost + 1.0 / RRF_K, score)

    def order(self, cands: CachedCandidates, edit: FusionEdit) -> list[str]:
        rows = self.edited_rows(cands, edit)
        fusion = self.fusion(rows, edit)
        by_fusion = np.lexsort((np.array(cands.files), -fusion))  # equal scores by path, as the generator breaks them
        rank = np.empty(len(rows))
        rank[by_fusion] = np.arange(1, len(rows) + 1)
        rows[:, COLUMN["fusion_rank"]] = rank
        rows[:, COLUMN["fusion_rr"]] = 1.0 / (RRF_K + rank)
        scores = self.model.files.predict(rows, num_threads=1) if len(rows) else np.zeros(0)
        return [cands.files[i] for i in np.argsort(-scores, kind="stable")]

    def fusion_reproduced(self, cands: CachedCandidates) -> bool:
        """Whether the unedited recomputation gives the stored fusion ranks (the check that the tool reads the
        rows as the generator wrote them)."""
        fusion = self.fusion(cands.features, FusionEdit())
        by_fusion = np.lexsort((np.array(cands.files), -fusion))
        return bool(np.array_equal(cands.features[by_fusion, COLUMN["fusion_rank"]], np.arange(1, len(cands.files) + 1)))


def by_repository(instances: Sequence[Instance], orders: dict[str, list[str]]) -> dict[str, dict[str, float]]:
    """File metrics per repository and over all (the instances the replay reached)."""
    groups: dict[str, list[tuple[list[str], list[str]]]] = {}
    for inst in instances:
        if inst.instance_id in orders:
            pair = (orders[inst.instance_id], inst.gold().files)
            groups.setdefault(inst.repo, []).append(pair)
            groups.setdefault("all", []).append(pair)
    return {repo: {"n": scores.n, **scores.metrics} for repo, pairs in sorted(groups.items())
            for scores in [mean_metrics(pairs, METRICS)]}


def parse_weights(values: Sequence[str]) -> dict[str, float]:
    weights = {}
    for value in values:
        name, _, weight = value.partition("=")
        if name not in FILE_LISTS or not weight:
            raise SystemExit(f"--weight: expected LIST=W with LIST one of {', '.join(FILE_LISTS)}, got {value!r}")
        weights[name] = float(weight)
    return weights


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--instances", required=True)
    parser.add_argument("--cache", required=True, help="a replay's --cache directory")
    parser.add_argument("--models", default="models/localizer-history")
    parser.add_argument("--test-rule", default="", help="regex: matching paths become test code")
    parser.add_argument("--example-rule", default="", help="regex: matching paths get is_example")
    parser.add_argument("--weight", action="append", default=[], metavar="LIST=W", help="a file list's fusion weight")
    parser.add_argument("--out", default="")
    args = parser.parse_args(argv)
    edit = FusionEdit(re.compile(args.test_rule) if args.test_rule else None,
                      re.compile(args.example_rule) if args.example_rule else None, parse_weights(args.weight))
    rescorer = Rescorer(LocalizerModels(args.models), CandidateConfig())
    instances = load_instances(args.instances)
    cached = {i.instance_id: c for i in instances if (c := CachedCandidates.load(Path(args.cache), i.instance_id))}
    unreproduced = sorted(k for k, c in cached.items() if not rescorer.fusion_reproduced(c))
    report = {"args": vars(args), "instances": len(cached), "fusion_not_reproduced": unreproduced}
    for row, row_edit in (("stored", FusionEdit()), ("edited", edit)):
        report[row] = by_repository(instances, {k: rescorer.order(c, row_edit) for k, c in cached.items()})
        print(f"{row}: " + "  ".join(f"{repo.rpartition('/')[2]} " + "/".join(
            f"{100 * m[name]:.1f}" for name in METRICS) for repo, m in report[row].items()), flush=True)
    print(f"{len(cached)} instances, fusion not reproduced for {len(unreproduced)}")
    if args.out:
        Path(args.out).write_text(json.dumps(report, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
