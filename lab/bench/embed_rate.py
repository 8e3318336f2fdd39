"""Chunks embedded per second by a running (or killed) build, read from its embedding cache's segment files.

    python -m lab.bench.embed_rate CACHE_DIR/embeddings [--since UNIX_SECONDS]

Each segment (`seg-*.npz`) is written when the encoder has filled `segment_vectors` vectors or a partition ends,
so its mtime and row count trace the embedding's progress without a progress bar: one line per segment with the
running total and the rate since `--since` (the first snapshot's publish under `index.dense_later`).
"""

from __future__ import annotations

import argparse
import datetime
from pathlib import Path

import numpy as np


def segments(directory: Path) -> list[tuple[float, int]]:
    rows = []
    for path in directory.glob("*/seg-*.npz"):
        try:
            count = len(np.load(path)["shas"])
        except (OSError, ValueError, KeyError):  # a segment being written
            continue
        rows.append((path.stat().st_mtime, count))
    return sorted(rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("embeddings", type=Path)
    parser.add_argument("--since", type=float, default=None)
    args = parser.parse_args(argv)
    rows = segments(args.embeddings)
    since = args.since if args.since is not None else (rows[0][0] if rows else 0.0)
    total = 0
    for mtime, count in rows:
        total += count
        rate = f"{total / (mtime - since):.2f}" if mtime > since else ""
        stamp = datetime.datetime.fromtimestamp(mtime, datetime.UTC).strftime("%H:%M:%S")
        print(stamp, count, total, rate)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
