"""Per-repository adaptation: a localizer model trained on one repository's own past commits.

At index time (`history.adapt.enabled`), each kept commit of the snapshot's history (all at or before the
snapshot's commit: semantica.history reads nothing later) becomes a query, its message, whose gold is the
files (and outer functions) it changed. Its candidates and features come from the shared localizer code
(`CandidateGenerator` over the snapshot's own files), and the model is fitted like the shipped one
(`semantica.localizer.fit`). One snapshot answers every training query: the code as of the snapshot, so a
fix's own edits are in the candidates' text (a bias toward the fixed state, never a look at the future).
The model is stored in the snapshot (`history/adapt/`, the layout of a shipped model directory) and the
localizer stage uses it in place of the shared model (serving/core/localizer/stage.py).
"""

from __future__ import annotations

import dataclasses
import json
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from semantica.config import Config, HistoryAdaptConfig, LocalizerConfig, TrainConfig, load_train_config
from semantica.history.gitread import source_tree_texts
from semantica.history.records import CommitRecord
from semantica.localizer.features import FILE_FEATURES, FUNCTION_FEATURES, SCHEMA_VERSION, CandidateGenerator
from semantica.localizer.fit import fit_ranker
from semantica.localizer.models import ADAPT_DIR, FILE_MODEL, FUNCTION_MODEL, META, candidate_config
from semantica.localizer.snapshot import Snapshot, SnapshotBuilder

__all__ = ["ADAPT_DIR", "AdaptedModels", "RepositoryAdapter", "adapt_to_history"]


def normalize_function(key: str) -> str:
    """A class's `__init__` counts as the class (the SWE-bench gold's rule, as the corpus features use)."""
    return key.removesuffix(".__init__")


@dataclass
class AdaptedModels:
    """The models one repository's history trained (`functions` None: too few function labels) and what
    they were trained on (`meta`: schema, snapshot commit, training commits and timings)."""

    files: Any
    functions: Any
    meta: dict[str, Any] = field(default_factory=dict)

    def save(self, directory: str | Path) -> int:
        """Writes files.txt, functions.txt (when trained) and meta.json; returns the bytes written."""
        root = Path(directory)
        root.mkdir(parents=True, exist_ok=True)
        self.files.save_model(str(root / FILE_MODEL))
        if self.functions is not None:
            self.functions.save_model(str(root / FUNCTION_MODEL))
        (root / META).write_text(json.dumps(self.meta, indent=1) + "\n")
        return sum(f.stat().st_size for f in root.iterdir() if f.is_file())


@dataclass
class _Examples:
    files: list[pl.DataFrame] = field(default_factory=list)
    functions: list[pl.DataFrame] = field(default_factory=list)
    shas: list[str] = field(default_factory=list)
    function_queries: int = 0


def _frame(qid: int, keys: Sequence[str], labels: Sequence[int], fusion: np.ndarray, matrix: np.ndarray,
           features: Sequence[str]) -> pl.DataFrame:
    base = pl.DataFrame({"qid": [qid] * len(keys), "label": list(labels), "fusion": fusion.astype(np.float32)},
                        schema={"qid": pl.Int32, "label": pl.Int8, "fusion": pl.Float32})
    return base.hstack(pl.DataFrame(matrix, schema={f: pl.Float32 for f in features}, orient="row"))


class RepositoryAdapter:
    """Trains `AdaptedModels` on a snapshot and the kept commit records of its history."""

    def __init__(self, adapt: HistoryAdaptConfig, localizer: LocalizerConfig, train: TrainConfig) -> None:
        self.adapt = adapt
        self.generator = CandidateGenerator(candidate_config(localizer))
        self.max_query_chars = train.localizer_corpus.max_query_chars  # as the shared model's corpus queries
        self.train_config = dataclasses.replace(train.localizer_train, num_rounds=adapt.num_rounds,
                                                min_data_in_leaf=adapt.min_data_in_leaf)

    def examples(self, snapshot: Snapshot, records: Sequence[CommitRecord]) -> _Examples:
        """Candidate rows of the newest `max_commits` records whose changed files exist in the snapshot."""
        out = _Examples()
        for record in records:
            if len(out.shas) >= self.adapt.max_commits:
                break
            gold_files = {p for p in record.files if p in snapshot.file_index}
            if not gold_files:
                continue
            qid = len(out.shas)
            out.shas.append(record.sha)
            cands = self.generator.build(snapshot, record.text()[: self.max_query_chars])
            out.files.append(_frame(qid, cands.files, [int(p in gold_files) for p in cands.files],
                                    cands.file_fusion, cands.file_features, FILE_FEATURES))
            gold_functions = {normalize_function(k) for k in record.functions}
            if self.adapt.functions and gold_functions:
                out.function_queries += 1
                out.functions.append(_frame(qid, cands.functions,
                                            [int(normalize_function(k) in gold_functions) for k in cands.functions],
                                            cands.function_fusion, cands.function_features, FUNCTION_FEATURES))
        return out

    def train(self, snapshot: Snapshot, records: Sequence[CommitRecord], commit: str = "") -> AdaptedModels | None:
        """Models from `records` (newest first, all at or before `commit`), or None below `min_queries`."""
        start = time.perf_counter()
        found = self.examples(snapshot, records)
        features_s = time.perf_counter() - start
        if len(found.shas) < self.adapt.min_queries:
            return None
        c, seed = self.train_config, self.train_config.seed
        files = fit_ranker(pl.concat(found.files), FILE_FEATURES, c.train_file_depth, c, seed)
        functions = None
        if found.function_queries >= self.adapt.min_queries:
            functions = fit_ranker(pl.concat(found.functions), FUNCTION_FEATURES, c.train_function_depth, c, seed)
        meta = {"schema_version": SCHEMA_VERSION, "file_features": list(FILE_FEATURES),
                "function_features": list(FUNCTION_FEATURES), "adapted": True, "commit": commit,
                "train_commits": found.shas, "function_queries": found.function_queries,
                "features_s": round(features_s, 2), "train_s": round(time.perf_counter() - start - features_s, 2),
                "params": {"num_rounds": c.num_rounds, "min_data_in_leaf": c.min_data_in_leaf, "seed": seed}}
        return AdaptedModels(files, functions, meta)


def adapt_to_history(config: Config, repo_path: str, history: Any) -> AdaptedModels | None:
    """The indexer's adaptation step (`history.adapt.enabled`): the repository's own models, trained on the kept
    commits of `history` (a `semantica.history` read, all at or before its commit) over the source files of that
    commit's tree; None below `history.adapt.min_queries`."""
    texts = source_tree_texts(repo_path, history.commit, config.localizer.max_file_bytes)
    adapter = RepositoryAdapter(config.history.adapt, config.localizer, load_train_config())  # conf/train.yaml
    return adapter.train(SnapshotBuilder().build(texts), history.records, history.commit)
