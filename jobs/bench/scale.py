"""The scale benchmark (`make bench-scale`, not part of `make test`): one large public repository indexed in
process, then queried, with the index sharded 1, 8 and 32 ways.

    python -m jobs.bench.scale --repo /work/.mirror/sympy+sympy/repo --name sympy/sympy --work DIR
        [--include 'sympy/core/**'] [--shards 1 8 32] [--queries 100]

Reports lines and bytes of the corpus, chunks/s, peak RSS, the index size as a multiple of the corpus, and
query p50/p99 (full in-process pipeline, late interaction off and on) over `--queries` queries drawn from
the indexed symbols (identifier queries) and their docstrings' first lines (natural-language queries).
Each shard count is a rebuild over the same embedding cache (only shards are rewritten). Results are written
after each phase, so a run cut short keeps what it measured (`bench/results/fast/scale.json`). The load
average is recorded beside every figure: the machine may be shared.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import re
import subprocess
import time
from pathlib import Path
from typing import Any

from jobs.bench.stats import PERCENTILE_99, percentile
from jobs.bench.stats import write_result as save
from jobs.eval.instances import mirror_clone

REPO_ROOT = Path(__file__).resolve().parents[2]
RESULTS = REPO_ROOT / "bench" / "results" / "fast" / "scale.json"
SEED = 13
QUERY_WORDS = 12  # a docstring's first words make one natural-language query
MIN_DOC_WORDS = 4


def corpus_size(repo: str, commit: str, include: list[str]) -> dict[str, int]:
    """Lines and bytes of the indexed Python files at `commit` (what the snapshot covers)."""
    listing = subprocess.run(["git", "-C", repo, "ls-tree", "-r", "-l", commit], capture_output=True, text=True,
                             check=True).stdout
    from fnmatch import fnmatch

    files = [(int(parts[3]), path) for line in listing.splitlines()
             for parts, path in [(line.split("\t")[0].split(), line.split("\t", 1)[1])]
             if path.endswith(".py") and parts[3] != "-" and (not include or any(fnmatch(path, g) for g in include))]
    lines = 0
    blob = subprocess.run(["git", "-C", repo, "cat-file", "--batch"], input="".join(f"{commit}:{p}\n" for _, p in files).encode(),
                          capture_output=True, check=True).stdout
    lines = blob.count(b"\n") - len(files)  # one header line per file
    return {"files": len(files), "bytes": sum(size for size, _ in files), "lines": lines}


def dir_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def load() -> float:
    return round(os.getloadavg()[0], 2)


DOCSTRING = re.compile(r'"""\s*([^"]+?)(?:\n\s*\n|""")')


def make_queries(snapshot: Any, count: int) -> list[str]:
    """Half identifiers (symbol names), half natural language (a docstring's first words), seeded."""
    rng = random.Random(SEED)
    names = sorted({s.name for s in snapshot.symbols if len(s.name) > 3})
    docs = sorted({" ".join(m.group(1).split()[:QUERY_WORDS]) for c in snapshot.chunks
                   for m in [DOCSTRING.search(c.content)] if m and len(m.group(1).split()) >= MIN_DOC_WORDS})
    half = count // 2
    picked = rng.sample(names, min(half, len(names))) + rng.sample(docs, min(count - half, len(docs)))
    return picked[:count]


def time_queries(config: Any, name: str, queries: list[str], late: bool) -> dict[str, Any]:
    from semantica.api import SearchRequest
    from serving.pipeline import SearchPipeline

    pipeline = SearchPipeline(config)
    pipeline.search(SearchRequest(query=queries[0], repos=[name], k=10, late_interaction=late))  # loads
    ms: list[float] = []
    stages: dict[str, list[float]] = {}
    for query in queries:
        if hasattr(pipeline, "_cache"):
            pipeline._cache.clear()
        start = time.perf_counter()
        response = pipeline.search(SearchRequest(query=query, repos=[name], k=10, late_interaction=late))
        ms.append((time.perf_counter() - start) * 1000)
        for stage, value in response.timings_ms.items():  # where the time goes, per pipeline stage
            stages.setdefault(stage, []).append(value)
    return {"p50_ms": round(percentile(ms, 0.5), 1), "p99_ms": round(percentile(ms, PERCENTILE_99), 1), "n": len(ms),
            "stage_p50_ms": {k: round(percentile(v, 0.5), 2) for k, v in sorted(stages.items())}, "load": load()}


def run(args: argparse.Namespace) -> dict[str, Any]:
    from pipelines.indexer import Indexer
    from semantica.config import load_config
    from semantica.layout import IndexLayout
    from semantica.snapshot import Snapshot

    commit = subprocess.run(["git", "-C", args.repo, "rev-parse", args.commit], capture_output=True, text=True,
                            check=True).stdout.strip()
    out: dict[str, Any] = {"command": "python -m jobs.bench.scale " + " ".join(args.argv), "repo": args.name,
                           "commit": commit, "include": args.include, "cpus": os.cpu_count(),
                           "corpus": corpus_size(args.repo, commit, args.include), "runs": []}
    save(out, args.out)
    cache = args.work / "cache"
    for count in args.shards:
        root = args.work / f"index-{count}"
        overrides = [f"paths.index_root={root}", f"paths.cache_dir={cache}", *args.set]
        if args.include:
            overrides.append("discover.include_globs=" + json.dumps(args.include))
        config = load_config(None, overrides, environ={})
        if count > 1:  # the one-shard build's chunk count splits evenly
            per = math.ceil(out["runs"][0]["chunks"] / count) if out["runs"] else 0
            config = load_config(None, [*overrides, f"faiss.shard_max_vectors={per}", f"lucene.shard_max_docs={per}"],
                                 environ={})
        entry: dict[str, Any] = {"shards": count, "load_before": load(), "fresh_cache": not cache.exists()}
        start = time.perf_counter()
        summary = Indexer(config, progress=False).index(args.repo, args.name, commit)
        wall = time.perf_counter() - start
        snapshot_dir = IndexLayout(str(root)).current(args.name).root
        entry.update(wall_s=round(wall, 1), chunks=summary.chunks, chunks_embedded=summary.chunks_embedded,
                     chunks_per_s=round(summary.chunks / wall, 2), stage_s=summary.seconds,
                     peak_rss_mb=summary.peak_rss_mb, load_after=load(),
                     index_bytes=dir_bytes(Path(snapshot_dir)),
                     index_over_corpus=round(dir_bytes(Path(snapshot_dir)) / out["corpus"]["bytes"], 2))
        out["runs"].append(entry)
        save(out, args.out)
        snapshot = Snapshot.open(IndexLayout(str(root)).current(args.name), config)
        queries = make_queries(snapshot, args.queries)
        entry["shards_built"] = {"faiss": len(snapshot.vector_shards), "lucene": len(snapshot.lucene_shards)}
        entry["queries"] = len(queries)
        entry["query_late_off"] = time_queries(config, args.name, queries, late=False)
        save(out, args.out)
        entry["query_late_on"] = time_queries(config, args.name, queries, late=True)
        save(out, args.out)
    return out


def main(argv: list[str] | None = None) -> int:
    import sys

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repo", default=None, help="a git repository (bare is fine); default: sympy under $SEMANTICA_MIRRORS")
    parser.add_argument("--name", default="sympy/sympy")
    parser.add_argument("--commit", default="HEAD")
    parser.add_argument("--include", nargs="*", default=[], help="only paths matching these globs (a partial run)")
    parser.add_argument("--work", type=Path, required=True, help="index roots and the shared cache go here")
    parser.add_argument("--shards", type=int, nargs="*", default=[1, 8, 32])
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--set", action="append", default=[], help="section.field=value")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    args.argv = sys.argv[1:] if argv is None else argv
    args.repo = args.repo or str(mirror_clone("sympy/sympy"))
    result = run(args)
    print(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
