"""`semantica index` and `semantica repos`."""

from __future__ import annotations

import argparse
import sys

from jobs.cli import add_common, config_from_args, print_json


def register(sub: argparse._SubParsersAction) -> None:
    index = sub.add_parser(
        "index", help="index one repository and publish a snapshot",
        description="Index a git repository (working tree, or a commit read straight from git objects) "
                    "into FAISS + Lucene shards, a symbol table and a code graph, then publish it atomically. "
                    "Unchanged files reuse their chunks and vectors from earlier runs.",
    )
    index.add_argument("--repo", required=True, metavar="PATH", help="git checkout or bare clone")
    index.add_argument("--name", metavar="NAME",
                       help="repository name (default: owner/name of the origin remote, else the directory name)")
    index.add_argument("--commit", metavar="SHA", help="index this commit from git objects (default: the working tree)")
    index.add_argument("--json", action="store_true", help="print the summary as one JSON object on stdout")
    add_common(index)
    index.set_defaults(handler=run_index)

    repos = sub.add_parser("repos", help="list published snapshots",
                           description="List every repository with a published snapshot under the index root.")
    repos.add_argument("--json", action="store_true", help="print JSON")
    add_common(repos)
    repos.set_defaults(handler=run_repos)


def run_index(args: argparse.Namespace) -> int:
    from pipelines.indexer import Indexer

    config = config_from_args(args)
    summary = Indexer(config, progress=not args.json).index(args.repo, args.name, args.commit)
    if args.json:
        print_json(summary.to_dict())
        return 0
    print(f"indexed {summary.repo} @ {summary.commit[:12]} -> {summary.snapshot_path}")
    print(f"  files {summary.files} (parsed {summary.files_parsed}, reused {summary.files_reused}), "
          f"chunks {summary.chunks}, symbols {summary.symbols}, edges {summary.edges}, skipped/errors {summary.errors}")
    print(f"  chunks embedded {summary.chunks_embedded}, reused from cache {summary.chunks_reused}")
    timings = ", ".join(f"{stage} {seconds:.2f}s" for stage, seconds in summary.seconds.items())  # run order
    print(f"  seconds: {timings}; peak RSS {summary.peak_rss_mb:.0f} MB")
    for sample in summary.error_samples[:5]:
        print(f"  skipped {sample['path']}: {sample['reason']}", file=sys.stderr)
    return 0


def run_repos(args: argparse.Namespace) -> int:
    from semantica.layout import IndexLayout

    config = config_from_args(args)
    entries = IndexLayout(config.paths.index_root).listing()  # a broken snapshot is listed with its error
    if args.json:
        print_json([entry.to_dict() for entry in entries])
        return 0
    if not entries:
        print(f"no published snapshots under {config.paths.index_root}; run `semantica index --repo PATH`")
        return 0
    for entry in entries:
        m = entry.manifest
        if entry.error or m is None:
            print(f"{entry.repo:<30} BROKEN: {entry.error}")
            continue
        print(f"{entry.repo:<30} {m.snapshot_id:<36} commit {m.commit[:12] or 'worktree':<12} "
              f"chunks {m.counts.get('chunks', 0):>6} symbols {m.counts.get('symbols', 0):>6} created {m.created}")
    return 0
