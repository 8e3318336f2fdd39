"""`semantica eval flow`: Recall@10 and MRR of the structural answer on a flow golden set.

Each row of conf/golden/flow-*.jsonl asks "who calls X" or "what does X call" about a repository at a
commit, with jedi's gold functions (lab/eval/flow_gold.py). The question goes through the same parser and
graph ops `semantica query` routes it to; the ranked list is the answer's functions in order (the
exact graph answer is what a routed query shows first, so this is the head of its hits; retrieval
hits after it can only add recall). The graph is built from a fresh parse of the commit (the tables a
snapshot holds), so the eval needs only the bare mirror, not an embedded index.
"""

from __future__ import annotations

import json
import statistics
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from jobs.eval.metrics import capped_recall_at_k, recall_at_k, reciprocal_rank
from pipelines.discover import RepoSource
from pipelines.parse import FileParser, GraphResolver
from pipelines.source_files import SourceFile
from semantica.config import Config
from semantica.schema import SymbolKind
from serving.graph.ops import GraphOps, SnapshotGraph, UnknownNameError
from serving.graph.structural import parse_question

FLOW_K = 10
# a class without its own __init__ is what its instantiation calls (jedi's gold names the class then)
_FUNCTION_KINDS = frozenset({SymbolKind.FUNCTION.value, SymbolKind.METHOD.value, SymbolKind.CLASS.value})


@dataclass
class FlowReport:
    """Per op: questions, Recall@10, MRR, precision of the top 10 against jedi's gold; misses, for reading.

    Recall@10 is gold found in the top 10 / |gold| (the headline, as the target was set). A question with
    more than 10 gold callers cannot reach 1 that way, so the report also gives `recall@10_capped`
    (found / min(10, |gold|)) and `recall@10_reachable` (the best plain Recall@10 any ranking can get).
    """

    by_op: dict[str, dict[str, float]] = field(default_factory=dict)
    per_query: list[dict[str, Any]] = field(default_factory=list)
    build_s: dict[str, float] = field(default_factory=dict)
    query_ms_p50: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return {"by_op": self.by_op, "build_s": self.build_s, "query_ms_p50": self.query_ms_p50,
                "per_query": self.per_query}


def load_rows(paths: list[Path]) -> list[dict[str, Any]]:
    rows = []
    for path in paths:
        for number, line in enumerate(path.read_text().splitlines(), 1):
            if line.strip():
                try:
                    rows.append(json.loads(line))
                except json.JSONDecodeError as exc:
                    raise ValueError(f"{path}:{number}: not JSON ({exc})") from None
    return rows


def graph_at(mirror: Path, repo: str, commit: str, config: Config) -> SnapshotGraph:
    """The snapshot's graph tables (symbols, resolved edges, chunks) from a parse of repo@commit."""
    src = RepoSource(str(mirror), commit, config.discover)
    entries, _ = src.entries()
    parser = FileParser(config.chunk)
    parsed = [parser.parse(repo, f) for f in src.read(entries) if isinstance(f, SourceFile)]
    edges = GraphResolver().resolve(parsed)
    return SnapshotGraph(repo, [s for p in parsed for s in p.symbols], edges, [c for p in parsed for c in p.chunks])


def ranked_functions(graph: SnapshotGraph, question: str, ops: GraphOps) -> list[str]:
    parsed = parse_question(question)
    if parsed is None:
        raise ValueError(f"not a structural question: {question!r}")
    try:
        result = ops.run_graphs(parsed.op, parsed.name, [graph])
    except UnknownNameError:
        return []
    out = [a.node for a in result.answers if graph.symbols.get(a.node) and graph.symbols[a.node].kind in _FUNCTION_KINDS]
    return list(dict.fromkeys(out))


def evaluate(rows: list[dict[str, Any]], mirrors: dict[str, Path], config: Config) -> FlowReport:
    """Score every row whose repository has a mirror; a row without one is an error (no silent skip)."""
    report = FlowReport()
    graphs: dict[tuple[str, str], SnapshotGraph] = {}
    ops = GraphOps()
    scores: dict[str, list[tuple[float, ...]]] = defaultdict(list)
    timings: list[float] = []
    for row in rows:
        key = (row["repo"], row["commit"])
        if key not in graphs:
            if row["repo"] not in mirrors:
                raise ValueError(f"no mirror for {row['repo']}: pass --mirror {row['repo']}=PATH")
            start = time.perf_counter()
            graphs[key] = graph_at(mirrors[row["repo"]], row["repo"], row["commit"], config)
            report.build_s[row["repo"]] = round(time.perf_counter() - start, 2)
        start = time.perf_counter()
        ranked = ranked_functions(graphs[key], row["question"], ops)
        timings.append((time.perf_counter() - start) * 1000)
        recall, rr = recall_at_k(ranked, row["gold"], FLOW_K), reciprocal_rank(ranked[:FLOW_K], row["gold"])
        head = ranked[:FLOW_K]
        precision = len(set(head) & set(row["gold"])) / len(head) if head else 0.0
        capped, reachable = capped_recall_at_k(ranked, row["gold"], FLOW_K), min(1.0, FLOW_K / len(set(row["gold"])))
        scores[row["op"]].append((recall, rr, precision, capped, reachable))
        report.per_query.append({"repo": row["repo"], "op": row["op"], "question": row["question"],
                                 "recall@10": round(recall, 4), "recall@10_capped": round(capped, 4), "rr": round(rr, 4),
                                 "missed": sorted(set(row["gold"]) - set(ranked[:FLOW_K]))})
    for op, values in scores.items():
        report.by_op[op] = {"questions": len(values),
                            "recall@10": round(statistics.mean(v[0] for v in values), 4),
                            "mrr": round(statistics.mean(v[1] for v in values), 4),
                            "precision@10": round(statistics.mean(v[2] for v in values), 4),
                            "recall@10_capped": round(statistics.mean(v[3] for v in values), 4),
                            "recall@10_reachable": round(statistics.mean(v[4] for v in values), 4)}
    report.query_ms_p50 = round(statistics.median(timings), 3) if timings else 0.0
    return report
