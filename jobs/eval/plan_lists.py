"""Mined planning lists: each sub-query's ranked lists of a query.

`semantica mine` (and `eval swebench --mine`) writes them under `OUT/plan_lists/` beside the main
query's lists (`OUT/lists/`, which stay the main query's own lists), so that `semantica eval localize`
can replay localization with decomposition on or off, and with other weights, in seconds:
`ListMerger.merge` is the same function the pipeline runs.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import polars as pl

from semantica.hits import RankedList
from serving.planning.decompose import SubQueryKind
from serving.planning.merge import PlanTrace, SubQueryLists

PLAN_LISTS_DIR = "plan_lists"
SUB = "sub"
KINDS = frozenset(kind.value for kind in SubQueryKind)
"""Lists mined before the other kinds left (weighted 0 then, so never fused) are skipped."""
SCHEMA = {"query_id": pl.Utf8, "source": pl.Utf8, "sub_index": pl.Int64, "kind": pl.Utf8, "text": pl.Utf8,
          "strategy": pl.Utf8, "rank": pl.Int64, "chunk_id": pl.Utf8, "path": pl.Utf8, "symbol": pl.Utf8,
          "chunk_kind": pl.Utf8}


def plan_frame(trace: PlanTrace, chunks: dict[str, Any], query_id: str) -> pl.DataFrame:
    """Every sub-query list of `trace` as rows (chunks unknown to `chunks` dropped)."""
    rows: list[dict[str, Any]] = []

    def add(source: str, index: int, kind: str, text: str, strategy: str, ranked: RankedList) -> None:
        for chunk_id, rank in ranked:
            chunk = chunks.get(chunk_id)
            if chunk is not None:
                rows.append({"query_id": query_id, "source": source, "sub_index": index, "kind": kind, "text": text,
                             "strategy": strategy, "rank": rank, "chunk_id": chunk_id, "path": chunk.path,
                             "symbol": chunk.symbol or "", "chunk_kind": chunk.kind or ""})

    for index, sub in enumerate(trace.sub_queries):
        for strategy, ranked in sub.lists.items():
            add(SUB, index, sub.kind.value, sub.text, strategy, ranked)
    return pl.DataFrame(rows, schema=SCHEMA)


def load_plan(directory: str | os.PathLike[str], file_name: str) -> tuple[PlanTrace, dict[str, tuple[str, str, str]]] | None:
    """The mined trace of one query (main lists left empty: they live in `lists/`) and the chunk
    fields (path, symbol, kind) of every chunk in it; None when the query was mined without them."""
    path = Path(directory) / PLAN_LISTS_DIR / file_name
    if not path.is_file():
        return None
    frame = pl.read_parquet(path).sort(["source", "sub_index", "strategy", "rank"])
    subs: dict[int, SubQueryLists] = {}
    fields: dict[str, tuple[str, str, str]] = {}
    for source, index, kind, text, strategy, rank, chunk_id, cpath, symbol, ckind in frame.select(
            "source", "sub_index", "kind", "text", "strategy", "rank", "chunk_id", "path", "symbol",
            "chunk_kind").iter_rows():
        fields[chunk_id] = (cpath, symbol, ckind)
        if source != SUB or kind not in KINDS:  # only sub-query lists are replayed, of the kinds that still run
            continue
        sub = subs.setdefault(index, SubQueryLists(SubQueryKind.parse(kind), text))
        sub.lists.setdefault(strategy, []).append((chunk_id, rank))
    trace = PlanTrace(main={}, sub_queries=[subs[i] for i in sorted(subs)])
    return trace, fields


def merged_lists(merger: Any, decomposer: Any, main: dict[str, RankedList], trace: PlanTrace) -> dict[str, RankedList]:
    """What the pipeline would have fused with the current `planning` config, from mined lists."""
    subs = trace.sub_queries if decomposer.config.enabled else []
    return merger.merge(main, subs) if subs else main
