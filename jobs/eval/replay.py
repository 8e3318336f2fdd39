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

from jobs.eval.granular_lists import INVENTORY, load_granular
from jobs.eval.instances import Instance, mirrors_dir
from jobs.eval.metrics import FUNCTION_METRICS, Prediction, evaluate
from jobs.eval.plan_lists import load_plan, merged_lists
from jobs.eval.swebench import TOP_N
from jobs.ltr.mine import LISTS_DIR, MineError, part_name
from semantica.api import SearchRequest
from semantica.config import Config
from semantica.granular import Granularity, path_of_key
from serving.core.granular_fusion import GranularLists, localizer_key
from serving.core.history_fusion import HistoryLists
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
                 repos_dir: str | os.PathLike[str] | None = None,
                 history_dir: str | os.PathLike[str] | None = None) -> None:
        self.config = config
        self.repos_dir = mirrors_dir(repos_dir)  # bare clones: the learned localizer reads them
        self.history_dir = history_dir
        self.lists_dir = Path(mined_dir) / LISTS_DIR
        if not self.lists_dir.is_dir():
            raise MineError(f"no retriever lists under {self.lists_dir}: run `semantica mine swebench --out "
                            f"{mined_dir}` (or `eval swebench --mine {mined_dir}`) first")
        self.stages: Stages = build_stages(config)  # no retriever, no graph is used: their lists were mined
        self.intent = self.stages.intent  # intents are classified once, when an instance is first read
        self._history_loaded: dict[str, Any] = {}
        self.mined_dir = Path(mined_dir)
        self._loaded: dict[str, Any] = {}
        self._granular_loaded: dict[str, GranularLists] = {}
        self.modes_used: dict[str, int] = {}
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
        granular = self._granular(inst) if self.config.granular.enabled else None
        plan = self.stages.planner.begin(SearchRequest(query=inst.problem_statement))  # the search mode's weights
        multipliers = plan.localize_multipliers if plan else None
        if plan is not None and self.config.planning.modes.apply_to_localize:
            self.modes_used[plan.mode.value] = self.modes_used.get(plan.mode.value, 0) + 1
        history = self._history(inst) if self.config.history.enabled else None
        files, functions = self.stages.localization.run(
            LocalizationInputs(lists, chunks, intent, max(TOP_N, self.config.query.file_rank_depth), granular,
                               multipliers, history),
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
        """Replay again with other `query`/`fusion`/`granular` settings, keeping what was read."""
        self.config = config
        self.stages = build_stages(config)

    def _history(self, inst: Instance) -> HistoryLists:
        """The instance's history lists (`mine history`), voted with the current `history.*` weights."""
        from jobs.eval.history_lists import MinedHistory

        if self.history_dir is None:
            raise MineError("history.enabled but no history lists: pass --history DIR (from `semantica mine history`)")
        mined = self._history_loaded.get(inst.instance_id)
        if mined is None:
            mined = self._history_loaded[inst.instance_id] = MinedHistory(self.history_dir, inst.instance_id)
        if not mined.available:
            raise MineError(f"no history lists for {inst.instance_id} under {self.history_dir}: run `semantica mine "
                            f"history --out {self.history_dir}` first")
        return HistoryLists.from_votes(inst.repo, mined.votes(self.config.history), mined.prior_ranking("file"),
                                       mined.prior_ranking("function"), self.config.history.k)

    def _granular(self, inst: Instance) -> GranularLists:
        """The instance's stored whole-file/function BM25 lists (`mine granular`), in localizer keys."""
        if inst.instance_id in self._granular_loaded:
            return self._granular_loaded[inst.instance_id]
        frame = load_granular(self.mined_dir, inst.instance_id)
        if frame is None:
            raise MineError(f"granular.enabled but no granular lists for {inst.instance_id}: run `semantica mine "
                            f"granular --out {self.mined_dir}` first")
        k = self.config.granular.k
        by_kind: dict[str, list[tuple[str, int]]] = {}
        for kind, rank, key in frame.sort(["kind", "rank"]).select("kind", "rank", "key").iter_rows():
            by_kind.setdefault(kind, []).append((localizer_key(inst.repo, key), rank))
        by_file: dict[str, list[str]] = {}
        for key, _ in by_kind.get(INVENTORY, []):
            by_file.setdefault(localizer_key(inst.repo, path_of_key(key.split("\x00", 1)[1])), []).append(key)
        lists = GranularLists(files=[kr for kr in by_kind.get(Granularity.FILE.value, []) if kr[1] <= k],
                              functions=[kr for kr in by_kind.get(Granularity.FUNCTION.value, []) if kr[1] <= k],
                              functions_of=lambda file_key: by_file.get(file_key, ()))
        self._granular_loaded[inst.instance_id] = lists
        return lists

    def run(self, instances: Sequence[Instance], function_metrics: Sequence[str] = FUNCTION_METRICS) -> dict[str, Any]:
        """LocAgent metrics over the mined instances (the count of unmined ones is in `missing`)."""
        predictions = {}
        self.modes_used = {}
        for inst in instances:
            prediction = self.predict(inst)
            if prediction is not None:
                predictions[inst.instance_id] = prediction
        if not predictions:
            raise MineError(f"none of the {len(instances)} instances has lists under {self.lists_dir}")
        result = evaluate(predictions, {i.instance_id: i.gold() for i in instances}, function_metrics=function_metrics)
        if self.modes_used:
            result["planning_modes"] = dict(self.modes_used)  # instances per search mode (planning)
        return result
