"""A snapshot's history table as it was written while history also read functions: the same columns plus
`functions` (`path::Qualified.name` keys of the functions a commit changed) and `functions_skipped`, for the
tests that prove such a snapshot still loads and answers files-only."""

from __future__ import annotations

from pathlib import Path

import polars as pl

from semantica.stores.history.store import RECORDS_FILE

OLD_SCHEMA = {"sha": pl.Utf8, "parent": pl.Utf8, "author": pl.Utf8, "author_time": pl.Int64, "message": pl.Utf8,
              "files": pl.List(pl.Utf8), "functions": pl.List(pl.Utf8), "lines_changed": pl.Int64,
              "functions_skipped": pl.Boolean, "fix_like": pl.Boolean}


def rewrite_with_functions(history_dir: Path, functions_of: dict[str, list[str]]) -> None:
    """Rewrites the stored `commits.parquet` under `history_dir` in the old columns; each commit's `functions` are
    `functions_of[path]` for every file it changed (empty where the map has none)."""
    table = history_dir / RECORDS_FILE
    rows = pl.read_parquet(table).to_dicts()
    for row in rows:
        row["functions"] = [key for path in row["files"] for key in functions_of.get(path, [])]
        row["functions_skipped"] = False
    pl.DataFrame(rows, schema=OLD_SCHEMA).write_parquet(table)
