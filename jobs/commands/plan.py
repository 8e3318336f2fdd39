"""`semantica plan`: the dry run before indexing (no model load, no JVM): see pipelines/plan.py."""

from __future__ import annotations

import argparse

from jobs.cli import CliError, add_common, config_from_args, print_json

MIB = 1024 * 1024


def register(sub: argparse._SubParsersAction) -> None:
    plan = sub.add_parser(
        "plan", help="dry run: what `index` would read, skip (and why) and spend, without indexing",
        description="Run indexing's own discovery on a repository (a path, a url or every entry of an index-batch "
                    "manifest) and report files and bytes by language, what is skipped and why, the top included "
                    "and excluded directories, estimated chunks, embedding time and index size, and warnings for "
                    "lockfiles, build artifacts and data dumps. Loads no model and starts no JVM.",
    )
    plan.add_argument("path", nargs="?", metavar="PATH", help="git checkout or bare clone")
    plan.add_argument("--repo", metavar="URL", help="a remote repository (cloned bare into <cache_dir>/clones)")
    plan.add_argument("--manifest", metavar="FILE", help="an index-batch manifest (conf/repos.yaml): plan every entry")
    plan.add_argument("--commit", metavar="SHA", help="plan this commit from git objects (default: the working tree)")
    plan.add_argument("--name", metavar="NAME", help="repository name (default: from the origin remote or directory)")
    plan.add_argument("--files", action="store_true", help="also list every file that would be indexed")
    plan.add_argument("--json", action="store_true", help="print one JSON object per repository (a list)")
    add_common(plan)
    plan.set_defaults(handler=run_plan)


def specs_from_args(args: argparse.Namespace) -> list:  # list[pipelines.manifest.RepoSpec], imported lazily
    from pipelines.discover import repo_name_from_path
    from pipelines.manifest import RepoSpec, load_manifest

    given = [bool(args.path), bool(args.repo), bool(args.manifest)]
    if sum(given) != 1:
        raise CliError("give exactly one of PATH, --repo URL or --manifest FILE")
    if args.manifest:
        if args.commit or args.name:
            raise CliError("--commit and --name apply to PATH or --repo, not to a manifest (set them per entry)")
        return load_manifest(args.manifest)
    if args.repo:
        name = args.name or "/".join(args.repo.rstrip("/").removesuffix(".git").split("/")[-2:])
        return [RepoSpec(name=name, url=args.repo, commit=args.commit or "")]
    return [RepoSpec(name=args.name or repo_name_from_path(args.path), path=args.path, commit=args.commit or "")]


def run_plan(args: argparse.Namespace) -> int:
    from pipelines.plan import IndexPlanner

    config = config_from_args(args)
    plans = IndexPlanner(config).plan_many(specs_from_args(args))
    if args.json:
        print_json([p.to_dict() for p in plans])
        return 0
    for plan in plans:
        print_plan(plan, args.files)
    return 0


def print_plan(plan, files: bool) -> None:  # noqa: ANN001 (pipelines.plan.RepoPlan)
    est = plan.estimate
    print(f"plan {plan.repo} @ {plan.commit[:12]} ({plan.path}), {plan.seconds:.2f}s")
    print(f"  would index {plan.files} files, {plan.bytes / MIB:.2f} MiB")
    for language, tally in plan.languages.items():
        functions = f" ({tally.functions} functions)" if tally.functions else ""
        print(f"    {language:<12} {tally.files:>6} files {tally.bytes / MIB:>9.2f} MiB  ~{tally.chunks} chunks{functions}")
    print(f"  estimate (cold): ~{est.chunks} chunks, embedding ~{est.embed_seconds:.0f}s "
          f"at {est.rates['embed_chunks_per_s']} chunks/s, index ~{est.index_bytes / MIB:.1f} MiB")
    if est.warm is not None:
        warm = est.warm
        print(f"  estimate (warm, over snapshot {warm.snapshot}): {warm.changed_files} changed or new files, "
              f"{warm.unchanged_files} unchanged; ~{warm.chunks} chunks to embed, ~{warm.embed_seconds:.0f}s")
    if plan.skipped:
        print("  would skip:")
        for kind, tally in plan.skipped.items():
            example = tally.examples[0]
            print(f"    {kind:<13} {tally.files:>6}  e.g. {example['path']}: {example['reason']}")
    print("  top included directories: " + ", ".join(f"{d.path} ({d.files})" for d in plan.top_included_dirs))
    if plan.top_excluded_dirs:
        print("  top excluded directories: " + ", ".join(f"{d.path} ({d.files})" for d in plan.top_excluded_dirs))
    for warning in plan.warnings:
        print(f"  warning: {warning}")
    if files:
        for path in plan.included:
            print(f"    {path}")
