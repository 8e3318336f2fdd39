"""`semantica mine {swebench,golden}`: labelled fused hits and every retriever's list, for the offline replays."""

from __future__ import annotations

import argparse
import sys

from jobs.cli import CliError, add_common, add_training, config_from_args, train_config_from_args

MINE_EPILOG = """\
Writes OUT/parts/<query>.parquet: one row per fused hit (first mine.depth, fused order, no
reranker) with source, group (repository), query_id, query, chunk_id, path, symbol, kind, fused_rank,
label and the 18 fusion features, and OUT/lists/<query>.parquet: every retriever's ranked list (what
`semantica eval localize` replays). A re-run skips queries already mined."""


def register(sub: argparse._SubParsersAction) -> None:
    mine = sub.add_parser("mine", help="log labelled fused hits and every retriever's list for the offline replays",
                          description="Run queries with known answers and log every fused hit's features "
                                      "and relevance label, and each retriever's ranked list.")
    sources = mine.add_subparsers(dest="mine_source", metavar="SOURCE")
    sources.required = True

    swe = sources.add_parser("swebench", help="SWE-bench instances: index each at its base commit, label by gold",
                             description="Mine SWE-bench instances (indexing as `semantica eval swebench` does: "
                                         "its own index root and caches).",
                             epilog=MINE_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    swe.add_argument("--instances", required=True, metavar="FILE", help="instances JSONL with gold")
    swe.add_argument("--repos-dir", required=True, metavar="DIR", help="directory of clones (as for eval swebench)")
    swe.add_argument("--out", required=True, metavar="DIR", help="output directory (parts/ goes inside)")
    swe.add_argument("--repo-filter", action="extend", nargs="+", default=[], metavar="OWNER/NAME",
                     help="only instances of these repositories")
    swe.add_argument("--limit", type=int, metavar="N", help="only the first N instances (after --repo-filter)")
    swe.add_argument("--quiet", action="store_true", help="no progress bar or per-instance lines")
    add_common(swe)
    add_training(swe)
    swe.set_defaults(handler=run_mine_swebench)

    golden = sources.add_parser("golden", help="a golden set over an indexed repository",
                                description="Mine a golden query set (format: jobs/eval/golden.py) over an indexed "
                                            "repository.",
                                epilog=MINE_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    golden.add_argument("--golden", required=True, metavar="FILE", help="golden set JSONL")
    golden.add_argument("--repo", required=True, metavar="R", help="the indexed repository name to query")
    golden.add_argument("--out", required=True, metavar="DIR", help="output directory (parts/ goes inside)")
    add_common(golden)
    add_training(golden)
    golden.set_defaults(handler=run_mine_golden)


def run_mine_swebench(args: argparse.Namespace) -> int:
    from pathlib import Path

    from jobs.commands.eval import _explicit_keys, _load_instances, apply_eval_defaults
    from jobs.eval.mine import HitMiner
    from jobs.eval.swebench import SwebenchEval

    if args.limit is not None and args.limit <= 0:
        raise CliError(f"--limit must be a positive integer, got {args.limit}")
    instances = _load_instances(args.instances, args.repo_filter)[: args.limit or None]
    config = apply_eval_defaults(config_from_args(args), _explicit_keys(args), {i.language for i in instances})
    miner = HitMiner(train_config_from_args(args).mine, args.out)
    runner = SwebenchEval(config, args.repos_dir, Path(args.out) / "mine.jsonl", ablations=[], miner=miner,
                          progress=not args.quiet, log=(lambda _msg: None) if args.quiet else None)
    result = runner.run(instances)
    print(f"{len(instances)} instances mined ({result.done} now, {result.skipped} already, "
          f"{len(result.failed)} failed) in {result.wall_s:.0f} s into {miner.parts}")
    if result.failed:
        print(f"failed instances: {', '.join(result.failed)} (see {result.paths.timings})", file=sys.stderr)
        return 1
    return 0


def run_mine_golden(args: argparse.Namespace) -> int:
    from jobs.eval.golden import load_golden_set
    from jobs.eval.mine import HitMiner, golden_labeler
    from serving.pipeline import SearchPipeline

    config = config_from_args(args)
    queries = load_golden_set(args.golden)
    pipeline = SearchPipeline(config)
    miner = HitMiner(train_config_from_args(args).mine, args.out)
    rows = positives = skipped = 0
    for number, query in enumerate(queries, 1):
        query_id = f"{args.repo}#{number}:{query.query}"
        if miner.done(query_id):
            skipped += 1
            continue
        mined = miner.mine(pipeline, query_id, query.query, args.repo, "golden",
                           golden_labeler(query))
        rows, positives = rows + mined.rows, positives + mined.positives
    print(f"{len(queries)} golden queries ({skipped} already mined): {rows} rows, {positives} relevant, "
          f"into {miner.parts}")
    return 0
