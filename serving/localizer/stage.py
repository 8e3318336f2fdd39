"""Query-time localizer: candidates and features over the snapshot's files (semantica.stores.localizer), ranked by the
shipped models."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from semantica.config import EncoderConfig, LocalizerConfig
from semantica.languages.spans import spans_language
from semantica.stores.index_kinds.function_vectors import KIND as VECTORS_KIND
from semantica.stores.index_kinds.localizer import KIND as STORED_KIND
from semantica.stores.localizer.blobcache import open_blob_cache
from semantica.stores.localizer.dense import function_text
from semantica.stores.localizer.features import (
    FILE_FEATURES,
    FUNCTION_FEATURES,
    SCHEMA_VERSION,
    CandidateGenerator,
    CandidateSet,
    HistorySignals,
)
from semantica.stores.localizer.models import FILE_MODEL, META, candidate_config, model_root
from semantica.stores.localizer.table import LocalizerTable, LocalizerTableBuilder
from serving.core.intent import identifier_only
from serving.localizer.dense import DenseFunctionChannel
from serving.localizer.history_input import SnapshotHistory


class LocalizerModelError(ValueError):
    """The model directory is missing, incomplete or was trained on another feature schema."""


@dataclass
class Ranked:
    files: list[tuple[str, float]]
    functions: list[tuple[str, float]]
    candidates: CandidateSet


class LocalizerModels:
    """The file ranker of a model directory (files.txt, meta.json). A directory's functions.txt (what
    `train-localizer` also fits and reports) is not read: functions keep the candidates' fixed fusion."""

    def __init__(self, model_dir: str | Path) -> None:
        root = model_root(model_dir)
        meta_file = root / META
        if not meta_file.is_file():
            raise LocalizerModelError(f"no localizer model in {root} (expected {META}, {FILE_MODEL}): "
                                      f"run `semantica train-localizer --out {root}`")
        meta = json.loads(meta_file.read_text())
        if meta.get("schema_version") != SCHEMA_VERSION:
            raise LocalizerModelError(f"{root} was trained on feature schema {meta.get('schema_version')}, "
                                      f"this code computes schema {SCHEMA_VERSION}: retrain it")
        if tuple(meta.get("file_features", ())) != FILE_FEATURES or \
                tuple(meta.get("function_features", ())) != FUNCTION_FEATURES:
            raise LocalizerModelError(f"{root}: feature names differ from schema {SCHEMA_VERSION}: retrain it")
        self.meta = meta
        import lightgbm as lgb  # only when a model loads: lightgbm imports pandas, which the cold query path avoids

        self.files = lgb.Booster(model_file=str(root / FILE_MODEL)) if (root / FILE_MODEL).is_file() else None


def _order(keys: list[str], scores: np.ndarray) -> list[tuple[str, float]]:
    order = np.argsort(-scores, kind="stable")
    return [(keys[i], float(scores[i])) for i in order]


class LearnedLocalizer:
    """Ranks a query's candidates: learned models where present, else the fixed fusion of the cheap lists."""

    def __init__(self, config: LocalizerConfig, models: LocalizerModels | None) -> None:
        self.generator = CandidateGenerator(candidate_config(config))
        self.models = models

    def rank(self, snapshot: LocalizerTable, query: str, history: HistorySignals | None = None,
             learned_files: bool = True) -> Ranked:
        """File feature rows are built only when the file ranker will read them (candidates-first reads the fusion
        only); function rows never (no model ranks the functions at query time)."""
        cands = self.generator.build(snapshot, query, history, features=self.reads_features(learned_files),
                                     file_scorer=self.file_scorer(learned_files), function_features=False)
        return self.rank_candidates(cands, learned_files)

    def file_scorer(self, learned_files: bool) -> Callable[[np.ndarray], np.ndarray] | None:
        """The file ranker's scoring (feature rows -> scores) where it runs and the functions follow its order
        (`function_file_order: learned`); None where the functions follow the fixed fusion's file order."""
        models = self.models
        if not learned_files or models is None or models.files is None or \
                self.generator.config.function_file_order != "learned":
            return None
        return lambda rows: models.files.predict(rows, num_threads=1)

    def reads_features(self, learned_files: bool) -> bool:
        """Whether `rank_candidates` will predict with the file ranker (and so read the file feature rows)."""
        return learned_files and self.models is not None and self.models.files is not None

    def rank_candidates(self, cands: CandidateSet, learned_files: bool = True) -> Ranked:
        file_scores = cands.file_fusion
        if learned_files and cands.file_scores is not None:  # the scorer ran while the functions were drawn
            file_scores = cands.file_scores
        elif learned_files and self.models and self.models.files is not None and len(cands.files):
            file_scores = self.models.files.predict(cands.file_features, num_threads=1)
        return Ranked(_order(cands.files, np.asarray(file_scores)), _order(cands.functions, cands.function_fusion), cands)


