"""`semantica daemon status|start|stop|run`: the warm local query daemon (serving/api/daemon.py).

`semantica query` starts it on first use when `daemon.enabled`; these sub-commands show, start and
stop it by hand. One daemon serves one configuration (index root, overrides, working directory).
"""

from __future__ import annotations

import argparse
import json
import sys
import time

from jobs.cli import CliError, add_common, config_from_args, print_json

ACTIONS = ("status", "start", "stop", "run")


def register(sub: argparse._SubParsersAction) -> None:
    daemon = sub.add_parser(
        "daemon", help="the warm local query daemon behind `semantica query`",
        description="status: list running daemons; start: start this configuration's daemon and wait until it "
                    "listens; stop: stop it (--all: every daemon); run: serve in the foreground. A daemon holds the "
                    "encoder, the JVM and the indexes loaded, listens on a unix socket (0600) and exits after "
                    "daemon.idle_timeout_s without a query.")
    daemon.add_argument("action", choices=ACTIONS)
    daemon.add_argument("--all", action="store_true", help="stop: every daemon in the run directory")
    daemon.add_argument("--json", action="store_true", help="status: print JSON")
    daemon.add_argument("--from-json", metavar="FILE", help=argparse.SUPPRESS)  # run: the config a client wrote
    add_common(daemon)
    daemon.set_defaults(handler=run_daemon_command)


def run_daemon_command(args: argparse.Namespace) -> int:
    from jobs.daemon_client import daemon_statuses, ensure_running, stop_daemon
    from semantica.daemon_protocol import DaemonPaths, fingerprint, run_dir

    if args.action == "run":
        return _run_foreground(args)
    config = config_from_args(args)
    paths = DaemonPaths.of(config)
    if args.action == "start":
        started = time.perf_counter()
        if not ensure_running(config, paths):
            raise CliError(f"the daemon did not start; see {paths.log}")
        print(f"daemon listening on {paths.socket} ({time.perf_counter() - started:.1f} s)", file=sys.stderr)
        return 0
    if args.action == "stop":
        sockets = sorted(run_dir(config).glob("*.sock")) if args.all else [paths.socket]
        stopped = [s for s in sockets if stop_daemon(s)]
        print(f"stopped {len(stopped)} daemon(s)", file=sys.stderr)
        return 0
    statuses = daemon_statuses(config)
    if args.json:
        print_json(statuses)
        return 0
    if not statuses:
        print(f"no daemon running (run directory {run_dir(config)}; this configuration's would be "
              f"{fingerprint(config)})")
    for status in statuses:
        print(f"{'*' if status['current'] else ' '} pid {status['pid']}  {status['fingerprint']}  "
              f"{'ready' if status['ready'] else 'loading'}  up {status['uptime_s']:.0f} s  "
              f"{status['requests']} queries  idle {status['idle_s']:.0f}/{status['idle_timeout_s']:.0f} s  "
              f"rss {status['max_rss_mb']:.0f} MB  index {status['index_root']}")
    return 0


def _run_foreground(args: argparse.Namespace) -> int:
    from semantica.config import config_from_dict
    from semantica.daemon_protocol import DaemonPaths, fingerprint
    from semantica.runtime import observability
    from serving.api.daemon import run_daemon

    if args.from_json:
        with open(args.from_json) as source:
            config = config_from_dict(json.load(source))
    else:
        config = config_from_args(args)
    if not config.observability.json_logs:  # one handler at the configured level (bm25s' DEBUG stays out)
        observability.install_logs(config.observability.log_level)
    observability.configure(config.observability)
    run_daemon(config, DaemonPaths.of(config).socket, fingerprint(config))
    return 0
