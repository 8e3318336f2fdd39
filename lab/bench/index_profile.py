"""Where in-process indexing spends its time, per stage, on one repository with empty caches (a benchmark).

    python -m lab.bench.index_profile --repo DIR [--commit SHA] [--name NAME] [--work DIR] [--out FILE]

Runs `Indexer.index` under cProfile into a fresh index root and cache (a temporary directory, or `--work`,
which must not hold a cache yet and is kept: a later run, an evaluation at neighbouring commits say, reuses
what this build cached), then reports the driver's own stage
seconds (discover, plan, parse+embed, resolve, tokens, write, publish) and the profiler's inclusive time of
the functions that make up each stage (tokenise, ONNX forward pass, pooling, token-vector compression,
parse, Lucene and FAISS writes), with the load average beside them: the machine is shared.
"""

from __future__ import annotations

import argparse
import cProfile
import json
import os
import pstats
import tempfile
import time
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[2]
RESULTS = REPO_ROOT / "lab" / "results" / "fast" / "index_profile.json"
TOP_FUNCTIONS = 25

# (stage label, file suffix, function name): the profiler's inclusive time of each (first match wins)
STAGE_FUNCTIONS = (
    ("discover", "pipelines/discover.py", "read"),
    ("parse/chunk", "pipelines/parse/file_parser.py", "parse"),
    ("tokenise", "semantica/runtime/encoder.py", "encode"),
    ("pad", "semantica/runtime/encoder.py", "pad"),
    ("encoder forward (ORT)", "semantica/runtime/onnx_runtime.py", "__call__"),
    ("embed (all, incl. pooling + token split)", "semantica/runtime/encoder.py", "encode_with_tokens"),
    ("token vectors: compress", "semantica/stores/token_vectors.py", "encode"),
    ("token vectors: codec fit", "semantica/stores/token_vectors.py", "fit"),
    ("embedding cache write", "pipelines/embed.py", "put_many"),
    ("graph resolve", "pipelines/parse/resolution.py", "resolve"),
    ("snapshot write (all)", "pipelines/write.py", "write"),
    ("write: faiss", "semantica/stores/index_kinds/vectors.py", "write"),
    ("write: lucene", "semantica/stores/index_kinds/lucene.py", "write"),
    ("write: exact", "semantica/stores/index_kinds/exact.py", "write"),
    ("write: function vectors", "semantica/stores/index_kinds/function_vectors.py", "write"),
    ("write: tokens", "semantica/stores/index_kinds/tokens.py", "write"),
    ("write: history", "semantica/stores/index_kinds/history.py", "write"),
    ("write: localizer", "semantica/stores/index_kinds/localizer.py", "write"),
    ("write: parquet tables", "pipelines/write.py", "write_table"),
)


def stage_times(stats: pstats.Stats) -> dict[str, float]:
    """Inclusive seconds of each `STAGE_FUNCTIONS` entry (0 when not called)."""
    out: dict[str, float] = {}
    table: Any = stats.stats  # type: ignore[attr-defined]
    for label, suffix, name in STAGE_FUNCTIONS:
        total = sum(row[3] for (file, _, function), row in table.items()
                    if file.endswith(suffix) and function == name)
        out[label] = round(total, 3)
    return out


def top_functions(stats: pstats.Stats, count: int) -> list[dict[str, Any]]:
    """The most expensive functions by own (exclusive) time."""
    table: Any = stats.stats  # type: ignore[attr-defined]
    rows = sorted(table.items(), key=lambda item: item[1][2], reverse=True)[:count]
    return [{"function": f"{Path(file).name}:{line}:{name}", "own_s": round(row[2], 3), "inclusive_s": round(row[3], 3),
             "calls": row[1]} for (file, line, name), row in rows]


class NotEmptyError(RuntimeError):
    """`--work` already holds a cache: the build would not start from empty caches."""


def profile(repo: str, name: str, overrides: list[str], commit: str | None = None,
            keep: Path | None = None) -> dict[str, Any]:
    if keep is not None and (keep / "cache").exists():
        raise NotEmptyError(f"{keep / 'cache'} exists: a profiled first build needs an empty cache")
    with tempfile.TemporaryDirectory(prefix="index-profile-") as scratch:
        return _profile(repo, name, overrides, commit, keep or Path(scratch))


def _profile(repo: str, name: str, overrides: list[str], commit: str | None, work: Path) -> dict[str, Any]:
    from pipelines.indexer import Indexer
    from semantica.config import load_config

    config = load_config(None, [f"paths.index_root={work}/index", f"paths.cache_dir={work}/cache", *overrides],
                         environ={})
    indexer = Indexer(config, progress=False)
    indexer.runner.identity()  # the encoder loads (and exports once) outside the profile
    load_before = os.getloadavg()[0]
    profiler = cProfile.Profile()
    start = time.perf_counter()
    profiler.enable()
    summary = indexer.index(repo, name=name, commit=commit)
    profiler.disable()
    wall = time.perf_counter() - start
    stats = pstats.Stats(profiler)
    return {"repo": repo, "commit": commit or "HEAD", "name": name, "overrides": overrides,
            "chunks": summary.chunks, "files": summary.files,
            "wall_s": round(wall, 2), "chunks_per_s": round(summary.chunks / wall, 2),
            "driver_stage_s": summary.seconds, "profiled_stage_s": stage_times(stats),
            "top_own_time": top_functions(stats, TOP_FUNCTIONS), "peak_rss_mb": summary.peak_rss_mb,
            "load_before": round(load_before, 2), "load_after": round(os.getloadavg()[0], 2), "cpus": os.cpu_count()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repo", required=True, help="a git repository to index")
    parser.add_argument("--commit", help="the commit to index (default: HEAD)")
    parser.add_argument("--name", default="bench/profile")
    parser.add_argument("--work", type=Path, help="keep the index and cache here (default: a temporary directory)")
    parser.add_argument("--set", dest="overrides", action="append", default=[], help="section.field=value")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    try:
        result = profile(args.repo, args.name, args.overrides, args.commit, args.work)
    except NotEmptyError as exc:
        parser.error(str(exc))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps({k: v for k, v in result.items() if k != "top_own_time"}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
