"""Mining labelled fused hits: queries with known answers, every fused hit and every retriever's list logged.

Each query becomes one ranking group: its first `mine.depth` fused hits, in fused order and
before any reranker, each with the 18 fusion features
(`semantica.hits.FEATURE_NAMES`) and a graded relevance label:

- golden sets: 1 when the hit matches a relevant path or `path::symbol`, else 0;
- SWE-bench instances: `function_gain` when the hit lies in a gold function (or a function nested in
  one), `file_gain` when it is elsewhere in a gold file, else 0.

Rows go to one Parquet file per query under `OUT/parts/`, and each retriever's whole ranked list to
`OUT/lists/` (what the localizer fuses, so it can be replayed and tuned offline); both are written
under a temporary name, then renamed, so an interrupted run resumes where it stopped and a torn file
never exists.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl

from jobs.eval.golden import GoldenQuery, hit_matches
from semantica.config import MineConfig
from semantica.hits import FEATURE_NAMES

PARTS_DIR = "parts"
LISTS_DIR = "lists"  # each strategy's full ranked list per query: replaying localization offline needs them
ID_COLUMNS = ("source", "group", "query_id", "query", "chunk_id", "path", "symbol", "kind")
LABEL_COLUMN = "label"
RANK_COLUMN = "fused_rank"
MAX_PART_NAME = 80

Labeler = Callable[[str, str], int]
"""(path, symbol) of a hit -> its relevance label."""


class MineError(RuntimeError):
    """Mined data is missing or unusable; the message says what to run."""


def swebench_labeler(gold_files: Sequence[str], gold_functions: Sequence[str], config: MineConfig) -> Labeler:
    """Graded labels from an instance's gold: in a gold function > in a gold file > elsewhere."""
    files = set(gold_files)
    functions = set(gold_functions)

    def label(path: str, symbol: str) -> int:
        if symbol:
            key = f"{path}::{symbol}"
            if key in functions or any(key.startswith(f + ".") for f in functions):
                return config.function_gain
        return config.file_gain if path in files else 0

    return label


def golden_labeler(query: GoldenQuery) -> Labeler:
    """Binary labels from a golden query, by the golden metrics' own matching rule."""
    return lambda path, symbol: int(bool(hit_matches(path, symbol, query)))


def part_name(query_id: str) -> str:
    """A file name for a query id: readable prefix plus a hash, so any id (spaces, slashes) is safe."""
    readable = "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in query_id)[:MAX_PART_NAME]
    return f"{readable}-{hashlib.sha1(query_id.encode()).hexdigest()[:10]}.parquet"


@dataclass
class MinedQuery:
    """What mining one query produced."""

    query_id: str
    rows: int
    positives: int


