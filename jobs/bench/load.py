"""Loopback load test (not a test): does admission control shed load instead of letting latency grow?

    .venv/bin/python -m jobs.bench load [--index-root DIR] [--levels 8 32] [--requests 5]

Runs the real `semantica serve` stack (Ray Serve, the admission limits from conf: `admission.*`) on
127.0.0.1 and drives it with `--levels` concurrent clients, each sending `--requests` distinct queries
(no retries). Reports per level: p50/p99 of answered requests, shed requests (503), deadline misses
(504), other errors, throughput. Writes bench/results/http_load.json. The target: at 32 clients the
server sheds, and the p99 of what it answers stays under `admission.deadline_s`.
"""

from __future__ import annotations

import argparse
import os
import threading
import time
from pathlib import Path

from jobs.bench.http import serve_http, use_index
from jobs.bench.stats import percentile, report_result, run_clients

SUBJECTS = ["reciprocal rank fusion", "late interaction rerank", "snapshot publish", "vector shard search",
            "lexical lucene searcher", "context token budget", "intent classifier", "graph retriever",
            "feedback log", "symbol table lookup", "query cache", "cross encoder"]
FORMS = ["how does {} work", "where is {} configured", "{} error handling", "why does {} fail"]
RESULTS = Path(__file__).resolve().parents[2] / "bench" / "results" / "http_load.json"


def distinct_query(client: int, i: int) -> str:
    n = client * 97 + i
    return f"{FORMS[n % len(FORMS)].format(SUBJECTS[(n // len(FORMS)) % len(SUBJECTS)])} #{client}.{i}"


def drive_level(base_url: str, clients: int, per_client: int) -> dict[str, float | int]:
    import httpx

    answered: list[float] = []
    counts = {"shed_503": 0, "deadline_504": 0, "errors": 0}
    lock = threading.Lock()

    def worker(n: int) -> None:
        with httpx.Client(base_url=base_url, timeout=300) as http:
            for i in range(per_client):
                start = time.perf_counter()
                try:
                    status = http.post("/v1/search", json={"query": distinct_query(n, i)}).status_code
                except httpx.HTTPError:
                    status = -1
                ms = (time.perf_counter() - start) * 1000
                with lock:
                    if status == 200:
                        answered.append(ms)
                    elif status == 503:
                        counts["shed_503"] += 1
                    elif status == 504:
                        counts["deadline_504"] += 1
                    else:
                        counts["errors"] += 1

    wall = run_clients(worker, clients)
    return {"clients": clients, "requests": clients * per_client, "answered": len(answered), **counts,
            "p50_ms": round(percentile(answered, 0.5), 1) if answered else None,
            "p99_ms": round(percentile(answered, 0.99), 1) if answered else None,
            "throughput_rps": round(len(answered) / wall, 2), "wall_s": round(wall, 1)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--index-root")
    parser.add_argument("--levels", type=int, nargs="+", default=[8, 32])
    parser.add_argument("--requests", type=int, default=5, help="requests per client")
    args = parser.parse_args(argv)

    config = use_index(args.index_root)
    results = []
    with serve_http(config) as base_url:
        import httpx

        for q in SUBJECTS[:4]:  # warm: models, shards, JVM in every replica
            httpx.post(f"{base_url}/v1/search", json={"query": q}, timeout=300).raise_for_status()
        for clients in args.levels:
            level = drive_level(base_url, clients, args.requests)
            print(level)
            results.append(level)
    deadline_ms = config.admission.deadline_s * 1000
    result = {"admission": vars(config.admission), "levels": results, "cpus": os.cpu_count(),
              "p99_under_deadline": all(r["p99_ms"] is None or r["p99_ms"] <= deadline_ms for r in results)}
    report_result(result, RESULTS)
    return 0

