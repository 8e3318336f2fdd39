"""Query latency on a large repository's published snapshot: a fixed list of short queries, in process.

    python -m lab.bench.scale_queries --index-root DIR --cache-dir DIR --repo NAME [--rounds 2] [--out FILE]
        [--queries FILE] [--set section.field=value]

The queries are written for spring-projects/spring-framework (identifiers, 2-4 word phrases, grep-like
literals), fixed so that two runs (a first `index.dense_later` snapshot and the complete successor, or two
machines) time the same work; `--queries FILE` times another list (a JSON object, class -> queries:
lab/bench/pytest_queries.json is pytest-dev/pytest's). One `SearchPipeline` answers `WARM_UP` queries that are not
in the list (snapshot, JVM, page cache), then every query of the list is timed the first time it is asked (`first_seen`: what a new
question costs, per-query caches cold) and `--rounds` more times (`repeat`), answer cache and query-embedding
memory cleared before every timed query.
The literals also go through `ExactSearcher` (`semantica grep`'s searcher), warm. Reported: p50/p99 per class
and over all, each stage's p50, the answer's `degraded` kinds, and the load average before and after: the
machine may be shared.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from jobs.bench.stats import PERCENTILE_99, percentile
from jobs.bench.stats import write_result as save

REPO_ROOT = Path(__file__).resolve().parents[2]
RESULTS = REPO_ROOT / "lab" / "results" / "scale" / "spring" / "queries.json"
TOP_K = 10
WARM_UP = ["warm up", "ApplicationContextInitializer", "event listener ordering"]

QUERIES: dict[str, list[str]] = {
    "identifier": [
        "BeanFactory", "ApplicationContext", "AbstractApplicationContext.refresh", "DispatcherServlet",
        "JdbcTemplate", "RestTemplate", "WebClient", "TransactionTemplate", "PlatformTransactionManager",
        "BeanPostProcessor", "AnnotationConfigApplicationContext",
        "DefaultListableBeanFactory.preInstantiateSingletons", "ResponseEntity", "RequestMappingHandlerMapping",
        "ProxyFactory", "ConversionService", "SpelExpressionParser", "ReactiveAdapterRegistry",
        "HandlerInterceptor", "Jackson2ObjectMapperBuilder",
    ],
    "phrase": [
        "transaction rollback rules", "circular bean reference", "bean definition xml parsing",
        "cors configuration", "multipart file upload", "websocket message broker", "cache eviction annotation",
        "scheduled cron expression", "jdbc batch update", "resolve property placeholder",
        "web client retry", "aspectj pointcut expression", "controller advice exception handler",
        "content negotiation media type", "json message converter", "lazy singleton initialization",
        "async method executor", "validation binding errors", "r2dbc connection factory",
        "kotlin coroutines suspend function",
    ],
    "literal": [
        "@Transactional", "Assert.notNull", "throw new IllegalStateException", "BeanCreationException",
        "@since 6.1", "getBean(", "synchronized (this.singletonObjects)", "Content-Type",
        "NoSuchBeanDefinitionException", "@Nullable",
    ],
}


def load() -> float:
    return round(os.getloadavg()[0], 2)


def summary(ms: list[float]) -> dict[str, Any]:
    return {"n": len(ms), "p50_ms": round(percentile(ms, 0.5), 1), "p99_ms": round(percentile(ms, PERCENTILE_99), 1),
            "max_ms": round(max(ms), 1)}


def time_search(config: Any, repo: str, rounds: int, classes: dict[str, list[str]]) -> dict[str, Any]:
    """Every class through the full hybrid pipeline, uncached, after one untimed pass."""
    from semantica.api import SearchRequest
    from serving.pipeline import SearchPipeline

    pipeline = SearchPipeline(config)
    warm_ms = []
    for query in WARM_UP:  # loads the snapshot, starts the JVM, warms the page cache
        start = time.perf_counter()
        pipeline.search(SearchRequest(query=query, repos=[repo], k=TOP_K))
        warm_ms.append(round((time.perf_counter() - start) * 1000, 1))
    queries = [(kind, q) for kind, items in classes.items() for q in items]
    degraded: set[str] = set()
    out: dict[str, Any] = {"warm_up_ms": warm_ms}
    for label, passes in (("first_seen", 1), ("repeat", rounds)):
        by_kind: dict[str, list[float]] = {}
        stages: dict[str, list[float]] = {}
        slowest: list[tuple[float, str]] = []
        for _ in range(passes):
            for kind, query in queries:
                pipeline._cache.clear()
                pipeline.query_encoder._memory.clear()
                start = time.perf_counter()
                response = pipeline.search(SearchRequest(query=query, repos=[repo], k=TOP_K))
                ms = (time.perf_counter() - start) * 1000
                by_kind.setdefault(kind, []).append(ms)
                slowest.append((round(ms, 1), query))
                degraded |= {f"{d.get('stage', '')}: {d.get('error', '')}"[:60] for d in response.degraded}
                for stage, value in response.timings_ms.items():
                    stages.setdefault(stage, []).append(value)
        part: dict[str, Any] = {kind: summary(ms) for kind, ms in by_kind.items()}
        part["all"] = summary([t for ms in by_kind.values() for t in ms])
        part["stage_p50_ms"] = {k: round(statistics.median(v), 2) for k, v in sorted(stages.items())}
        part["stage_p99_ms"] = {k: round(percentile(v, PERCENTILE_99), 1) for k, v in sorted(stages.items())}
        part["slowest"] = sorted(slowest, reverse=True)[:5]
        part["load_after"] = load()
        out[label] = part
    out["degraded"] = sorted(degraded)
    return out


def time_grep(config: Any, repo: str, rounds: int, classes: dict[str, list[str]]) -> dict[str, Any]:
    """The literals and identifiers as fixed strings through `semantica grep`'s searcher, warm."""
    from serving.retrievers.exact import ExactSearcher, GrepRequest

    searcher = ExactSearcher(config)
    searcher.search(GrepRequest("warm", repos=[repo]))
    patterns = classes.get("literal", []) + [q for q in classes.get("identifier", []) if "." not in q]
    ms: list[float] = []
    matches: dict[str, int] = {}
    for _ in range(rounds):
        for pattern in patterns:
            start = time.perf_counter()
            answer = searcher.search(GrepRequest(pattern, repos=[repo]))
            ms.append((time.perf_counter() - start) * 1000)
            matches[pattern] = len(answer.matches)
    return {**summary(ms), "matches": matches}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--index-root", type=Path, required=True)
    parser.add_argument("--cache-dir", type=Path, required=True)
    parser.add_argument("--repo", required=True)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--set", action="append", default=[], help="section.field=value")
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument("--queries", type=Path, help="a JSON object, class -> queries (default: spring's)")
    args = parser.parse_args(argv)
    from semantica.config import load_config

    config = load_config(None, [f"paths.index_root={args.index_root}", f"paths.cache_dir={args.cache_dir}",
                                *args.set], environ={})
    out: dict[str, Any] = {"command": "python -m lab.bench.scale_queries " + " ".join(sys.argv[1:] if argv is None
                                                                                      else argv),
                           "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "cpus": os.cpu_count(),
                           "load_before": os.getloadavg()}
    classes = json.loads(args.queries.read_text()) if args.queries else QUERIES
    out["search"] = time_search(config, args.repo, args.rounds, classes)
    out["load_after_search"] = os.getloadavg()
    save(out, args.out)
    out["grep"] = time_grep(config, args.repo, args.rounds, classes)
    out["load_after"] = os.getloadavg()
    save(out, args.out)
    print(json.dumps({k: out[k] for k in ("search", "grep")}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
