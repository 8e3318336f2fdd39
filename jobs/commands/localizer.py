"""`semantica mine-localizer` and `semantica train-localizer`: the learned localizer's features and models."""

from __future__ import annotations

import argparse

from jobs.cli import CliError, add_common, add_training, config_from_args, train_config_from_args


def register(sub: argparse._SubParsersAction) -> None:
    from jobs.localizer.dataset import __doc__ as dataset_doc
    from jobs.localizer.train import __doc__ as train_doc

    mine = sub.add_parser("mine-localizer", help="candidate features of the corpus's labelled commits",
                          description=dataset_doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    mine.add_argument("--corpus", default="bench/corpus", metavar="DIR", help="labelled commits (JSONL per repository)")
    mine.add_argument("--repos-dir", required=True, metavar="DIR", help="bare clones (owner+name/repo)")
    mine.add_argument("--out", required=True, metavar="DIR", help="feature tables (Parquet per repository)")
    mine.add_argument("--repo", action="append", default=[], metavar="OWNER/NAME", help="only these (repeatable)")
    add_common(mine)
    add_training(mine)
    mine.set_defaults(handler=run_mine)

    train = sub.add_parser("train-localizer", help="train the file and function rankers; leave-repositories-out metrics",
                           description=train_doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    train.add_argument("--features", required=True, metavar="DIR", help="output of `mine-localizer`")
    train.add_argument("--out", default="models/localizer", metavar="DIR", help="model directory")
    train.add_argument("--folds", type=int, default=None, help="repository folds for the held-out metrics")
    train.add_argument("--seed", type=int, default=None)
    train.add_argument("--report", metavar="FILE", help="write the metrics as JSON here too (default: OUT/report.json)")
    train.add_argument("--corpus", default="bench/corpus", metavar="DIR", help="the corpus (its counts go in the card)")
    add_common(train)
    add_training(train)
    train.set_defaults(handler=run_train)

    ablation = sub.add_parser("localizer-ablation", help="replay the localizer's ablation rows over mined lists")
    ablation.add_argument("--instances", required=True, metavar="FILE", help="instances JSONL (SWE-bench format)")
    ablation.add_argument("--mined", required=True, metavar="DIR", help="stored retriever lists (`mine swebench`)")
    ablation.add_argument("--repo-filter", metavar="OWNER/NAME", help="only this repository's instances")
    ablation.add_argument("--json", metavar="FILE", help="write every row's metrics here")
    ablation.add_argument("--only-cached", action="store_true",
                          help="only instances whose candidates are already computed (a partial run, said so)")
    ablation.add_argument("--history-models", metavar="DIR",
                          help="add the history rows: votes and priors as of each base commit, and the file model "
                               "in DIR (trained with history features)")
    ablation.add_argument("--row", action="append", default=[], metavar="NAME",
                          help="only the rows whose name contains NAME (repeatable; default: every row)")
    add_common(ablation)
    ablation.set_defaults(handler=run_ablation_command)


def run_mine(args: argparse.Namespace) -> int:
    from collections import defaultdict

    from jobs.localizer.corpus import CorpusError, load_corpus
    from jobs.localizer.dataset import FeatureMiner

    config = config_from_args(args)
    try:
        rows = load_corpus(args.corpus)
    except CorpusError as exc:
        raise CliError(str(exc)) from None
    by_repo: dict[str, list] = defaultdict(list)
    for row in rows:
        by_repo[row.repo].append(row)
    from semantica.stores.localizer.blobcache import open_blob_cache

    history = None
    if config.localizer.history_features:
        from jobs.localizer.history import CorpusHistory

        history = CorpusHistory.for_localizer(config)
    miner = FeatureMiner(config.localizer, args.repos_dir, args.out, history=history,
                         mine=train_config_from_args(args).localizer_mine,
                         blob_cache=open_blob_cache(config.localizer.blob_cache_file, config.paths.cache_dir))
    total = 0
    for repo in sorted(by_repo):
        if args.repo and repo not in args.repo:
            continue
        try:
            total += miner.mine_repo(repo, by_repo[repo], 0)
        except (OSError, RuntimeError) as exc:
            print(f"{repo}: FAILED {type(exc).__name__}: {exc}")
    print(f"features of {total} labelled commits written to {args.out}")
    return 0


def run_train(args: argparse.Namespace) -> int:
    import shlex
    import sys
    from pathlib import Path

    from jobs.localizer.card import write_card
    from jobs.localizer.train import LocalizerTrainer, TrainError

    train = train_config_from_args(args)
    report = args.report or str(Path(args.out) / "report.json")
    try:
        LocalizerTrainer(train.localizer_train, args.features, args.out, folds=args.folds, seed=args.seed,
                         report=report).run()
    except TrainError as exc:
        raise CliError(str(exc)) from None
    command = "semantica " + " ".join(shlex.quote(a) for a in sys.argv[1:]) if sys.argv[1:2] == ["train-localizer"] \
        else "semantica train-localizer ..."
    print(f"model card: {write_card(report, args.out, command, args.corpus)}")
    return 0


def run_ablation_command(args: argparse.Namespace) -> int:
    from jobs.eval.instances import EvalError, load_instances
    from jobs.eval.mine import MineError
    from jobs.localizer.ablation import ROWS, history_rows, run_ablation, table, write

    try:
        instances = [i for i in load_instances(args.instances) if not args.repo_filter or i.repo == args.repo_filter]
        if args.only_cached:
            from jobs.localizer.replay import LearnedReplay
            from semantica.config import load_config

            probe = LearnedReplay(load_config(args.config, [*args.set, "localizer.learned_files=false"]))
            kept = [i for i in instances if probe.cached(i)]
            print(f"--only-cached: {len(kept)} of {len(instances)} instances have computed candidates")
            instances = kept
        rows = (*ROWS, *history_rows(args.history_models)) if args.history_models else ROWS
        rows = [row for row in rows if not args.row or any(part in row[0] for part in args.row)]
        if not rows:
            raise CliError(f"--row {' '.join(args.row)}: no ablation row has such a name")
        results = run_ablation(args.config, args.set, args.mined, instances, rows)
    except (EvalError, MineError) as exc:
        raise CliError(str(exc)) from None
    print(table(results))
    for repo in sorted(next(iter(results.values()))["by_repo"]):
        print(f"\n{repo}\n" + table(results, repo))
    if "cost_ms" in results:
        print(f"\ncandidates + features per query: {results['cost_ms']}")
    if args.json:
        write(results, args.json)
    return 0
