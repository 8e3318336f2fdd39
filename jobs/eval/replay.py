"""Replaying localization offline: the pipeline's localization tail over mined retriever lists, scored
against the gold.

`semantica mine swebench` (or `eval swebench --mine`) keeps each retriever's full ranked chunk list
per instance under `OUT/lists/`. Localization is a pure function of those lists, the chunks' paths,
kinds and symbols, and the query's intent, so any `query.localize_*` or `fusion.*` setting can be
measured over the whole split in seconds, without indexing or embedding again
(`semantica eval localize`). The stages come from `build_stages(config)` and localization runs through
`LocalizationTail.run`, as in `SearchPipeline._search`, so the numbers equal a full run's with the same
settings; only freshness and the learned localizer read a bare clone at the base commit instead of a snapshot.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl

from jobs.eval.instances import Instance, mirrors_dir
from jobs.eval.metrics import FUNCTION_METRICS, Prediction, evaluate
from jobs.eval.mine import LISTS_DIR, MineError, part_name
from jobs.eval.plan_lists import load_plan, merged_lists
from jobs.eval.swebench import TOP_N
from semantica.config import Config
from serving.core.intent import identifier_only
from serving.core.localization import LocalizationInputs, Ranked
from serving.planning.merge import PlanTrace
from serving.stages import Stages, build_stages


@dataclass(frozen=True)
class ChunkRef:
    """The chunk fields localization reads."""

    repo: str
    path: str
    symbol: str
    kind: str


class LocalizationReplay:
    """Runs the configured `Localizer` over stored lists."""

    def __init__(self, config: Config, mined_dir: str | os.PathLike[str],
                 repos_dir: str | os.PathLike[str] | None = None) -> None:
        self.config = config
        self.repos_dir = mirrors_dir(repos_dir)  # bare clones: the learned localizer reads them
        self.lists_dir = Path(mined_dir) / LISTS_DIR
        if not self.lists_dir.is_dir():
            raise MineError(f"no retriever lists under {self.lists_dir}: run `semantica mine swebench --out "
                            f"{mined_dir}` (or `eval swebench --mine {mined_dir}`) first")
        self.stages: Stages = build_stages(config)  # no retriever, no graph is used: their lists were mined
        self.intent = self.stages.intent  # intents are classified once, when an instance is first read
        self.mined_dir = Path(mined_dir)
        self._loaded: dict[str, Any] = {}
        self._plans: dict[str, PlanTrace] = {}

    def _load(self, inst: Instance) -> tuple[dict[str, list[tuple[str, int]]], dict[str, Any], Any] | None:
        """The instance's stored lists, chunk fields and intent, read once per replay object."""
        if inst.instance_id in self._loaded:
            return self._loaded[inst.instance_id]
        file = self.lists_dir / part_name(inst.instance_id)
        if not file.is_file():
            return None
        frame = pl.read_parquet(file).sort(["strategy", "rank"])
        lists: dict[str, list[tuple[str, int]]] = {}
        chunks: dict[str, Any] = {}
        for strategy, rank, chunk_id, path, symbol, kind in frame.select(
                "strategy", "rank", "chunk_id", "path", "symbol", "kind").iter_rows():
            lists.setdefault(strategy, []).append((chunk_id, rank))
            chunks[chunk_id] = ChunkRef(inst.repo, path, symbol, kind)
        plan = load_plan(self.mined_dir, part_name(inst.instance_id))  # sub-query lists
        if plan is not None:
            trace, fields = plan
            for chunk_id, (path, symbol, kind) in fields.items():
                chunks.setdefault(chunk_id, ChunkRef(inst.repo, path, symbol, kind))
            self._plans[inst.instance_id] = trace
        loaded = self._loaded[inst.instance_id] = (lists, chunks, self.intent.classify(inst.problem_statement))
        return loaded

    def predict(self, inst: Instance) -> Prediction | None:
        """The instance's file and function ranking, or None when it was never mined."""
        loaded = self._load(inst)
        if loaded is None:
            return None
        lists, chunks, intent = loaded
        if self.config.planning.enabled and inst.instance_id in self._plans:
            expansion = self.stages.expansion
            lists = merged_lists(expansion.merger, expansion.decomposer, lists, self._plans[inst.instance_id])
        files, functions = self.stages.localization.run(
            LocalizationInputs(lists, chunks, intent, max(TOP_N, self.config.query.file_rank_depth)),
            lambda ranked, ranked_functions: self._learned_blend(inst, ranked, ranked_functions))
        return Prediction([f["path"] for f in files[:TOP_N]], [f["function"] for f in functions[:TOP_N]])

    def _learned_blend(self, inst: Instance, files: Ranked, functions: Ranked) -> tuple[Ranked, Ranked]:
        """The learned localizer's ranking at the base commit, blended into today's (as `LearnedStage.apply`,
        which also leaves an identifier lookup as it is)."""
        if self.config.localizer.skip_identifier_queries and identifier_only(inst.problem_statement):
            return files, functions
        file_keys, function_keys = self.learned.blend(inst, [f["path"] for f in files], [f["function"] for f in functions])
        return ([{"repo": inst.repo, "path": key} for key in file_keys],
                [{"repo": inst.repo, "function": key} for key in function_keys])

    @property
    def learned(self):  # noqa: ANN201 - jobs.localizer.replay.LearnedReplay, built on first use
        key = id(self.config)
        if getattr(self, "_learned_for", None) != key:
            from jobs.localizer.replay import LearnedReplay

            self._learned, self._learned_for = LearnedReplay(self.config, self.repos_dir), key
        return self._learned

    def reconfigure(self, config: Config) -> None:
        """Replay again with other `query`/`fusion` settings, keeping what was read."""
        self.config = config
        self.stages = build_stages(config)

    def run(self, instances: Sequence[Instance], function_metrics: Sequence[str] = FUNCTION_METRICS) -> dict[str, Any]:
        """LocAgent metrics over the mined instances (the count of unmined ones is in `missing`)."""
        predictions = {}
        for inst in instances:
            prediction = self.predict(inst)
            if prediction is not None:
                predictions[inst.instance_id] = prediction
        if not predictions:
            raise MineError(f"none of the {len(instances)} instances has lists under {self.lists_dir}")
        result = evaluate(predictions, {i.instance_id: i.gold() for i in instances}, function_metrics=function_metrics)
        return result
