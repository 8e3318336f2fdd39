"""`semantica status`: how fresh each repository's snapshot is compared with its source."""

from __future__ import annotations

import argparse

from jobs.cli import add_common, config_from_args, print_json


def register(sub: argparse._SubParsersAction) -> None:
    status = sub.add_parser(
        "status", help="is each index fresh or stale?",
        description="For every repository (or those named), compare the published snapshot with its source: a "
                    "working tree's changed files (git status + blob shas) or the followed ref's commit. STALE means "
                    "answers may miss those changes: re-run `semantica index` (or the MCP `sync` tool).",
    )
    status.add_argument("--repo", action="append", default=[], metavar="R", help="only this repository (repeatable)")
    status.add_argument("--json", action="store_true", help="print one JSON list of freshness objects")
    add_common(status)
    status.set_defaults(handler=run_status)


def run_status(args: argparse.Namespace) -> int:
    from semantica.snapshot import SnapshotSet

    config = config_from_args(args)
    snapshots = SnapshotSet(config)
    names = args.repo or snapshots.repos()
    reports = [snapshots.get(name).freshness() for name in names]
    if args.json:
        print_json([r.to_dict() for r in reports])
        return 0
    if not reports:
        print(f"no published snapshots under {config.paths.index_root}; run `semantica index --repo PATH`")
    for report in reports:
        print(f"{report.repo}: {report.line()}")
        for kind, paths in report.changed.items():
            for path in paths:
                print(f"    {kind:<8} {path}")
        if report.changed_count > sum(len(p) for p in report.changed.values()):
            print(f"    ... {report.changed_count} in all")
    return 0
