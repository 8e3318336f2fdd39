"""`semantica mine-pairs`: docstring and commit training pairs from non-benchmark repositories."""

from __future__ import annotations

import argparse

from jobs.cli import CliError, add_common, add_training, config_from_args, train_config_from_args


def register(sub: argparse._SubParsersAction) -> None:
    from jobs.train.pairs import __doc__ as pairs_doc

    mine = sub.add_parser("mine-pairs", help="mine docstring->code and commit->changed-code training pairs",
                          description=pairs_doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    mine.add_argument("--repos-dir", required=True, metavar="DIR",
                      help="directory of bare clones (owner+name/repo, as `eval swebench` finds them)")
    mine.add_argument("--out", metavar="DIR", help="output directory (Parquet parts)")
    mine.add_argument("--labels", metavar="DIR",
                      help="write the learned localizer's corpus instead: one JSONL of issue-like labelled commits "
                           "per repository (ids, paths, functions, messages; jobs/localizer/corpus.py)")
    mine.add_argument("--repo", action="append", default=[], metavar="OWNER/NAME",
                      help="mine these repositories instead of pairs.corpus (repeatable)")
    mine.add_argument("--quiet", action="store_true", help="no progress bars")
    add_common(mine)
    add_training(mine)
    mine.set_defaults(handler=run_mine_pairs)


def run_mine_pairs(args: argparse.Namespace) -> int:
    from jobs.eval.instances import EvalError
    from jobs.train.pairs import PairMiner, PairsError

    config, train = config_from_args(args), train_config_from_args(args)
    if args.labels:
        return run_mine_labels(args, train)
    if not args.out:
        raise CliError("give --out DIR (pairs) or --labels DIR (the localizer corpus)")
    try:
        result = PairMiner(config, train.pairs, args.out, progress=not args.quiet).run(
            args.repos_dir, args.repo or train.pairs.corpus)
    except (PairsError, EvalError) as exc:
        raise CliError(str(exc)) from None
    total = {kind: sum(r[kind] for r in result.values()) for kind in ("docstring", "commit")}
    print(f"{len(result)} repositories mined into {args.out}: {total['docstring']} docstring and "
          f"{total['commit']} commit pairs written this run")
    return 0


def run_mine_labels(args: argparse.Namespace, train) -> int:  # noqa: ANN001 - TrainConfig
    from jobs.localizer.corpus import CorpusError, CorpusMiner

    if not args.repo:
        raise CliError("--labels needs the corpus as --repo OWNER/NAME (repeatable)")
    try:
        result = CorpusMiner(train.localizer_corpus, args.labels).run(args.repos_dir, args.repo)
    except CorpusError as exc:
        raise CliError(str(exc)) from None
    print(f"{len(result)} repositories labelled into {args.labels}: {sum(result.values())} commits")
    return 0
