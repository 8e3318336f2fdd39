"""`semantica ...`: one command-line entry point for every job.

Each sub-command lives in its own module under `jobs/commands/`; this file only parses arguments and maps
known errors to a one-line message and a non-zero exit code (no stack traces for user mistakes).
"""

from __future__ import annotations

import argparse
import atexit
import importlib
import json
import logging
import os
import sys
from collections.abc import Callable
from typing import Any, NoReturn

from semantica.config import Config, TrainConfig, is_train_override, load_config, load_train_config
from semantica.errors import CLI_INTERRUPTED_EXIT, ErrorKind, local_kind_of

COMMAND_MODULES = ("index", "query", "grep", "serve", "batch", "eval", "mine", "graph", "mcp", "status", "watch",
                   "pairs", "daemon", "planning", "knowledge", "plan", "deploy", "localizer",
                   "train_encoder")  # modules of jobs/commands/
# parsed without importing the other commands' modules (a warm query is ~0.3 s; train-encoder runs on a GPU
# machine that lacks the serving stack's packages)
LIGHT_COMMANDS = ("query", "grep", "daemon", "train_encoder")
EXIT_FAILED = ErrorKind.INTERNAL.cli_exit


class CliError(RuntimeError):
    """A user-facing failure: printed as one line, exit code 1."""


def add_common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", metavar="FILE", help="YAML config (default: conf/default.yaml)")
    parser.add_argument("--index-root", metavar="DIR", help="index directory (overrides paths.index_root)")
    parser.add_argument("--set", metavar="SECTION.FIELD=VALUE", action="append", default=[],
                        help="override any config value, e.g. --set fusion.rrf_k.vector=60 (repeatable)")


def add_training(parser: argparse.ArgumentParser) -> None:
    """A training command's own config (conf/train.yaml); its `--set` takes the training sections too."""
    parser.add_argument("--train-config", metavar="FILE", help="training YAML (default: conf/train.yaml)")


def config_from_args(args: argparse.Namespace) -> Config:
    """The product `Config`; a training command's `--set` of a training section goes to `train_config_from_args`."""
    training = hasattr(args, "train_config")
    overrides = [o for o in args.set or [] if not (training and is_train_override(o))]
    if getattr(args, "index_root", None):
        overrides.append(f"paths.index_root={args.index_root}")
    config = load_config(args.config, overrides)
    from semantica.runtime import observability  # JSON logs and traces (conf or OTEL_* variables) for every command

    observability.configure(config.observability)
    return config


def train_config_from_args(args: argparse.Namespace) -> TrainConfig:
    """The training jobs' `TrainConfig`: `--train-config` (or conf/train.yaml) and the training sections' `--set`."""
    return load_train_config(getattr(args, "train_config", None), [o for o in args.set or [] if is_train_override(o)])


def print_json(value: Any) -> None:
    json.dump(value, sys.stdout, indent=None, default=str, ensure_ascii=False)
    sys.stdout.write("\n")


def print_stale(freshness: dict[str, dict[str, Any]]) -> None:
    """One line per repository an answer read whose snapshot is stale or could not be checked (its `freshness`)."""
    for repo, fresh in freshness.items():
        if fresh.get("stale") is not False:
            print(f"{'stale' if fresh.get('stale') else 'freshness unknown'}: {repo}: {fresh.get('reason', '')}")


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="semantica",
        description="Semantica: index git repositories into hybrid code indexes and search them.",
        epilog="Run `semantica COMMAND --help` for a command's options.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    module = (only or "").replace("-", "_")
    for name in ([module] if module in LIGHT_COMMANDS else COMMAND_MODULES):
        importlib.import_module(f"jobs.commands.{name}").register(sub)
    return parser


def end_process(code: int) -> NoReturn:
    """Exit the process once its output is out and its atexit handlers (log and trace flushes) have run, without
    the interpreter's teardown: freeing a loaded snapshot, the encoder and the JVM cost a cold query 0.3-0.7 s
    after its answer was printed, and a process that ends has nothing left to free."""
    _flush()
    atexit._run_exitfuncs()
    _flush()
    os._exit(code)


def _flush() -> None:
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a reader that went away (`| head`), a closed stream: nothing more to say
            pass


def main(argv: list[str] | None = None) -> int:
    program = argv is None  # the process's own command line: a command may end it without the teardown
    argv = sys.argv[1:] if argv is None else argv
    parser = build_parser(argv[0] if argv else None)
    args = parser.parse_args(argv)
    code = _run(args)
    if program and getattr(args, "ends_process", False):
        end_process(code)
    return code


def _run(args: argparse.Namespace) -> int:
    handler: Callable[[argparse.Namespace], int] = args.handler
    try:
        return handler(args)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return CLI_INTERRUPTED_EXIT
    except Exception as exc:
        kind = local_kind_of(exc)  # the one table (semantica.errors); None: a bug, shown with its traceback
        json_logs = _json_logs_on()
        if kind is None and not json_logs:
            raise
        if json_logs:  # observability.json_logs: the error is one JSON log line too (a bug's with its traceback)
            logging.getLogger("semantica.cli").error("semantica %s: error: %s", args.command, exc, exc_info=kind is None)
            return EXIT_FAILED if kind is None else kind.cli_exit
        print(f"semantica {args.command}: error: {exc}", file=sys.stderr)
        return kind.cli_exit


def _json_logs_on() -> bool:
    from semantica.runtime.observability import JsonLogFormatter

    return any(isinstance(h.formatter, JsonLogFormatter) for h in logging.getLogger().handlers)


if __name__ == "__main__":
    sys.exit(main())
