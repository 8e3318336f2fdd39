"""HTTP benchmark (not a test): Ray Serve graph over loopback vs the in-process SearchPipeline.

    .venv/bin/python -m jobs.bench http [--index-root DIR] [--clients 8] [--requests 20]

Without --index-root it indexes this repository's serving/ and semantica/ Python files into a temporary
directory first. Both sides answer the same queries over the same snapshot with the response cache off
(query.query_cache_items=0), each with `--clients` concurrent clients and a bounded number of requests
per client. Prints and writes bench/results/http.json: p50/p99 latency, throughput, overhead ratio.
The overload test (8 and 32 clients against admission control) is `python -m jobs.bench load`.
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from jobs.bench.stats import percentile, report_result, run_clients

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

QUERIES = [
    "how are search results fused", "WeightedRRF", "where is the late interaction reranker",
    "context token budget", "SnapshotSet current snapshot", "vector shard search merge",
    "why does a failing retriever degrade the answer", "encode_query",
]
RESULTS = Path(__file__).resolve().parents[2] / "bench" / "results" / "http.json"


def drive(call: Callable[[str], None], clients: int, per_client: int) -> dict[str, float]:
    latencies: list[float] = []
    lock = threading.Lock()
    errors = [0]

    def worker(offset: int) -> None:
        for i in range(per_client):
            start = time.perf_counter()
            try:
                call(QUERIES[(offset + i) % len(QUERIES)])
            except Exception:
                errors[0] += 1
                continue
            with lock:
                latencies.append((time.perf_counter() - start) * 1000)

    wall = run_clients(worker, clients)
    return {"requests": len(latencies), "errors": errors[0], "p50_ms": round(percentile(latencies, 0.5), 1),
            "p99_ms": round(percentile(latencies, 0.99), 1), "mean_ms": round(statistics.mean(latencies), 1),
            "throughput_rps": round(len(latencies) / wall, 2), "wall_s": round(wall, 2)}


def use_index(index_root: str | None) -> Any:
    """The bench config (response cache off); without `index_root`, index this repository's serving/ and
    semantica/ Python files into a temporary directory first."""
    from semantica.config import load_config

    tmp = Path(tempfile.mkdtemp(prefix="semantica-bench-"))
    overrides = ["query.query_cache_items=0", f"serve.feedback_dir={tmp / 'feedback'}"]
    if index_root:
        overrides.append(f"paths.index_root={index_root}")
    else:
        from pipelines.indexer import Indexer

        overrides += [f"paths.index_root={tmp / 'index'}", f"paths.cache_dir={tmp / 'cache'}"]
        config = load_config(None, [*overrides, "discover.include_globs=['serving/*.py', 'semantica/*.py']"])
        Indexer(config, progress=False).index(str(Path(__file__).resolve().parents[2]), "semantica/self")
    return load_config(None, overrides)


@contextmanager
def serve_http(config: Any) -> Iterator[str]:
    """The Serve graph on a free loopback port (auth off: loopback) in its own process, yielding its base URL.

    Its own process: the caller runs the in-process pipeline (the JVM), where Ray must not start.
    """
    from jobs.commands.serve import server_process

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with server_process(config, port) as url:
        yield url


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--index-root")
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--requests", type=int, default=20, help="requests per client")
    args = parser.parse_args(argv)

    import httpx

    from semantica.api import SearchRequest
    from serving.pipeline import SearchPipeline

    config = use_index(args.index_root)
    pipeline = SearchPipeline(config)
    for q in QUERIES:  # warm: models, shards, JVM
        pipeline.search(SearchRequest(query=q))
    inproc = drive(lambda q: pipeline.search(SearchRequest(query=q)), args.clients, args.requests)
    print("in-process", inproc)

    with serve_http(config) as base_url, httpx.Client(base_url=base_url, timeout=120,
                                                      limits=httpx.Limits(max_connections=args.clients)) as client:
        for q in QUERIES:
            client.post("/v1/search", json={"query": q}).raise_for_status()

        def call(q: str) -> None:
            client.post("/v1/search", json={"query": q}).raise_for_status()

        http = drive(call, args.clients, args.requests)
        print("http", http)
    result = {"clients": args.clients, "requests_per_client": args.requests, "in_process": inproc, "http": http,
              "overhead_ratio_p50": round(http["p50_ms"] / inproc["p50_ms"], 2),
              "overhead_ratio_throughput": round(inproc["throughput_rps"] / http["throughput_rps"], 2),
              "cpus": os.cpu_count()}
    report_result(result, RESULTS)
    return 0

