"""Features of the corpus: each labelled commit's candidates at a sampled snapshot at or before its parent.

A full snapshot per commit does not fit the CPU budget, so per repository the labelled commits are
taken oldest first in groups of `snapshot_every`; each group is answered on one snapshot, the parent of
its oldest commit (so no snapshot is ever later than a commit's parent: nothing from the future). The
staleness (first-parent commits between the snapshot and the commit's parent) is recorded per query
and summarised in the model card. Candidates and features come from `semantica.stores.localizer` (the code
the query path runs). Output per repository: `OUT/<owner+name>.files.parquet`,
`.functions.parquet` (one row per candidate) and `.queries.parquet` (one row per commit); a written
repository is skipped, so an interrupted run resumes.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import polars as pl

from jobs.localizer.corpus import LabelledCommit, check_corpus
from jobs.localizer.gitread import TreeReader
from jobs.localizer.history import CorpusHistory
from semantica.config import LocalizerConfig, LocalizerMineConfig
from semantica.stores.localizer.blobcache import BlobCache
from semantica.stores.localizer.features import FILE_FEATURES, FUNCTION_FEATURES, SCHEMA_VERSION, CandidateGenerator
from semantica.stores.localizer.models import candidate_config
from semantica.stores.localizer.table import LocalizerTableBuilder

LEVELS = ("files", "functions")


def normalize_function(key: str) -> str:
    return key.removesuffix(".__init__")


BASE = {"qid": pl.Int32, "key": pl.Utf8, "label": pl.Int8, "fusion": pl.Float32}
FUNCTION_BASE = BASE | {"body_score": pl.Float32}  # a tie order for equal fusion scores (lab/localizer/function_recall.py)


def _frame(rows: list[tuple], features: Sequence[str], block: list[np.ndarray], base_schema: dict = BASE,
           ) -> pl.DataFrame:
    base = pl.DataFrame(rows, schema=base_schema, orient="row")
    matrix = np.concatenate(block) if block else np.zeros((0, len(features)), dtype=np.float32)
    return base.hstack(pl.DataFrame(matrix, schema={f: pl.Float32 for f in features}, orient="row"))


class FeatureMiner:
    """Writes the feature tables of one repository at a time."""

    def __init__(self, config: LocalizerConfig, repos_dir: str | Path, out: str | Path,
                 log: Callable[[str], None] = print, blob_cache: BlobCache | None = None,
                 history: CorpusHistory | None = None, mine: LocalizerMineConfig | None = None) -> None:
        """`history`: votes and priors as of each snapshot commit (None: the history features stay NaN);
        `mine`: the training config's `localizer_mine` (its defaults when None)."""
        self.config = config
        self.mine = mine or LocalizerMineConfig()
        self.blob_cache = blob_cache
        self.history = history
        self.repos_dir = Path(repos_dir)
        self.out = Path(out)
        self.generator = CandidateGenerator(candidate_config(config))
        self.log = log

    def groups(self, todo: list[LabelledCommit], position: dict[str, int]) -> list[list[LabelledCommit]]:
        """Oldest-first commits cut into groups answered on one snapshot (the parent of the group's first):
        at most `snapshot_every` commits, none more than `max_staleness` first-parent commits after it."""
        groups: list[list[LabelledCommit]] = []
        for commit in todo:
            if groups and len(groups[-1]) < self.mine.snapshot_every and \
                    position[groups[-1][0].sha] - position[commit.sha] <= self.mine.max_staleness:
                groups[-1].append(commit)
            else:
                groups.append([commit])
        return groups

    def mine_repo(self, repo: str, commits: list[LabelledCommit], qid_base: int) -> int:
        check_corpus([repo])
        stem = self.out / repo.replace("/", "+")
        if Path(f"{stem}.queries.parquet").is_file():
            return 0
        git_dir = self.repos_dir / repo.replace("/", "+") / "repo"
        reader = TreeReader(str(git_dir), self.config.max_file_bytes)
        builder = LocalizerTableBuilder(self.blob_cache)
        position = reader.first_parent_positions()
        newest = sorted((c for c in commits if c.sha in position), key=lambda c: position[c.sha])
        todo = newest[: self.mine.max_queries_per_repo][::-1]  # oldest first
        file_rows: list[tuple] = []
        func_rows: list[tuple] = []
        file_block: list[np.ndarray] = []
        func_block: list[np.ndarray] = []
        queries: list[dict] = []
        start = time.perf_counter()
        for group in self.groups(todo, position):
            snap_sha = group[0].parent
            snapshot = builder.build(reader.texts(snap_sha))
            snapshot_functions = {normalize_function(k) for k in snapshot.function_index}
            past = self.history.at(git_dir, snap_sha) if self.history is not None else None
            for commit in group:
                qid = qid_base + len(queries)
                cands = self.generator.build(snapshot, commit.query, past.signals(commit.query) if past else None)
                gold_files = set(commit.files)
                gold_funcs = {normalize_function(f) for f in commit.functions}
                file_rows += [(qid, k, int(k in gold_files), float(s)) for k, s in zip(cands.files, cands.file_fusion)]
                func_rows += [(qid, k, int(normalize_function(k) in gold_funcs), float(s), float(b))
                              for k, s, b in zip(cands.functions, cands.function_fusion, cands.function_body)]
                file_block.append(cands.file_features)
                func_block.append(cands.function_features)
                queries.append({"qid": qid, "repo": repo, "sha": commit.sha, "snapshot": snap_sha,
                                "staleness": position.get(snap_sha, 0) - position[commit.sha] - 1,
                                "kind": commit.kind, "n_gold_files": len(gold_files),
                                "n_gold_functions": len(gold_funcs),
                                "gold_files_in_snapshot": sum(1 for f in gold_files if f in snapshot.file_index),
                                "gold_functions_in_snapshot": len(gold_funcs & snapshot_functions),
                                "file_pool": cands.file_pool,
                                "history_commits": len(past.searcher.history.records) if past else 0})
        reader.close()
        self.out.mkdir(parents=True, exist_ok=True)
        _frame(file_rows, FILE_FEATURES, file_block).write_parquet(f"{stem}.files.parquet")
        _frame(func_rows, FUNCTION_FEATURES, func_block, FUNCTION_BASE).write_parquet(f"{stem}.functions.parquet")
        pl.DataFrame(queries).with_columns(pl.lit(SCHEMA_VERSION).alias("schema_version")).write_parquet(
            f"{stem}.queries.parquet")
        self.log(f"{repo}: {len(queries)} queries, {len({q['snapshot'] for q in queries})} snapshots, "
                 f"{time.perf_counter() - start:.0f} s")
        return len(queries)
