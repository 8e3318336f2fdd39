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
    index.add_argument("--ref", action="append", default=[], metavar="BRANCH",
                       help="index this branch from git objects as its own snapshot NAME@BRANCH, kept next to the "
                            "default branch's (repeatable; query it with --branch)")
    index.add_argument("--json", action="store_true", help="print the summary as one JSON object on stdout")
    add_common(index)
    index.set_defaults(handler=run_index)

    repos = sub.add_parser("repos", help="list published snapshots (per branch, with freshness)",
                           description="List every repository and branch with a published snapshot under the index "
                                       "root, with its commit and whether it is stale.")
    repos.add_argument("--json", action="store_true", help="print JSON")
    add_common(repos)
    repos.set_defaults(handler=run_repos)


def run_index(args: argparse.Namespace) -> int:
    from pipelines.indexer import Indexer
    from semantica.ondisk.branch_keys import plain_repo_name

    if args.name is not None:
        args.name = plain_repo_name(args.name)  # before any work: `@` names come only from --ref
    config = config_from_args(args)
    indexer = Indexer(config, progress=not args.json)
    if args.ref:
        from pipelines.discover import repo_name_from_path
        from semantica.ondisk.branch_keys import branch_key

        if args.commit:
            raise ValueError("pass either --commit or --ref, not both")
        base = args.name or repo_name_from_path(args.repo)
        summaries = [indexer.index(args.repo, branch_key(base, ref), ref) for ref in args.ref]
        for summary in summaries:
            curate_after_index(config, summary, args.json)
        if args.json:
            print_json([s.to_dict() for s in summaries])
            return 0
        for summary in summaries:
            print_summary(summary)
        return 0
    summary = indexer.index(args.repo, args.name, args.commit)
    curate_after_index(config, summary, args.json)
    if args.json:
        print_json(summary.to_dict())
        return 0
    print_summary(summary)
    return 0


def curate_after_index(config, summary, quiet: bool) -> None:  # noqa: ANN001 (Config, IndexSummary)
    """Candidates from the new snapshot's ADRs/docs and a curator pass (docs/knowledge.md); a knowledge
    failure never fails the index: the snapshot is published already."""
    from serving.knowledge.after_index import after_index

    try:
        done = after_index(config, summary.repo)
    except Exception as exc:  # the index is published; say what went wrong and go on
        print(f"knowledge: curation after index failed: {exc}", file=sys.stderr)
        return
    if done and not quiet:
        print(f"  knowledge: {len(done['candidates'])} candidate(s) added/updated, {len(done['changes'])} change(s) "
              f"in {done['ms']:.0f} ms")


def print_summary(summary) -> None:  # noqa: ANN001 (pipelines.indexer.IndexSummary, imported lazily)
    print(f"indexed {summary.repo} @ {summary.commit[:12]} -> {summary.snapshot_path}")
    print(f"  files {summary.files} (parsed {summary.files_parsed}, reused {summary.files_reused}), "
          f"chunks {summary.chunks}, symbols {summary.symbols}, edges {summary.edges}, skipped/errors {summary.errors}")
    print(f"  chunks embedded {summary.chunks_embedded}, reused from cache {summary.chunks_reused}")
    timings = ", ".join(f"{stage} {seconds:.2f}s" for stage, seconds in summary.seconds.items())  # run order
    print(f"  seconds: {timings}; peak RSS {summary.peak_rss_mb:.0f} MB")
    for sample in summary.error_samples[:5]:
        print(f"  skipped {sample['path']}: {sample['reason']}", file=sys.stderr)


def run_repos(args: argparse.Namespace) -> int:
    from semantica.layout import IndexLayout
    from semantica.ondisk.branch_keys import split_branch_key
    from semantica.snapshot import SnapshotSet

    config = config_from_args(args)
    snapshots = SnapshotSet(config)
    rows = []
    for entry in IndexLayout(config.paths.index_root).listing():  # a broken snapshot is listed with its error
        repo, branch = split_branch_key(entry.repo)
        if entry.error or entry.manifest is None:
            rows.append({"repo": repo, "branch": branch, "name": entry.repo, "status": "broken", "error": entry.error})
            continue
        m, fresh = entry.manifest, snapshots.get(entry.repo).freshness()
        rows.append({"repo": repo, "branch": branch or fresh.branch, "default_branch": not branch, "name": entry.repo,
                     "status": "ok", "snapshot": m.snapshot_id, "commit": fresh.commit, "dirty": fresh.dirty,
                     "created": m.created,
                     "counts": m.counts, "model": m.model_id, "stale": fresh.stale, "freshness": fresh.to_dict()})
    if args.json:
        print_json(rows)
        return 0
    if not rows:
        print(f"no published snapshots under {config.paths.index_root}; run `semantica index --repo PATH`")
        return 0
    for r in rows:
        if r["status"] != "ok":
            print(f"{r['name']:<26} BROKEN: {r['error']}")
            continue
        state = {True: "STALE", False: "fresh", None: "unknown"}[r["stale"]]
        branch = (r["branch"] or "(detached)") + (" (default)" if r["default_branch"] else "")
        commit = (r["commit"][:12] or "worktree") + ("+dirty" if r["dirty"] else "")
        print(f"{r['repo']:<26} {branch:<22} commit {commit:<18} {state:<7} "
              f"chunks {r['counts'].get('chunks', 0):>6} created {r['created']}  [{r['name']}]")
    return 0