def reads_history(config: LocalizerConfig) -> bool:
    """The learned file ranker reads history features: its answers name the past commits that voted (the votes
    cost ~1 ms; `HistoryStage` in serving/query/localize.py)."""
    return config.enabled and config.learned_files and config.history_features


def file_today_weight(config: LocalizerConfig, learned_files: bool | None = None) -> float:
    """Today's weight in the file blend: 0 where the learned file ranker runs (it ranks the files alone: blended,
    it lost on dev); `learned_files` is whether it runs for this query (default: `config.learned_files`)."""
    runs = config.learned_files if learned_files is None else learned_files
    return 0.0 if runs else config.today_weight


def vectors_building(served: Any) -> bool:
    """Whether `served`'s function vectors are still building (a first `index.dense_later` snapshot): the dense
    channel then does not run over it, rather than encode its candidate functions per query."""
    return hasattr(served, "building") and served.building(VECTORS_KIND)


def stores_history(served: Any) -> bool:
    """Whether the snapshot stores a history with at least one kept commit (`history.index` at index time, a git
    source with commits): without one every history feature is NaN, which a model trained with history never saw."""
    searcher = getattr(served, "history", None)
    return searcher is not None and bool(searcher.history.records)


def blend(today: list[str], learned: list[str], today_weight: float, learned_weight: float, rrf_k: float) -> list[str]:
    """Reciprocal-rank blend of today's fixed-fusion ranking and the localizer's (weights from conf). A weight
    of 0 takes that ranking out of the order, so `today_weight=0` is the localizer alone, but not its keys: they
    follow every ranked key, in their own order (the localizer ranks source files of every language with function
    spans, each by its score; a document or a file of an unparsed language today found must not vanish from the
    answer)."""
    scores: dict[str, float] = {}
    for ranking, weight in ((today, today_weight), (learned, learned_weight)):
        if weight <= 0:
            continue
        for rank, key in enumerate(dict.fromkeys(ranking), 1):
            scores[key] = scores.get(key, 0.0) + weight / (rrf_k + rank)
    order = {key: n for n, key in enumerate(dict.fromkeys([*today, *learned]))}
    return [*sorted(scores, key=lambda key: (-scores[key], order[key])), *(key for key in order if key not in scores)]


