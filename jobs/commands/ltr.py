"""`semantica mine {swebench,golden}` and `semantica train-ltr`: learning-to-rank, offline."""

from __future__ import annotations

import argparse
import dataclasses
import sys

from jobs.cli import CliError, add_common, add_training, config_from_args, print_json, train_config_from_args

MINE_EPILOG = """\
Writes OUT/parts/<query>.parquet: one row per fused hit (first ltr_train.mine_depth, fused order, no
reranker) with source, group (repository), query_id, query, chunk_id, path, symbol, kind, fused_rank,
label and the 18 fusion features. A re-run skips queries already mined. Train with
`semantica train-ltr --data OUT --out MODEL_DIR`."""

TRAIN_EPILOG = """\
Writes MODEL_DIR/model.txt (LightGBM) and MODEL_DIR/ltr.json (feature names, training config, data
and the measurements printed here). Serve it with --set ltr.enabled=true --set ltr.model_path=MODEL_DIR
(or the same keys in YAML / SEMANTICA__LTR__... variables); `semantica eval golden --override ...`
measures it on a golden set."""


def register(sub: argparse._SubParsersAction) -> None:
    mine = sub.add_parser("mine", help="log labelled feature vectors of fused hits for learning-to-rank",
                          description="Run queries with known answers and log every fused hit's features "
                                      "and relevance label (training data for `semantica train-ltr`).")
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

    train = sub.add_parser("train-ltr", help="train the LightGBM ranker on mined hits and measure it",
                           description="Fit a LightGBM LambdaRank model on mined hits and compare it with the "
                                       "fused order (NDCG@k, MRR) on held-out queries.",
                           epilog=TRAIN_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    train.add_argument("--data", required=True, nargs="+", metavar="DIR_OR_FILE",
                       help="mine output directories or Parquet files")
    train.add_argument("--out", required=True, metavar="MODEL_DIR", help="where to write the model")
    train.add_argument("--holdout", action="extend", nargs="+", default=[], metavar="GROUP",
                       help="repositories kept out of training and measured (e.g. sympy/sympy)")
    train.add_argument("--cv", action="store_true", help="also leave-one-repository-out cross-validation")
    train.add_argument("--json", action="store_true", help="print the report as JSON")
    add_common(train)
    add_training(train)
    train.set_defaults(handler=run_train)


def run_mine_swebench(args: argparse.Namespace) -> int:
    from pathlib import Path

    from jobs.commands.eval import _explicit_keys, _load_instances, apply_eval_defaults
    from jobs.eval.swebench import SwebenchEval
    from jobs.ltr.mine import HitMiner

    if args.limit is not None and args.limit <= 0:
        raise CliError(f"--limit must be a positive integer, got {args.limit}")
    instances = _load_instances(args.instances, args.repo_filter)[: args.limit or None]
    config = apply_eval_defaults(config_from_args(args), _explicit_keys(args), {i.language for i in instances})
    miner = HitMiner(train_config_from_args(args).ltr_train, args.out)
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
    from jobs.ltr.mine import HitMiner, golden_labeler
    from serving.pipeline import SearchPipeline

    config = config_from_args(args)
    queries = load_golden_set(args.golden)
    pipeline = SearchPipeline(config)
    miner = HitMiner(train_config_from_args(args).ltr_train, args.out)
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


def run_train(args: argparse.Namespace) -> int:
    from jobs.ltr.mine import MineError, load_mined
    from jobs.ltr.train import LtrTrainer, TrainError

    config, ltr_train = config_from_args(args), train_config_from_args(args).ltr_train
    try:
        frame = load_mined(args.data)
        trainer = LtrTrainer(ltr_train, config.intent)
        model, report = trainer.train(frame, list(args.holdout), args.cv)
    except (MineError, TrainError) as exc:
        raise CliError(str(exc)) from None
    out = trainer.save(model, report, args.out, list(args.data))
    if args.json:
        print_json(dataclasses.asdict(report))
        return 0
    print(f"trained on {report.train_queries} queries ({report.train_rows} rows; {report.dropped_queries} "
          f"queries without a relevant candidate left out) in {report.seconds:.1f} s")
    print(report.table(ltr_train.eval_at))
    top = ", ".join(f"{name} {share:.2f}" for name, share in list(report.importance.items())[:5])
    print(f"feature importance (gain share): {top}")
    print(f"model: {out}")
    return 0
