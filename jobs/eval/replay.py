"""Replaying localization offline: the `Localizer` over mined retriever lists, scored against the gold.

`semantica mine swebench` (or `eval swebench --mine`) keeps each retriever's full ranked chunk list
per instance under `OUT/lists/`. Localization is a pure function of those lists, the chunks' paths,
kinds and symbols, and the query's intent, so any `query.localize_*` or `fusion.*` setting can be
measured over the whole split in seconds, without indexing or embedding again
(`semantica eval localize`). The numbers equal a full run's with the same settings.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl

from jobs.eval.instances import Instance
from jobs.eval.metrics import Prediction, evaluate
from jobs.eval.swebench import TOP_N
from jobs.ltr.mine import LISTS_DIR, MineError, part_name
from semantica.config import Config
from semantica.hits import Strategy
from serving.fusion import WeightedRRF
from serving.intent import IntentClassifier
from serving.pipeline import Localizer


@dataclass(frozen=True)
class ChunkRef:
    """The chunk fields localization reads."""

    repo: str
    path: str
    symbol: str
    kind: str


class LocalizationReplay:
    """Runs the configured `Localizer` over stored lists."""

    def __init__(self, config: Config, mined_dir: str | os.PathLike[str]) -> None:
        self.config = config
        self.lists_dir = Path(mined_dir) / LISTS_DIR
        if not self.lists_dir.is_dir():
            raise MineError(f"no retriever lists under {self.lists_dir}: run `semantica mine swebench --out "
                            f"{mined_dir}` (or `eval swebench --mine {mined_dir}`) first")
        self.intent = IntentClassifier(config.intent)
        self.localizer = Localizer(config.query, WeightedRRF(config.fusion))

    def predict(self, inst: Instance) -> Prediction | None:
        """The instance's file and function ranking, or None when it was never mined."""
        file = self.lists_dir / part_name(inst.instance_id)
        if not file.is_file():
            return None
        frame = pl.read_parquet(file).sort(["strategy", "rank"])
        lists: dict[Strategy, list[tuple[str, int]]] = {}
        chunks: dict[str, Any] = {}
        for strategy, rank, chunk_id, path, symbol, kind in frame.select(
                "strategy", "rank", "chunk_id", "path", "symbol", "kind").iter_rows():
            lists.setdefault(Strategy.parse(strategy), []).append((chunk_id, rank))
            chunks[chunk_id] = ChunkRef(inst.repo, path, symbol, kind)
        intent = self.intent.classify(inst.problem_statement)
        files, functions = self.localizer.localize(lists, chunks, intent, max(TOP_N, self.config.query.file_rank_depth))
        return Prediction([f["path"] for f in files][:TOP_N], [f["function"] for f in functions][:TOP_N])

    def run(self, instances: Sequence[Instance]) -> dict[str, Any]:
        """LocAgent metrics over the mined instances (the count of unmined ones is in `missing`)."""
        predictions = {}
        for inst in instances:
            prediction = self.predict(inst)
            if prediction is not None:
                predictions[inst.instance_id] = prediction
        if not predictions:
            raise MineError(f"none of the {len(instances)} instances has lists under {self.lists_dir}")
        return evaluate(predictions, {i.instance_id: i.gold() for i in instances})
