"""`semantica query`: search the published snapshots from the command line."""

from __future__ import annotations

import argparse
import sys
import textwrap

from jobs.cli import add_common, config_from_args, print_json, print_stale

LEXICAL = "lexical"
"""The retriever that reads the Lucene shards, so the one that needs the JVM."""
COLD_SWITCH_INTERVAL_S = 0.0005
"""How long a thread of a cold query holds the GIL while another waits (Python's default: 5 ms). Its loads run side
by side, and the Lucene shards open through thousands of short JNI calls, each giving the GIL up and waiting for it
back behind whichever load holds it: beside one busy Python thread the open took 0.70-1.24 s at 0.5 ms, 1.04-1.69 s
at 5 ms."""

SNIPPET_LINES = 6

JSON_SCHEMA_DOC = """\
--json prints one object: {query, intent: {dominant, probabilities, expansions}, hits: [{rank, chunk_id,
repo, path, start_line, end_line, symbol, kind, score, fused_score, ranks: {strategy: rank}, citation,
content, late_score, cross_score, scores: {reranker: its score}, features (with --explain),
explanation (with --explain)}],
files: [{repo, path, score}], functions: [{repo, function: "path::Qualified.name", score}],
context: {blocks, tokens_used, budget, truncated, text}, degraded: [{stage, error}], warnings,
timings_ms: {stage: ms}, snapshots: {repo: snapshot_id}, cached,
freshness: {repo: {commit, built_at, dirty, source, path, ref, branch, stale, reason, current_commit,
current_branch, changed: {edited, added, deleted, renamed}, changed_count, check_ms, checked_by}},
plan: null, or {mode, why, features, k, weights, mmr, sub_queries}}"""


