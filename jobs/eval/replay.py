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

from jobs.eval.granular_lists import INVENTORY, load_granular
from jobs.eval.instances import MIRRORS_ENV, Instance, find_clone, mirrors_dir, repo_candidates
from jobs.eval.metrics import FUNCTION_METRICS, Prediction, evaluate
from jobs.eval.plan_lists import load_plan, merged_lists
from jobs.eval.swebench import TOP_N
from jobs.ltr.mine import LISTS_DIR, MineError, part_name
from semantica.config import Config
from semantica.granular import Granularity, path_of_key
from semantica.hits import Strategy, strategy_key
from serving.core.fusion import WeightedRRF
from serving.core.granular_fusion import GranularLists, localizer_key
from serving.core.history_fusion import HistoryLists
from serving.core.intent import IntentClassifier
from serving.core.localize import Localizer
from serving.planning.analyzer import ModeWeights
from serving.planning.decompose import QueryDecomposer
from serving.planning.merge import ListMerger, PlanTrace
from serving.planning.multihop import MultiHop


class ReplayPlanning:
    """The planning pieces a replay needs (no retriever, no graph: their lists were mined)."""

    def __init__(self, config: Config) -> None:
        self.merger = ListMerger(config.planning)
        self.decomposer = QueryDecomposer(config.planning.decompose)
        self.multihop = MultiHop(config.planning.multihop)


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
        self.repos_dir = mirrors_dir(repos_dir)  # bare clones, read only for `final_order.beta` (freshness)
        self.history_dir = history_dir
        self.lists_dir = Path(mined_dir) / LISTS_DIR
        if not self.lists_dir.is_dir():
            raise MineError(f"no retriever lists under {self.lists_dir}: run `semantica mine swebench --out "
                            f"{mined_dir}` (or `eval swebench --mine {mined_dir}`) first")
        self.intent = IntentClassifier(config.intent)
        self.localizer = Localizer(config.query, WeightedRRF(config.fusion), config.granular, config.history)
        self._history_loaded: dict[str, Any] = {}
        self._mode_weights = self.mode_weights
        self.mined_dir = Path(mined_dir)
        self._loaded: dict[str, Any] = {}
        self._granular_loaded: dict[str, GranularLists] = {}
        self._final_orders: dict[int, Any] = {}
        self.modes_used: dict[str, int] = {}
        self._plans: dict[str, PlanTrace] = {}
        self.planning = ReplayPlanning(config)

    @property
    def mode_weights(self) -> ModeWeights | None:
        """The planner's search-mode weights, when the pipeline would apply them to localization."""
        p = self.config.planning
        return ModeWeights(p) if p.enabled and p.analyzer.enabled and p.modes.apply_to_localize else None

    def _load(self, inst: Instance) -> tuple[dict[Strategy, list[tuple[str, int]]], dict[str, Any], Any] | None:
        """The instance's stored lists, chunk fields and intent, read once per replay object."""
        if inst.instance_id in self._loaded:
            return self._loaded[inst.instance_id]
        file = self.lists_dir / part_name(inst.instance_id)
        if not file.is_file():
            return None
        frame = pl.read_parquet(file).sort(["strategy", "rank"])
        lists: dict[Strategy, list[tuple[str, int]]] = {}
        chunks: dict[str, Any] = {}
        for strategy, rank, chunk_id, path, symbol, kind in frame.select(
                "strategy", "rank", "chunk_id", "path", "symbol", "kind").iter_rows():
            lists.setdefault(strategy_key(strategy), []).append((chunk_id, rank))
            chunks[chunk_id] = ChunkRef(inst.repo, path, symbol, kind)
        plan = load_plan(self.mined_dir, part_name(inst.instance_id))  # sub-query and multi-hop lists
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
            lists = merged_lists(self.planning.merger, self.planning.decomposer, self.planning.multihop, lists,
                                 self._plans[inst.instance_id], inst.problem_statement, intent)
        granular = self._granular(inst) if self.config.granular.enabled else None
        multipliers = None
        if self._mode_weights is not None:
            mode, multipliers = self._mode_weights.for_query(inst.problem_statement)
            self.modes_used[mode.value] = self.modes_used.get(mode.value, 0) + 1
        history = self._history(inst) if self.config.history.enabled else None
        files, functions = self.localizer.localize(lists, chunks, intent, max(TOP_N, self.config.query.file_rank_depth),
                                                   granular, multipliers, history)
        files = self._final_order(inst, files)  # trust (and freshness) on the file list; weights 0 = as is
        file_keys, function_keys = [f["path"] for f in files], [f["function"] for f in functions]
        if self.config.localizer.enabled:  # the learned localizer, blended into today's ranking
            file_keys, function_keys = self.learned.blend(inst, file_keys, function_keys)
        return Prediction(file_keys[:TOP_N], function_keys[:TOP_N])

    @property
    def learned(self):  # noqa: ANN201 - jobs.localizer.replay.LearnedReplay, built on first use
        key = id(self.config)
        if getattr(self, "_learned_for", None) != key:
            from jobs.localizer.replay import LearnedReplay

            self._learned, self._learned_for = LearnedReplay(self.config), key
        return self._learned

    def _final_order(self, inst: Instance, files: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """`final_order` on the replayed files: trust rules, and freshness from the repository's clone under
        `repos_dir` (or $SEMANTICA_MIRRORS) at the instance's base commit."""
        from serving.planning.final_order import FinalOrder

        order = self._final_orders.get(id(self.config))
        if order is None:
            order = self._final_orders[id(self.config)] = FinalOrder(self.config.final_order, self.config.paths.cache_dir)
        fresh = None
        if self.config.final_order.beta:
            if self.repos_dir is None:
                raise MineError("final_order.beta reads file ages from the repositories' clones: pass --repos-dir DIR "
                                f"(or set {MIRRORS_ENV})")
            git_dir = find_clone(self.repos_dir, inst.repo) or repo_candidates(self.repos_dir, inst.repo)[0]
            fresh = order.freshness.of_git(str(git_dir), inst.base_commit, inst.repo)
        return order.order_files(files, lambda _repo, path: fresh(path) if fresh else 0.0)

    def reconfigure(self, config: Config) -> None:
        """Replay again with other `query`/`fusion`/`granular` settings, keeping what was read."""
        self.config = config
        self.localizer = Localizer(config.query, WeightedRRF(config.fusion), config.granular, config.history)
        self._mode_weights = self.mode_weights
        self.planning = ReplayPlanning(config)

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