class LearnedStage:
    """The optional `localizer` stage of the query pipeline (`localizer.enabled`): per queried snapshot, its
    source files of every language with function spans (rebuilt from the chunks, as `file_lines` serves them)
    become a localizer `LocalizerTable` once per snapshot id; the ranked files and functions are blended into today's
    lists."""

    def __init__(self, config: LocalizerConfig, cache_dir: str | None = None,
                 encoder_config: EncoderConfig | None = None) -> None:
        """`cache_dir` (paths.cache_dir) holds the per-file parse cache unless `blob_cache_file` names one;
        `encoder_config` (the index encoder's) gives the dense function channel its runtime (`dense_model`)."""
        self.config = config
        self.dense = DenseFunctionChannel(config, encoder_config or EncoderConfig()) \
            if config.dense_model else None
        self._localizer: LearnedLocalizer | None = None
        self._snapshots: dict[str, LocalizerTable] = {}
        self._histories: dict[str, SnapshotHistory] = {}  # snapshot key -> its history inputs (the newest only)
        self._builder = LocalizerTableBuilder(open_blob_cache(config.blob_cache_file, cache_dir))
        self._lock = threading.Lock()
        self._models_lock = threading.Lock()  # the prefetch thread and the first query may both ask for the models
        self._candidates_only = LearnedLocalizer(config, None)  # a query that runs no model (no lightgbm import)

    def localizer(self) -> LearnedLocalizer:
        """The shared models' localizer, loaded once (importing lightgbm: ~0.4 s, so the CLI prefetches it)."""
        with self._models_lock:
            if self._localizer is None:
                c = self.config
                models = LocalizerModels(c.model_dir) if c.learned_files else None
                self._localizer = LearnedLocalizer(c, models)
            return self._localizer

    def preload(self, served: Any) -> None:
        """Load the models a query over `served` will run (a prefetch load); nothing when it runs none."""
        if self.dense is not None and not vectors_building(served):
            self.dense.warm_up()
            if hasattr(served, "index"):
                served.index(VECTORS_KIND)  # the stored function vectors, opened once per snapshot
        if self.runs_learned_files(served):
            self.localizer_for(served)

    def localizer_for(self, served: Any, learned_files: bool | None = None) -> LearnedLocalizer:
        """The shared models' localizer; a query that runs no model (`learned_files` false for it) gets the
        candidates-only localizer."""
        if learned_files is False:
            return self._candidates_only
        return self.localizer()

    def snapshot(self, served: Any) -> LocalizerTable:
        """`served`: a `semantica.snapshot.Snapshot` (repo, snapshot_id, chunks_by_path, file_lines); its stored
        localizer snapshot where the index holds one, else built here from its files (blob cache first)."""
        key = f"{served.repo}\x00{served.snapshot_id}"
        with self._lock:
            if key not in self._snapshots:
                stored = served.index(STORED_KIND) if hasattr(served, "index") else None
                if stored is not None:  # built at index time (the `localizer` index kind): no tokenizing here
                    self._snapshots = {key: stored}
                    return stored
                texts = {p: "\n".join(served.file_lines(p)) for p in served.chunks_by_path if spans_language(p)}
                self._snapshots = {key: self._builder.build(texts)}  # the newest snapshot only: memory stays flat
            return self._snapshots[key]

    def history(self, served: Any, query: str) -> HistorySignals | None:
        """The snapshot's history votes and priors as the corpus miner computes them (`localizer.history_features`);
        None when that is off or the snapshot stores no history (the model then sees NaN, as without history)."""
        if not self.config.history_features:
            return None
        searcher = getattr(served, "history", None)
        if searcher is None:
            return None
        key = f"{served.repo}\x00{served.snapshot_id}"
        with self._lock:
            if key not in self._histories:
                self._histories = {key: SnapshotHistory(searcher)}
            inputs = self._histories[key]
        return inputs.signals(query)

    def function_source(self, served: Any) -> Callable[[str], str | None]:
        """key -> the function's source in `served` (the dense channel's text); None for a key the snapshot's
        source files do not define."""
        snapshot = self.snapshot(served)
        lines: dict[str, list[str]] = {}  # each file rebuilt from its chunks once per query

        def text_of(key: str) -> str | None:
            position = snapshot.function_index.get(key)
            if position is None:
                return None
            doc = snapshot.functions[position]
            if doc.path not in lines:
                lines[doc.path] = served.file_lines(doc.path)
            return function_text(lines[doc.path], doc.start, doc.end)

        return text_of

    def runs_learned_files(self, served: Any) -> bool:
        """The learned file ranker runs for this snapshot unless it was trained with history features
        (`history_features`) and the snapshot stores no history (`stores_history`): then the query falls back to
        candidates-first (the cheap lists' fixed fusion blended into today's order), as with `learned_files` off."""
        c = self.config
        return c.learned_files and (not c.history_features or stores_history(served))

    def prefetch_query(self, query: str, served: Sequence[Any]) -> None:
        """Start the dense channel's query encoding when a search starts (it overlaps retrieval); nothing when the
        channel will not run or the stage will not re-rank this query."""
        if self.dense is not None and self.config.enabled and self.applies(query, len(served)) \
                and not vectors_building(served[0]):
            self.dense.encode_query(query)

    def applies(self, query: str, repos: int) -> bool:
        """Whether the stage re-ranks this query: not one over several repositories, nor a bare identifier
        lookup (`skip_identifier_queries`)."""
        return repos == 1 and not (self.config.skip_identifier_queries and identifier_only(query))

    def apply(self, query: str, served: Sequence[Any], files: list[dict[str, Any]],
              functions: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        """Today's file and function dicts, re-ranked where the stage `applies`, else left as they are."""
        if not self.applies(query, len(served)):
            return files, functions
        repo = served[0].repo
        c = self.config
        learned_files = self.runs_learned_files(served[0])
        dense = self.dense if not vectors_building(served[0]) else None
        query_vector = dense.encode_query(query) if dense is not None else None
        ranked = self.localizer_for(served[0], learned_files).rank(
            self.snapshot(served[0]), query, self.history(served[0], query), learned_files)
        file_order = blend([f["path"] for f in files if f["repo"] == repo], [k for k, _ in ranked.files],
                           file_today_weight(c, learned_files), c.learned_weight, c.blend_rrf_k)
        function_order = blend([f["function"] for f in functions if f["repo"] == repo],
                               [k for k, _ in ranked.functions], c.today_weight, c.learned_weight, c.blend_rrf_k)
        if dense is not None and query_vector is not None:
            stored = served[0].index(VECTORS_KIND) if hasattr(served[0], "index") else None
            function_order, file_order = dense.rerank(query_vector, function_order, file_order,
                                                      self.function_source(served[0]), stored)
        return (_reordered(files, "path", file_order, repo, c.blend_rrf_k),
                _reordered(functions, "function", function_order, repo, c.blend_rrf_k))


def _reordered(items: list[dict[str, Any]], field: str, order: list[str], repo: str, rrf_k: float) -> list[dict[str, Any]]:
    """Today's dicts in the blended order (as many as today returned), each keeping what earlier stages attached
    (history voters, ...) with its blended score; a key only the localizer found gets a new dict."""
    known = {item[field]: item for item in items if item["repo"] == repo}
    return [{**known.get(key, {"repo": repo, field: key}), "score": round(1.0 / (rrf_k + n), 6)}
            for n, key in enumerate(order[: max(len(items), 1)], 1)]
