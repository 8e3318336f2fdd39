"""`semantica grep`: exact and regex search over the published snapshots, ripgrep-style (docs/grep.md)."""

from __future__ import annotations

import argparse

from jobs.cli import add_common, config_from_args, print_json, print_stale

JSON_SCHEMA_DOC = """\
--json prints one object: {matches: [{repo, path, line, column, text, before, after}], truncated, freshness:
{repo: {commit, built_at, stale, reason, ...}}, snapshots: {repo: snapshot_id}, degraded: [{stage, repo, error}],
files_scanned, candidates, took_ms, warnings, note}. Lines and byte columns are 1-based (rg --column)."""


def register(sub: argparse._SubParsersAction) -> None:
    grep = sub.add_parser(
        "grep", help="exact or regex search of indexed repositories (like rg)",
        description="Lines matching PATTERN in the indexed files: a fixed string unless --regex (RE2 syntax), "
                    "found through the snapshot's trigram index and verified by RE2, ordered by path and line.",
        epilog=JSON_SCHEMA_DOC, formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    grep.add_argument("pattern", help="a fixed string, or with --regex an RE2 regular expression")
    grep.add_argument("--regex", "-e", action="store_true", help="PATTERN is a regular expression (RE2 syntax)")
    grep.add_argument("-i", "--ignore-case", action="store_true", help="case-insensitive (Unicode simple case folding)")
    grep.add_argument("-w", "--word", action="store_true", help="only matches with a non-word character or a line "
                                                               "edge on each side")
    grep.add_argument("--path", action="append", default=[], metavar="GLOB",
                      help="only paths matching GLOB (rg --glob: no '/' matches the file name; '!GLOB' excludes; "
                           "repeatable)")
    grep.add_argument("-C", "--context", type=int, default=0, metavar="N", help="N lines before and after each match")
    grep.add_argument("--repo", action="append", default=[], metavar="R", help="only this repository (repeatable)")
    grep.add_argument("--branch", metavar="BRANCH", help="the snapshots indexed with `index --ref BRANCH`")
    grep.add_argument("--max-count", type=int, default=None, metavar="N",
                      help="at most N matching lines in the whole answer (default exact.default_max_count)")
    grep.add_argument("--json", action="store_true", help="print the answer as one JSON object (schema below)")
    add_common(grep)
    grep.set_defaults(handler=run_grep)


def run_grep(args: argparse.Namespace) -> int:
    from serving.retrievers.exact import ExactSearcher, GrepRequest

    config = config_from_args(args)
    searcher = ExactSearcher(config)
    repos = searcher.snapshots.names_for(list(args.repo), args.branch) if args.branch else list(args.repo)
    response = searcher.search(GrepRequest(pattern=args.pattern, regex=args.regex, ignore_case=args.ignore_case,
                                           word=args.word, path_globs=list(args.path), context=args.context,
                                           repos=repos, max_count=args.max_count))
    if args.json:
        print_json(response.to_dict())
        return 0
    many = len(response.snapshots) > 1
    previous: tuple[str, str, int] | None = None
    for match in response.matches:
        name = f"{match.repo}:{match.path}" if many else match.path
        if args.context:
            first = match.line - len(match.before)
            if previous is not None and (previous[:2] != (match.repo, match.path) or previous[2] < first - 1):
                print("--")
            start = max(first, previous[2] + 1) if previous and previous[:2] == (match.repo, match.path) else first
            for number, text in enumerate(match.before, first):
                if number >= start:
                    print(f"{name}-{number}-{text}")
        print(f"{name}:{match.line}:{match.column}: {match.text}")
        if args.context:
            for number, text in enumerate(match.after, match.line + 1):
                print(f"{name}-{number}-{text}")
            previous = (match.repo, match.path, match.line + len(match.after))
    print_stale(response.freshness)
    for item in response.degraded:
        print(f"degraded: {item.get('repo', '')} {item['stage']} failed ({item['error']})")
    for warning in response.warnings:
        print(f"warning: {warning}")
    if response.truncated:
        print(f"truncated: more matches exist than the {len(response.matches)} shown (raise --max-count)")
    return 0 if response.matches else 1
