"""Benchmark figures as ratios against floors measured in the same run (used by `jobs.bench`).

- Query latency vs the floor "encode the query alone" (the one model pass a query cannot avoid),
  per query class (identifier, natural language, issue-length), in process.
- Late interaction at top-30 and top-50 (stored token vectors).
- Indexing chunks/s vs the floor "raw encoder throughput" (the same chunk texts, fixed batches).
- Bytes per chunk on disk by component, RAM per loaded snapshot, the cold CLI query end to end.
The machine is shared and noisy: ratios taken in one run survive that better than absolute times.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from jobs.bench.stats import PERCENTILE_99, percentile
from semantica.api import SearchRequest
from semantica.config import Config
from semantica.layout import IndexLayout
from semantica.runtime.encoder import shared_encoder
from serving.pipeline import SearchPipeline

REPO_ROOT = Path(__file__).resolve().parents[2]
REPEATS = 3
FLOOR_SAMPLE_CHUNKS = 256
COLD_RUNS = 3
LATE_TOP_NS = (30, 50)

SELF_QUERIES = {
    "identifier": ["WeightedRRF", "load_config", "SymbolRetriever", "TokenCodec.encode", "SnapshotSet.get",
                   "shared_encoder", "LuceneShardWriter", "merge_scored"],
    "natural_language": ["how are vectors cached by content sha", "publish a snapshot atomically",
                         "MaxSim late interaction reranking", "which code splits identifiers into camel case parts",
                         "where does the query pipeline fuse ranked lists", "git cat-file batch reader"],
}
REQUESTS_QUERIES = {
    "identifier": ["Session.request", "HTTPAdapter", "merge_environment_settings", "get_netrc_auth",
                   "PreparedRequest.prepare_body", "RequestsCookieJar", "super_len", "resolve_redirects"],
    "natural_language": ["how are redirects followed", "where are cookies persisted between requests",
                         "how is basic authentication added to a request", "proxy settings from the environment",
                         "chunked transfer encoding of a request body", "retry a connection that failed"],
}


def summary(values: list[float]) -> dict[str, float]:
    return {"p50_ms": round(statistics.median(values), 2) if values else 0.0,
            "p99_ms": round(percentile(values, PERCENTILE_99), 2), "n": len(values)}


def rss_mb() -> float:
    """Current resident memory of this process."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024.0
    return 0.0


def issue_queries(instances: Path, repo: str, limit: int) -> list[str]:
    import json

    if not instances.exists():
        return []
    rows = [json.loads(line) for line in instances.read_text().splitlines() if line.strip()]
    return [r["problem_statement"] for r in rows if r["repo"] == repo][:limit]


def query_classes(repo: str, instances: Path) -> dict[str, list[str]]:
    classes = dict(REQUESTS_QUERIES if repo == "psf/requests" else SELF_QUERIES)
    issues = issue_queries(instances, repo, 6)
    if not issues:  # this repository has no issue set: long queries made of its own documentation's paragraphs
        paragraphs = [p for p in (REPO_ROOT / "docs" / "architecture.md").read_text().split("\n\n") if len(p.split()) > 60]
        issues = paragraphs[:6]
    classes["issue"] = issues
    return classes


def bench_latency(config: Config, repo: str, classes: dict[str, list[str]]) -> dict[str, Any]:
    """Per class: pipeline p50/p99, the encode-only floor p50/p99 and their ratio; late interaction stage."""
    pipeline = SearchPipeline(config)
    pipeline.prefetch([repo]).wait()
    encoder = shared_encoder(config.encoder)
    pipeline.search(SearchRequest("warm up", repos=[repo], k=10))
    out: dict[str, Any] = {"repo": repo, "classes": {}}
    for name, queries in classes.items():
        floor, total, late = [], [], []
        for _ in range(REPEATS):
            for query in queries:
                start = time.perf_counter()
                encoder.encode_with_tokens([query], config.encoder.query_max_length)
                floor.append((time.perf_counter() - start) * 1000)
                pipeline._cache.clear()
                pipeline.query_encoder._memory.clear()  # measure a new query, encoding included
                start = time.perf_counter()
                response = pipeline.search(SearchRequest(query, repos=[repo], k=10))
                total.append((time.perf_counter() - start) * 1000)
                late.append(response.timings_ms.get("late_interaction", 0.0))
        ratio = statistics.median(total) / max(statistics.median(floor), 1e-9)
        out["classes"][name] = {"pipeline": summary(total), "floor_encode": summary(floor),
                                "late_interaction": summary(late), "ratio_p50": round(ratio, 2)}
    return out


