"""Knowledge on vs off over this repository (`python -m lab.bench.knowledge`; a benchmark, not a test).

Indexes this repository's working tree, loads the entries of conf/golden/knowledge.jsonl (this repository's
own decisions and rules) into its knowledge store, then for every labelled question searches with knowledge
on and off and reports:
- answer-context recall: questions whose context holds every answer marker (case and spacing ignored);
- entry recall / precision: needed entries injected / needed, and injected entries that were needed;
- tokens: the context's tokens (code + entries) and the entries' share;
- knowledge lookup latency: p50 of the `knowledge` stage vs p50 of the whole uncached query;
- the code golden set (conf/golden/semantica.jsonl) NDCG@10 with knowledge on vs off (entries may boost hits).
Results: lab/results/knowledge.json.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from semantica.api import SearchRequest
from semantica.config import load_config
from serving.knowledge.service import KnowledgeService

REPO_ROOT = Path(__file__).resolve().parents[2]
GOLDEN = REPO_ROOT / "conf" / "golden" / "knowledge.jsonl"
CODE_GOLDEN = REPO_ROOT / "conf" / "golden" / "semantica.jsonl"
RESULT = REPO_ROOT / "lab" / "results" / "knowledge.json"
REPO = "semantica/self"
K = 10
_SPACE = re.compile(r"\s+")


def _norm(text: str) -> str:
    return _SPACE.sub(" ", text).strip().lower()


def load(path: Path) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return [r for r in rows if r["type"] == "entry"], [r for r in rows if r["type"] == "question"]


def evaluate(pipeline: Any, questions: list[dict[str, Any]], ids: dict[str, str]) -> dict[str, Any]:
    rows = []
    for q in questions:
        started = time.perf_counter()
        response = pipeline.search(SearchRequest(query=q["query"], repos=[REPO], k=K))
        total_ms = (time.perf_counter() - started) * 1000
        context = response.context
        text = _norm(context["text"])
        injected = [k["id"] for k in context.get("knowledge", [])]
        needed = [ids[key] for key in q["needs"]]
        rows.append({"query": q["query"], "recalled": all(_norm(m) in text for m in q["markers"]),
                     "needed_injected": sum(i in injected for i in needed) / len(needed),
                     "injected": len(injected), "injected_needed": sum(i in needed for i in injected),
                     "tokens": context["tokens_used"],
                     "knowledge_tokens": context["tokens_used"] - sum(b["tokens"] for b in context["blocks"]),
                     "knowledge_ms": response.timings_ms.get("knowledge", 0.0), "total_ms": round(total_ms, 2)})
    injected = sum(r["injected"] for r in rows)
    return {
        "answer_context_recall": round(sum(r["recalled"] for r in rows) / len(rows), 4),
        "entry_recall": round(sum(r["needed_injected"] for r in rows) / len(rows), 4),
        "entry_precision": round(sum(r["injected_needed"] for r in rows) / injected, 4) if injected else None,
        "tokens_mean": round(statistics.mean(r["tokens"] for r in rows), 1),
        "knowledge_tokens_mean": round(statistics.mean(r["knowledge_tokens"] for r in rows), 1),
        "knowledge_ms_p50": round(statistics.median(r["knowledge_ms"] for r in rows), 3),
        "total_ms_p50": round(statistics.median(r["total_ms"] for r in rows), 2),
        "queries": rows,
    }


def measure_latency(on: Any, off: Any, questions: list[dict[str, Any]], rounds: int = 3,
                    lookups: int = 20) -> dict[str, Any]:
    """Uncached queries (`search_with_lists`) alternating on/off over the same warm stages, and the lookup alone."""
    timings: dict[str, list[float]] = {"on": [], "off": []}
    for _ in range(rounds):
        for q in questions:
            for name, pipeline in (("off", off), ("on", on)):
                started = time.perf_counter()
                pipeline.search_with_lists(SearchRequest(query=q["query"], repos=[REPO], k=K))
                timings[name].append((time.perf_counter() - started) * 1000)
    on.knowledge.flush()
    lookup: list[float] = []
    for _ in range(lookups):
        for q in questions:
            started = time.perf_counter()
            on.knowledge.lookup(q["query"], [REPO])
            lookup.append((time.perf_counter() - started) * 1000)
    p50 = {name: statistics.median(values) for name, values in timings.items()}
    return {"queries": len(questions) * rounds, "query_ms_p50_off": round(p50["off"], 2),
            "query_ms_p50_on": round(p50["on"], 2), "ratio_on_off": round(p50["on"] / p50["off"], 3),
            "lookup_ms_p50": round(statistics.median(lookup), 3), "lookup_ms_p90": round(
                statistics.quantiles(lookup, n=10)[-1], 3), "lookups": len(lookup)}


def main(argv: list[str] | None = None) -> int:
    from jobs.eval.golden import GoldenEval, load_golden_set
    from pipelines.indexer import Indexer
    from serving.pipeline import SearchPipeline

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cache-dir", default=os.environ.get("SEMANTICA_TEST_CACHE", ""),
                        help="content-addressed embedding cache to reuse (default: $SEMANTICA_TEST_CACHE)")
    parser.add_argument("--out", default=str(RESULT))
    parser.add_argument("--index-root", help="reuse this index of the repository (default: index it afresh)")
    args = parser.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="knowledge-bench-"))
    overrides = [f"paths.index_root={args.index_root or work / 'index'}",
                 f"paths.cache_dir={args.cache_dir or work / 'cache'}", f"knowledge.directory={work / 'knowledge'}"]
    config = load_config(None, overrides, environ={})
    started = time.perf_counter()
    if not args.index_root:
        Indexer(config, progress=False).index(str(REPO_ROOT), REPO)
    index_s = time.perf_counter() - started
    entries, questions = load(GOLDEN)
    service = KnowledgeService(config)
    ids, warnings = {}, {}
    for row in entries:
        fields = {k: row[k] for k in ("title", "text", "kind", "paths", "symbols", "evidence", "source_kind",
                                      "source_ref")}
        result = service.add(REPO, fields, actor="bench")
        ids[row["key"]] = result.entry.id
        if result.warnings or result.conflicts:
            warnings[row["key"]] = result.warnings + [f"conflicts {result.conflicts}"] * bool(result.conflicts)

    from serving.knowledge.after_index import after_index

    curated = after_index(config, REPO, service)  # what `semantica index` adds: candidates + a curator pass
    on = SearchPipeline(config)
    on.knowledge._service = service
    off = SearchPipeline(config, stages=on.stages)
    off.knowledge.settings = replace(off.knowledge.settings, enabled=False)
    off.search(SearchRequest(query="warm up the encoder and the JVM", repos=[REPO], k=K))
    results = {"off": evaluate(off, questions, ids), "on": evaluate(on, questions, ids)}
    code = load_golden_set(CODE_GOLDEN)
    fresh_on = SearchPipeline(config, stages=on.stages)
    fresh_on.knowledge._service = service
    ndcg = {name: GoldenEval(p, REPO).run(code).overall for name, p in (("off", off), ("on", fresh_on))}
    latency = measure_latency(on, off, questions + [{"query": q.query} for q in code])
    report = {
        "command": " ".join(["python -m lab.bench.knowledge", *(sys.argv[1:] if argv is None else argv)]),
        "load": os.getloadavg()[0], "index_s": None if args.index_root else round(index_s, 1),
        "entries": len(entries), "questions": len(questions),
        "entry_warnings": warnings, "after_index_ms": curated.get("ms"),
        "after_index_changes": curated.get("changes"), "candidates": len(curated.get("candidates", [])),
        "knowledge": results,
        "code_golden": {"off": ndcg["off"], "on": ndcg["on"]},
        "latency": latency,
    }
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(report, indent=1, ensure_ascii=False) + "\n")
    print(json.dumps({k: v for k, v in report.items() if k != "knowledge"} | {
        "recall_on": results["on"]["answer_context_recall"], "recall_off": results["off"]["answer_context_recall"],
        "tokens_on": results["on"]["tokens_mean"], "tokens_off": results["off"]["tokens_mean"]}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
