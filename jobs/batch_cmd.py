"""`semantica index-batch`: index every repository of a manifest with one Ray Data job.

Local Ray by default (`ray.init(num_cpus=ray.num_cpus)`, fractional CPUs per task/actor), a running
cluster with `--ray-address` (or `ray.address` in the config). On a cluster, submit it as a Ray job:

    ray job submit --address http://HEAD:8265 --working-dir . \\
        --runtime-env-json '{"env_vars": {"SEMANTICA_CONFIG": "conf/cluster.yaml"}}' \\
        -- semantica index-batch --manifest conf/repos.yaml --ray-address auto --json

Exit code 0 only when every repository was published; the summary lists each one's status and reason.
"""

from __future__ import annotations

import argparse
import os
import sys

from jobs.cli import EXIT_FAILED, add_common, config_from_args, print_json


def register(sub: argparse._SubParsersAction) -> None:
    batch = sub.add_parser(
        "index-batch", help="index many repositories (a YAML manifest) with Ray Data",
        description="Discover, parse, embed (actor pool; GPU when the cluster has one) and publish one snapshot per "
                    "repository of the manifest. One failing repository does not stop the others. Files whose "
                    "chunks are all cached skip Ray entirely, so re-runs on unchanged repositories are cheap.",
        epilog="Manifest: a list of {name, path | url, commit | branch, include: [globs], exclude: [globs]}; "
               "a url is cloned bare into <cache_dir>/clones.",
    )
    batch.add_argument("--manifest", required=True, metavar="FILE", help="YAML list of repositories (conf/repos.yaml)")
    batch.add_argument("--ray-address", metavar="ADDR", default=None,
                       help="connect to this Ray cluster (e.g. auto or ray://head:10001; default: local Ray)")
    batch.add_argument("--json", action="store_true", help="print the summary as one JSON object on stdout")
    add_common(batch)
    batch.set_defaults(handler=run_batch_cmd)


def run_batch_cmd(args: argparse.Namespace) -> int:
    from pipelines.ray_job import run_batch

    config = config_from_args(args)
    log = (lambda message: print(message, file=sys.stderr)) if not args.json else None
    if args.json:  # Ray workers and native libraries may write to fd 1: keep stdout for the one JSON object
        sys.stdout.flush()
        saved = os.dup(1)
        os.dup2(2, 1)
        try:
            summary = run_batch(config, args.manifest, args.ray_address, log)
        finally:
            sys.stdout.flush()
            os.dup2(saved, 1)
            os.close(saved)
    else:
        summary = run_batch(config, args.manifest, args.ray_address, log)
    from semantica.build_stats import build_stats_path, record_build

    for r in summary.repos:  # for /metrics: semantica_index_builds{repo,outcome}, semantica_index_build_seconds
        record_build(build_stats_path(config), r.repo, sum((r.seconds or {}).values()), ok=r.status == "ok")
    if args.json:
        print_json(summary.to_dict())
    else:
        for r in summary.repos:
            if r.status == "ok":
                print(f"ok     {r.repo:<30} {r.snapshot_id}  files {r.files} (parsed {r.files_parsed}, reused "
                      f"{r.files_reused}) chunks {r.chunks} (embedded {r.chunks_embedded}) errors {r.errors}")
            else:
                print(f"FAILED {r.repo:<30} {r.reason}")
        print(f"{len(summary.repos)} repositories in {summary.seconds:.1f}s "
              f"({'Ray: ' + str(summary.files_through_ray) + ' files' if summary.ray_used else 'all cached, no Ray'})")
    return 0 if summary.ok else EXIT_FAILED