def bench_late_top_n(config: Config, repo: str, queries: list[str]) -> dict[str, Any]:
    """Late interaction stage time at each top_n (stored token vectors), all else equal."""
    out: dict[str, Any] = {}
    for top_n in LATE_TOP_NS:
        config.late_interaction.top_n = top_n
        pipeline = SearchPipeline(config)
        pipeline.prefetch([repo]).wait()
        pipeline.search(SearchRequest("warm up", repos=[repo], k=10))
        stage = []
        for _ in range(REPEATS):
            for query in queries:
                pipeline._cache.clear()
                stage.append(pipeline.search(SearchRequest(query, repos=[repo], k=10)).timings_ms.get("late_interaction", 0.0))
        out[f"top_{top_n}"] = summary(stage)
    config.late_interaction.top_n = LATE_TOP_NS[0]
    return out


def encoder_floor(config: Config, texts: list[str]) -> dict[str, float]:
    """Raw encoder throughput on these texts: fixed batches of `batch_size`, no caches, no token vectors."""
    encoder = shared_encoder(config.encoder)
    sample = texts[:FLOOR_SAMPLE_CHUNKS]
    size = config.encoder.batch_size
    start = time.perf_counter()
    for first in range(0, len(sample), size):
        encoder._forward(sample[first : first + size], config.encoder.max_length)
    seconds = time.perf_counter() - start
    return {"chunks": len(sample), "seconds": round(seconds, 2), "chunks_per_s": round(len(sample) / seconds, 1)}


def disk_and_ram(config: Config, repo: str) -> dict[str, Any]:
    """Bytes per chunk on disk by component, and resident memory added by loading the snapshot."""
    paths = IndexLayout(config.paths.index_root).current(repo)
    manifest = paths.read_manifest()
    chunks = max(1, manifest.counts.get("chunks", 0))
    by_part: dict[str, int] = {}
    for path in paths.root.rglob("*"):
        if path.is_file():
            part = path.relative_to(paths.root).parts[0]
            by_part[part] = by_part.get(part, 0) + path.stat().st_size
    # the model (and one forward pass) and the JVM are per process, not per snapshot: start them first
    shared_encoder(config.encoder).encode_with_tokens(["warm up the allocator"], config.encoder.query_max_length)
    from semantica.stores.lucene import start_jvm

    start_jvm(config.lucene)
    before = rss_mb()
    pipeline = SearchPipeline(config)
    pipeline.prefetch([repo]).wait()  # tables, CSR graph, FAISS and Lucene readers, token vectors (mapped)
    after = rss_mb()
    corpus = sum(len(c.content.encode()) for c in pipeline.snapshots.get(repo).chunks)
    total = sum(by_part.values())
    return {"chunks": chunks, "bytes_total": total, "bytes_per_chunk": round(total / chunks),
            "bytes_per_chunk_by_part": {k: round(v / chunks) for k, v in sorted(by_part.items())},
            "chunk_text_bytes": corpus, "index_to_text_ratio": round(total / max(corpus, 1), 2),
            "ram_mb_loaded_snapshot": round(after - before, 1),
            "ram_to_text_ratio": round((after - before) * 2**20 / max(corpus, 1), 2)}


NO_PREFETCH = """
import sys
from semantica.config import load_config
from semantica.api import SearchRequest
from serving.pipeline import SearchPipeline
config = load_config(None, [f"paths.index_root={sys.argv[1]}", f"paths.cache_dir={sys.argv[2]}"])
SearchPipeline(config).search(SearchRequest(sys.argv[4], repos=[sys.argv[3]], k=10))
"""


def _walls(command: list[str]) -> list[float]:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
    walls = []
    for _ in range(COLD_RUNS):
        start = time.perf_counter()
        subprocess.run(command, cwd=REPO_ROOT, env=env, check=True, capture_output=True)
        walls.append((time.perf_counter() - start) * 1000)
    return walls


def cold_cli(config: Config, repo: str, query: str) -> dict[str, Any]:
    """`semantica query` in a fresh process, end to end (interpreter start, imports, loads, query), and
    the same search in a fresh process without the parallel prefetch (loads happen inside the query)."""
    root, cache = config.paths.index_root, config.paths.cache_dir
    cli = _walls([sys.executable, "-m", "jobs.cli", "query", query, "--repo", repo, "--json", "--no-daemon",
                  "--index-root", root, "--set", f"paths.cache_dir={cache}"])  # cold: warm daemon in lab.bench.cli_daemon
    serial = _walls([sys.executable, "-c", NO_PREFETCH, root, cache, repo, query])
    return {"query": query, "runs": COLD_RUNS, "wall_ms": [round(w) for w in cli], **summary(cli),
            "without_prefetch": {"wall_ms": [round(w) for w in serial], **summary(serial)}}
