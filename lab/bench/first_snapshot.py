"""Publish only the first `index.dense_later` snapshot of a repository (its chunk, token and function vectors
pending) and stop before the model passes, so queries on a first snapshot can be timed as long as needed.

    python -m lab.bench.first_snapshot --repo CLONE --name NAME --index-root DIR --cache-dir DIR

The in-process runner stops when the indexer hands it the model passes: the first snapshot is already current and
stays so (the successor is never written).
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any

from pipelines.indexer import Indexer
from pipelines.runner import LocalRunner
from semantica.config import load_config


class ModelPassesReached(Exception):
    """The indexer asked the runner for the model passes: the first snapshot is published."""


class FirstSnapshotOnly(LocalRunner):
    """The in-process runner, stopping at the model passes."""

    def run(self, tasks: Any, tokens: Any = None) -> Any:
        raise ModelPassesReached


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repo", required=True, help="a git working tree")
    parser.add_argument("--name", required=True)
    parser.add_argument("--index-root", type=Path, required=True)
    parser.add_argument("--cache-dir", type=Path, required=True)
    args = parser.parse_args(argv)
    config = load_config(None, [f"paths.index_root={args.index_root}", f"paths.cache_dir={args.cache_dir}",
                                "index.dense_later=true"], environ={})
    start = time.perf_counter()
    try:
        Indexer(config, FirstSnapshotOnly(config, progress=False), progress=False).index(args.repo, args.name)
    except ModelPassesReached:
        print(f"first snapshot of {args.name} published in {time.perf_counter() - start:.1f} s; no successor")
        return 0
    raise SystemExit("the indexer never reached the model passes (nothing to embed?)")


if __name__ == "__main__":
    raise SystemExit(main())
