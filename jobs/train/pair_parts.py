"""The mined pairs' Parquet parts (`OUT/<owner+name>/*.parquet`), read with pyarrow alone.

`semantica train-encoder` reads pairs through this module on a GPU machine that has pyarrow but neither polars
nor the miner's indexing stack; `jobs.train.pairs.load_pairs` finds its parts here too.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any


class PairsError(ValueError):
    """The corpus or a repository cannot be mined, or there are no pairs to read; the message says why."""


def pair_parts(out: str | Path) -> list[Path]:
    """Every part under `out`, in a stable order (repository, then part name)."""
    parts = sorted(Path(out).glob("*/*.parquet"))
    if not parts:
        raise PairsError(f"no pairs under {out}: run `semantica mine-pairs --out {out}` first")
    return parts


def read_pair_rows(out: str | Path, columns: Sequence[str]) -> list[dict[str, Any]]:
    """The wanted columns of every row, part by part, as dicts."""
    import pyarrow.parquet as pq

    rows: list[dict[str, Any]] = []
    for part in pair_parts(out):
        rows.extend(pq.read_table(part, columns=list(columns)).to_pylist())
    return rows
