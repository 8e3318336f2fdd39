"""`semantica train-encoder`: fine-tune the bi-encoder on mined pairs (CUDA when present, resumable)."""

from __future__ import annotations

import argparse
import shlex

from jobs.cli import CliError, add_common, add_training, config_from_args, train_config_from_args


def register(sub: argparse._SubParsersAction) -> None:
    # the description is this module's docstring: importing the trainer (polars, the pairs miner) on every parse
    # would slow each other command's start
    train = sub.add_parser("train-encoder", help="contrastive fine-tuning of the encoder on `mine-pairs` output",
                           description=__doc__ + " InfoNCE over in-batch and mined hard negatives; a re-run "
                           "with the same --out continues from OUT/checkpoints/last.pt (docs/localizer.md).")
    train.add_argument("--pairs", required=True, metavar="DIR", help="a `semantica mine-pairs --out` directory")
    train.add_argument("--out", required=True, metavar="DIR",
                       help="the trained model directory (a re-run continues from its last checkpoint)")
    add_common(train)
    add_training(train)
    train.set_defaults(handler=run_train_encoder)


def run_train_encoder(args: argparse.Namespace) -> int:
    from jobs.train.encoder import EncoderTrainer, TrainEncoderError

    config = config_from_args(args)
    settings = train_config_from_args(args).train_encoder
    words = ["train-encoder", "--pairs", args.pairs, "--out", args.out] + (["--config", args.config] if args.config else []) \
        + (["--train-config", args.train_config] if args.train_config else [])
    command = "semantica " + shlex.join(words + [word for value in args.set for word in ("--set", value)])
    try:
        card = EncoderTrainer(config, settings, args.pairs, args.out, command=command).run()
    except TrainEncoderError as exc:
        raise CliError(str(exc)) from None
    print(f"trained {card['steps']} steps on {card['pairs']} pairs: loss {card['start_loss']:.4f} -> "
          f"{card['final_loss']:.4f}; use it with --set encoder.model_path={args.out}")
    return 0
