"""A snapshot's history on disk: its kept commit records (Parquet) and what they were read as of (JSON).
The BM25 index and the priors are rebuilt from these when a snapshot is opened (seconds), so the stored
form is one table that any tool can read."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from semantica.config import HistoryConfig
from semantica.stores.history.index import HistoryIndex
from semantica.stores.history.priors import Priors
from semantica.stores.history.records import RECORD_FIELDS, CommitRecord, History

RECORDS_FILE = "commits.parquet"
META_FILE = "history.json"
FIX_LIKE = "fix_like"


def _schema(pl: Any) -> dict[str, Any]:
    """The commits table's columns (polars is imported by whoever reads or writes the table: a query that opens
    no history, such as an identifier lookup, does not pay for it)."""
    return {"sha": pl.Utf8, "parent": pl.Utf8, "author": pl.Utf8, "author_time": pl.Int64, "message": pl.Utf8,
            "files": pl.List(pl.Utf8), "lines_changed": pl.Int64, FIX_LIKE: pl.Boolean}


def save_history(history: History, directory: str | Path) -> int:
    """Writes the history under `directory`; returns the bytes written."""
    import polars as pl

    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    rows = [{**r.to_dict(), FIX_LIKE: r.sha in history.fix_like} for r in history.records]
    pl.DataFrame(rows, schema=_schema(pl)).write_parquet(directory / RECORDS_FILE)
    meta = {"commit": history.commit, "commit_time": history.commit_time, "kept": len(history.records),
            "read_commits": history.read_commits, "cached_commits": history.cached_commits, "dropped": history.dropped,
            "live_files": sorted(history.live_files) if history.live_files is not None else None}
    (directory / META_FILE).write_text(json.dumps(meta, indent=1))
    return sum(f.stat().st_size for f in directory.iterdir() if f.is_file())


def load_history(directory: str | Path) -> History:
    """The stored history; only the record columns are read (a table written when history also read functions
    has `functions` and `functions_skipped` columns too: they are left on disk)."""
    import polars as pl

    directory = Path(directory)
    meta = json.loads((directory / META_FILE).read_text())
    frame = pl.read_parquet(directory / RECORDS_FILE, columns=[*RECORD_FIELDS, FIX_LIKE])
    records, fix_like = [], set()
    for row in frame.iter_rows(named=True):
        if row.pop(FIX_LIKE):
            fix_like.add(row["sha"])
        records.append(CommitRecord.from_dict(row))
    return History(meta["commit"], meta["commit_time"], records, fix_like, meta.get("read_commits", 0),
                   meta.get("cached_commits", 0), meta.get("dropped", {}), 0.0,
                   set(meta["live_files"]) if meta.get("live_files") is not None else None)


class HistorySearcher:
    """One snapshot's history, ready to query: file votes from similar commits, and file priors."""

    def __init__(self, history: History, config: HistoryConfig, token_cache: dict[str, list[str]] | None = None) -> None:
        self.history = history
        self.index = HistoryIndex(history.records, history.commit_time, config, history.live_files, token_cache)
        self.priors = Priors(history)

    @classmethod
    def open(cls, directory: str | Path, config: HistoryConfig) -> HistorySearcher:
        return cls(load_history(directory), config)
