"""`semantica watch PATH`: keep a working tree's snapshot current as files change."""

from __future__ import annotations

import argparse
import sys
import threading

from jobs.cli import add_common, config_from_args


def register(sub: argparse._SubParsersAction) -> None:
    watch = sub.add_parser(
        "watch", help="re-index a working tree on every change",
        description="Index PATH (if needed), then watch its files: after each burst of changes (debounced, "
                    "watch.debounce_ms) re-index incrementally and publish a new snapshot. Unchanged files reuse "
                    "their parse, chunks and vectors. Ctrl-C stops.",
    )
    watch.add_argument("path", metavar="PATH", help="a git working tree")
    watch.add_argument("--name", metavar="NAME", help="repository name (default: from the origin remote or directory)")
    add_common(watch)
    watch.set_defaults(handler=run_watch)


def describe(result) -> str:  # noqa: ANN001 (pipelines.sync.SyncResult, imported lazily)
    if not result.reindexed:
        return f"{result.repo}: {result.reason}"
    changed = ", ".join(f"{kind} {', '.join(paths)}" for kind, paths in
                        (("edited", result.edited), ("added", result.added), ("deleted", result.deleted),
                         ("renamed", result.renamed)) if paths) or "no file changed"
    return (f"{result.repo}: snapshot {result.snapshot_id} in {result.seconds:.2f}s ({changed}; parsed "
            f"{result.files_parsed}, embedded {result.chunks_embedded} chunks)")


def run_watch(args: argparse.Namespace) -> int:
    from pipelines.watch import RepoWatcher
    from semantica.ondisk.branch_keys import plain_repo_name

    if args.name is not None:
        args.name = plain_repo_name(args.name)  # `@` names are branch snapshots, published only by `index --ref`
    config = config_from_args(args)
    from jobs.commands.index import curate_after_index

    def synced(result) -> None:  # noqa: ANN001 (pipelines.sync.SyncResult)
        print(describe(result), flush=True)
        if result.reindexed:  # the new snapshot: candidates + a curator pass (docs/knowledge.md)
            curate_after_index(config, result, quiet=False)

    watcher = RepoWatcher(config, args.path, args.name,
                          on_sync=synced,
                          on_error=lambda exc: print(f"sync failed (previous snapshot stays current): {exc}",
                                                     file=sys.stderr, flush=True))
    synced(watcher.sync_now())
    watcher.start()
    print(f"watching {watcher.root} (Ctrl-C to stop)", flush=True)
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        pass
    finally:
        watcher.stop()
    return 0