class HitMiner:
    """Runs a query through a search pipeline (fusion only: no reranker) and logs its labelled hits."""

    def __init__(self, config: MineConfig, out_dir: str | os.PathLike[str]) -> None:
        self.config = config
        self.parts = Path(out_dir) / PARTS_DIR

    def done(self, query_id: str) -> bool:
        return (self.parts / part_name(query_id)).is_file() and (self.lists / part_name(query_id)).is_file()

    @property
    def lists(self) -> Path:
        return self.parts.parent / LISTS_DIR

    def mine(self, pipeline: Any, query_id: str, query: str, repo: str, source: str, label: Labeler) -> MinedQuery:
        from semantica.api import SearchRequest

        response, lists = pipeline.search_with_lists(SearchRequest(
            query=query, repos=[repo], k=self.config.depth, explain=True,
            late_interaction=False, cross_encoder=False))
        rows: list[dict[str, Any]] = []
        # the fused candidates only: a structural question's exact graph answers come first without fusion
        # features, and no reranker ever reorders them
        fused = [hit for hit in response.hits if hit.features]
        for rank, hit in enumerate(fused, 1):
            row: dict[str, Any] = {
                "source": source, "group": repo, "query_id": query_id, "query": query, "chunk_id": hit.chunk_id,
                "path": hit.path, "symbol": hit.symbol or "", "kind": hit.kind or "",
                RANK_COLUMN: rank, LABEL_COLUMN: label(hit.path, hit.symbol or ""),
            }
            row.update(zip(FEATURE_NAMES, (float(v) for v in hit.features or ())))
            rows.append(row)
        chunk_by_id = pipeline.snapshots.get(repo).chunk_by_id
        trace = getattr(lists, "trace", None)  # query planning: `lists/` keeps the main query's own lists
        if trace is not None:
            from jobs.eval.plan_lists import PLAN_LISTS_DIR, plan_frame

            self._write(self.parts.parent / PLAN_LISTS_DIR, query_id, plan_frame(trace, chunk_by_id, query_id))
            lists = trace.main
        self._write(self.parts, query_id, pl.DataFrame(rows, schema=mined_schema()))
        self._write(self.lists, query_id, self._lists_frame(lists, chunk_by_id, query_id))
        return MinedQuery(query_id, len(rows), sum(1 for r in rows if r[LABEL_COLUMN] > 0))

    @staticmethod
    def _lists_frame(lists: dict[Any, list[tuple[str, int]]], chunks: dict[str, Any], query_id: str) -> pl.DataFrame:
        """Every retriever's ranked chunk list (strategy, rank, chunk_id, path, symbol, kind)."""
        rows = [{"query_id": query_id, "strategy": strategy, "rank": rank, "chunk_id": chunk_id,
                 "path": chunks[chunk_id].path, "symbol": chunks[chunk_id].symbol or "",
                 "kind": chunks[chunk_id].kind or ""}
                for strategy, ranked in lists.items() for chunk_id, rank in ranked if chunk_id in chunks]
        return pl.DataFrame(rows, schema={"query_id": pl.Utf8, "strategy": pl.Utf8, "rank": pl.Int64,
                                          "chunk_id": pl.Utf8, "path": pl.Utf8, "symbol": pl.Utf8, "kind": pl.Utf8})

    @staticmethod
    def _write(directory: Path, query_id: str, frame: pl.DataFrame) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        final = directory / part_name(query_id)
        temp = final.with_name(final.name + ".tmp")
        frame.write_parquet(temp)
        os.replace(temp, final)


def mined_schema() -> dict[str, Any]:
    return {**{c: pl.Utf8 for c in ID_COLUMNS}, RANK_COLUMN: pl.Int64, LABEL_COLUMN: pl.Int64,
            **{name: pl.Float64 for name in FEATURE_NAMES}}


def parquet_files(sources: Iterable[str | os.PathLike[str]]) -> list[Path]:
    """Parquet files named directly, or found under a mine output directory (its `parts/`) or any directory."""
    files: list[Path] = []
    for source in sources:
        path = Path(source)
        if path.is_file():
            files.append(path)
        elif path.is_dir():
            root = path / PARTS_DIR if (path / PARTS_DIR).is_dir() else path
            files.extend(sorted(root.glob("*.parquet")))
        else:
            raise MineError(f"{path} does not exist: run `semantica mine swebench|golden --out {path}` first")
    if not files:
        raise MineError("no mined Parquet files found in " + ", ".join(str(s) for s in sources))
    return files


def load_mined(sources: Iterable[str | os.PathLike[str]]) -> pl.DataFrame:
    """Every mined row, one query after another, hits in fused order."""
    frames = [pl.read_parquet(f) for f in parquet_files(sources)]
    frame = pl.concat([f for f in frames if f.height], how="vertical") if any(f.height for f in frames) else None
    if frame is None:
        raise MineError("the mined files hold no rows")
    missing = [c for c in (*ID_COLUMNS, RANK_COLUMN, LABEL_COLUMN, *FEATURE_NAMES) if c not in frame.columns]
    if missing:
        raise MineError(f"mined data lacks column(s) {missing}: it was mined by another version; mine again")
    return frame.sort(["query_id", RANK_COLUMN], maintain_order=True)
