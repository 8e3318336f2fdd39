"""Why the flow eval missed each gold function: a reading aid for the resolver, not a metric.

For every missed (question, gold function) pair it says which of these holds, from the same parse the
eval scores: the edge exists but ranks past 10 (`ranked`), the call site was extracted but stayed
unresolved (`unresolved`, with its receiver and inferred receiver type), it resolved to another
definition of that name (`elsewhere`), it is a REFERENCES edge, not a call (`reference`), or no call of
that name was extracted in the gold function at all (`no-call`, with the source lines that mention it).

    python -m lab.eval.flow_misses --mirrors DIR [--flow-set FILE ...] [--op callers|callees]
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from pathlib import Path

from jobs.eval.flow import FLOW_K, load_rows, ranked_functions
from jobs.eval.instances import MIRRORS_ENV, find_clone, mirrors_dir
from pipelines.discover import RepoSource
from pipelines.parse import FileParser, GraphResolver, ParsedFile
from pipelines.source_files import SourceFile
from semantica.config import load_config
from semantica.schema import EdgeType
from serving.graph.ops import GraphOps, SnapshotGraph

INIT = "__init__"


def _parse(mirror: Path, repo: str, commit: str) -> tuple[list[ParsedFile], SnapshotGraph, dict[str, str]]:
    config = load_config()
    src = RepoSource(str(mirror), commit, config.discover)
    entries, _ = src.entries()
    parser = FileParser(config.chunk)
    files = [f for f in src.read(entries) if isinstance(f, SourceFile)]
    parsed = [parser.parse(repo, f) for f in files]
    edges = GraphResolver().resolve(parsed)
    graph = SnapshotGraph(repo, [s for p in parsed for s in p.symbols], edges, [c for p in parsed for c in p.chunks])
    return parsed, graph, {f.path: f.text for f in files}


def explain(caller: str, callee: str, graph: SnapshotGraph, parsed: list[ParsedFile], texts: dict[str, str],
            ranked: list[str]) -> tuple[str, str]:
    """(class, detail) for one missed caller -> callee gold edge."""
    if caller in ranked:
        return "ranked", f"rank {ranked.index(caller) + 1}"
    targets = {callee, f"{callee}.{INIT}"}
    name = callee.rsplit("::", 1)[-1].rsplit(".", 1)[-1]
    if name == INIT:
        name = callee.rsplit("::", 1)[-1].rsplit(".", 2)[-2]
    out = graph.outgoing.get(caller, [])
    if any(e.dst in targets and e.type == EdgeType.REFERENCES.value for e in out):
        return "reference", "REFERENCES edge only"
    calls = [c for pf in parsed for c in pf.calls if c.src == caller and c.name in (name, INIT)]
    if calls:
        resolved = {e.line: e for e in out if e.type == EdgeType.CALLS.value}
        parts = []
        for c in calls:
            e = resolved.get(c.line)
            dst = e.dst if e is not None else "?"
            parts.append(f"L{c.line} {c.receiver or '-'}.{c.name} type={c.receiver_type or '-'} -> {dst}")
        kind = "unresolved" if all(resolved.get(c.line) is None or not resolved[c.line].resolved for c in calls) \
            else "elsewhere"
        return kind, "; ".join(parts)
    sym = graph.symbols.get(caller)
    lines = texts.get(sym.path, "").splitlines() if sym else []
    hits = [f"L{n} {lines[n - 1].strip()[:90]}" for n in range(sym.start_line, sym.end_line + 1)
            if name in lines[n - 1]] if sym else []
    return "no-call", " | ".join(hits[:3]) or "name not in its source"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--flow-set", action="append", default=[])
    ap.add_argument("--op", choices=("callers", "callees"), default="callers")
    ap.add_argument("--mirrors", metavar="DIR", help=f"directory of bare clones, <owner>+<name>/repo (default: ${MIRRORS_ENV})")
    args = ap.parse_args(argv)
    mirrors = mirrors_dir(args.mirrors)
    if mirrors is None:
        ap.error(f"where are the clones? pass --mirrors DIR or set {MIRRORS_ENV}")
    root = Path(__file__).resolve().parents[2]
    paths = [Path(p) for p in args.flow_set] or sorted((root / "conf" / "golden").glob("flow-*.jsonl"))
    rows = [r for r in load_rows(paths) if r["op"] == args.op]
    ops, cache, classes = GraphOps(), {}, Counter()
    for row in rows:
        key = (row["repo"], row["commit"])
        if key not in cache:
            clone = find_clone(mirrors, row["repo"])
            if clone is None:
                ap.error(f"no clone of {row['repo']} under {mirrors}")
            cache[key] = _parse(clone, row["repo"], row["commit"])
        parsed, graph, texts = cache[key]
        ranked = ranked_functions(graph, row["question"], ops)
        for gold in sorted(set(row["gold"]) - set(ranked[:FLOW_K])):
            caller, callee = (gold, row["target"]) if args.op == "callers" else (row["target"], gold)
            kind, detail = ("ranked", f"rank {ranked.index(gold) + 1}") if gold in ranked else \
                explain(caller, callee, graph, parsed, texts, ranked)
            classes[kind] += 1
            print(f"[{kind}] {row['question']!r}: {gold}\n    {detail}")
    print(f"\n{sum(classes.values())} missed gold functions: {dict(classes)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