def register(sub: argparse._SubParsersAction) -> None:
    query = sub.add_parser(
        "query", help="search indexed repositories",
        description="Hybrid search: intent -> vector + lexical + symbol + graph retrieval -> weighted RRF with "
                    "consensus -> late interaction -> (optional) cross-encoder -> cited context.",
        epilog=JSON_SCHEMA_DOC, formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    query.add_argument("text", nargs="+", help="the query: an identifier, a question, a stack trace ... (unquoted "
                                               "words are joined by single spaces; quote it to keep its layout)")
    query.add_argument("--repo", action="append", default=[], metavar="R",
                       help="restrict to this repository (repeatable; default: all indexed)")
    query.add_argument("--branch", metavar="BRANCH",
                       help="search the snapshots indexed with `index --ref BRANCH` (default: the default branch)")
    query.add_argument("--k", type=int, default=None, help="number of hits (default from conf: query.default_k)")
    query.add_argument("--path", action="append", default=[], metavar="GLOB", help="only paths matching GLOB")
    query.add_argument("--language", action="append", default=[], help="only this language (repeatable)")
    query.add_argument("--strategy", action="append", default=[], metavar="RETRIEVER",
                       help="use only these registered retrievers, e.g. vector, lexical, symbol, graph (repeatable; "
                            "default: those in retrieval.retrievers; a name conf does not enable is an error)")
    query.add_argument("--explain", action="store_true",
                       help="show why each hit ranked (ranks, RRF, consensus) and the query plan (mode, K, weights, "
                            "sub-queries) when planning is on or --mode is given")
    query.add_argument("--mode", choices=["hybrid", "vector_heavy", "lexical_heavy", "mmr_diverse", "exact_vector"],
                       help="force a search mode (default: the planner picks one when planning.enabled)")
    query.add_argument("--context", action="store_true", help="print the packed, cited context block")
    query.add_argument("--json", action="store_true", help="print the response as JSON (schema below)")
    query.add_argument("--no-daemon", action="store_true",
                       help="answer in this process even when daemon.enabled (no warm daemon is asked or started)")
    add_common(query)
    query.set_defaults(handler=run_query, ends_process=True)  # no teardown once the answer is printed


def run_query(args: argparse.Namespace) -> int:
    config = config_from_args(args)
    fields = {"query": " ".join(args.text), "repos": list(args.repo), "k": args.k, "path_globs": args.path,
              "languages": args.language, "explain": args.explain, "strategies": args.strategy,
              "mode": args.mode}
    answer = None
    if config.daemon.enabled and not args.no_daemon:  # the warm daemon (started on first use) answers
        from jobs.daemon_client import search_via_daemon

        answer = search_via_daemon(config, fields, args.branch)
    if answer is not None:
        if args.json:
            print_json(answer)
            return 0
        from jobs.daemon_client import response_from_dict

        response = response_from_dict(answer)
    else:
        response = _search_in_process(config, fields, args.branch)
    if args.json:
        print_json(response.to_dict())
        return 0
    intent = response.intent
    print(f"query: {response.query!r}  intent: {intent['dominant']} "
          f"({', '.join(f'{k} {v:.2f}' for k, v in intent['probabilities'].items())})")
    if response.graph:
        print(f"structural question: {response.graph['op']} of {response.graph['name']!r}, "
              f"{len(response.graph['answers'])} exact answer(s) first" + (f"; {response.graph['note']}" if response.graph["note"] else ""))

    if args.explain and response.plan:
        print(render_plan(response.plan))
    print_stale(response.freshness)
    for warning in response.warnings:
        print(f"warning: {warning}")
    for item in response.degraded:
        print(f"degraded: {item['stage']} failed ({item['error']}); results come from the other stages")
    if not response.hits:
        print("no hits")
    for hit in response.hits:
        where = f"{hit.repo}:{hit.citation}"
        print(f"\n{hit.rank:>2}. {where}  {hit.symbol or '(module)'}  [{hit.kind}]  score {hit.score:.4f}")
        if hit.graph:  # the exact graph answer (structural question): cite the edge, not the score
            g = hit.graph
            at = ", ".join(g.get("sites") or [g["citation"]])
            print(f"    graph: {g['op']} of {g['target'].split('::')[-1]} at {at} [{g['resolution']}], "
                  f"rank {g.get('rank', '-')} of the exact answer")
        if args.explain and hit.explanation:
            print(textwrap.indent(textwrap.fill(hit.explanation, 100), "    why: "))
        snippet = hit.content.splitlines()[:SNIPPET_LINES]
        print(textwrap.indent("\n".join(snippet), "    | "))
    if args.context:
        print("\n--- context ---\n" + response.context["text"])
    total = sum(response.timings_ms.values())
    for repo, fresh in response.freshness.items():
        state = {True: "STALE", False: "fresh", None: "unknown"}[fresh["stale"]]
        print(f"\nsnapshot of {repo}: {fresh['commit'][:12] or '(no commit)'} built {fresh['built_at']} ({state})", end="")
    print(f"\n{len(response.hits)} hits in {total:.0f} ms "
          f"({', '.join(f'{k} {v:.0f}' for k, v in response.timings_ms.items())})")
    return 0


def _search_in_process(config, fields: dict, branch: str | None):
    """Load everything here (in parallel), answer once: the fallback when no daemon answers. Its loads hand the GIL
    over every COLD_SWITCH_INTERVAL_S while it runs; the caller's interval comes back after (a test calling it keeps
    its own)."""
    before = sys.getswitchinterval()
    sys.setswitchinterval(COLD_SWITCH_INTERVAL_S)
    try:
        return _answer_once(config, fields, branch)
    finally:
        sys.setswitchinterval(before)


def _answer_once(config, fields: dict, branch: str | None):
    _start_jvm_early(config, fields.get("strategies"))
    from semantica.api import SearchRequest
    from serving.api.request import RequestBuilder
    from serving.pipeline import SearchPipeline

    pipeline = SearchPipeline(config)
    request = RequestBuilder(pipeline.snapshots).build(SearchRequest, fields, branch)  # BranchNotIndexed: none there
    # encoder, JVM + Lucene, FAISS and tables load in parallel, not in turn (the JVM only for a lexical list)
    pipeline.prefetch(request.repos or pipeline.snapshots.default_repos(), request.strategies, request.query)
    return pipeline.search(request)


def _start_jvm_early(config, strategies: list[str] | None) -> None:
    """Start the JVM (the slowest load of a cold query, and one that needs none of the query side's modules) on a
    thread of its own while this process imports the pipeline, with the quick JIT only (the process ends after one
    answer); the lexical retriever's load then finds it running. A failure is left to that load, which reports it as
    a degraded stage."""
    if LEXICAL not in config.retrieval.retrievers or (strategies and LEXICAL not in strategies):
        return
    import threading

    from semantica.stores.lucene import LuceneError, mark_short_lived, start_jvm

    mark_short_lived()  # this process answers once and ends

    def start() -> None:
        try:
            start_jvm(config.lucene)
        except LuceneError:
            pass

    threading.Thread(target=start, name="early-jvm", daemon=True).start()


def render_plan(plan: dict) -> str:
    """The planner's decisions, one line each (`--explain`)."""
    lines = [f"plan: mode {plan['mode']} ({plan['why']}); k {plan['k']}"]
    features = plan["features"]
    lines.append("  features: " + ", ".join(f"{k} {v}" for k, v in features.items() if v not in ([], 0, 0.0)))
    if plan.get("weights"):
        lines.append("  fusion multipliers: " + ", ".join(f"{s} x{m}" for s, m in plan["weights"].items()))
    if plan.get("mmr"):
        lines.append(f"  mmr: lambda {plan['mmr']['lambda']} over the first {plan['mmr']['top_n']} hits")
    for sub in plan.get("sub_queries") or []:
        lines.append(f"  sub-query: {sub}")
    return "\n".join(lines)
