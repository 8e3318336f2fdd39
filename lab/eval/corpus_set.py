"""A replayable set of corpus queries: labelled commits of non-benchmark repositories as eval instances.

Settings chosen on the 119 dev instances did not carry over to held-out repositories, so the query
defaults are chosen on the labelled-commit corpus (bench/corpus/*.jsonl) instead. Embedding a snapshot
per commit does not fit the CPU budget, so per repository the densest run of `--per-snapshot` labelled
commits (the shortest time span) is answered on ONE snapshot: the parent of the run's oldest commit
(nothing from the future; the staleness, in days, is kept per instance). Gold files that do not exist at
the snapshot (added later) are dropped, and so are their functions; a commit left without gold is dropped.

The output is an instances JSONL that `semantica mine swebench` indexes (each snapshot once) and mines
into the retriever lists the replay reads (`semantica eval localize`, `lab.eval.defaults_cv`):

    python -m lab.eval.corpus_set --corpus bench/corpus --repos-dir $SEMANTICA_MIRRORS \\
        --repo encode/uvicorn --repo python-attrs/attrs ... --out lab/results/defaults/corpus_instances.jsonl
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from jobs.eval.instances import find_repo
from jobs.localizer.corpus import check_corpus

PER_SNAPSHOT = 40  # commits answered on one snapshot: ~40 queries per repository keeps a 12-repository set at ~500
SECONDS_PER_DAY = 86400


@dataclass(frozen=True)
class CorpusCommit:
    """One labelled commit of bench/corpus (the fields the set needs)."""

    repo: str
    sha: str
    parent: str
    time: int
    query: str
    files: tuple[str, ...]
    functions: tuple[str, ...]

    @classmethod
    def parse(cls, row: dict) -> CorpusCommit:
        return cls(row["repo"], row["sha"], row["parent"], int(row["time"]), row["query"],
                   tuple(row.get("files") or ()), tuple(row.get("functions") or ()))


def load_commits(corpus_dir: str | Path, repo: str) -> list[CorpusCommit]:
    """The repository's labelled commits with gold files, oldest first."""
    file = Path(corpus_dir) / f"{repo.replace('/', '+')}.jsonl"
    rows = [json.loads(line) for line in file.read_text(encoding="utf-8").splitlines() if line.strip()]
    commits = [CorpusCommit.parse(r) for r in rows if r.get("files") and r.get("parent")]
    return sorted(commits, key=lambda c: (c.time, c.sha))


def densest_window(commits: Sequence[CorpusCommit], size: int) -> list[CorpusCommit]:
    """The `size` consecutive commits (oldest first) with the shortest time span; the newest such run wins ties."""
    if len(commits) <= size:
        return list(commits)
    best = min(range(len(commits) - size + 1),
               key=lambda i: (commits[i + size - 1].time - commits[i].time, -i))
    return list(commits[best:best + size])


def tree_paths(git_dir: Path, commit: str) -> set[str]:
    """Every file path at `commit` (read from git objects; no checkout)."""
    out = subprocess.run(["git", "--git-dir", str(git_dir), "ls-tree", "-r", "--name-only", commit],
                         capture_output=True, text=True, check=True).stdout
    return set(out.splitlines())


def commit_time(git_dir: Path, commit: str) -> int:
    out = subprocess.run(["git", "--git-dir", str(git_dir), "show", "-s", "--format=%ct", commit],
                         capture_output=True, text=True, check=True).stdout.strip()
    return int(out)


def repo_instances(corpus_dir: str | Path, repos_dir: str | Path, repo: str, per_snapshot: int) -> list[dict]:
    """The repository's instances, all answered on one snapshot (see the module docstring)."""
    git_dir = find_repo(repos_dir, repo)
    window = densest_window(load_commits(corpus_dir, repo), per_snapshot)
    if not window:
        return []
    snapshot = window[0].parent
    present = tree_paths(git_dir, snapshot)
    snap_time = commit_time(git_dir, snapshot)
    rows = []
    for commit in window:
        files = [f for f in commit.files if f in present]
        if not files:
            continue
        functions = [f for f in commit.functions if f.split("::", 1)[0] in present]
        rows.append({"instance_id": f"{repo}@{commit.sha[:12]}", "repo": repo, "base_commit": snapshot,
                     "problem_statement": commit.query, "gold_files": files, "gold_functions": functions,
                     "sha": commit.sha, "staleness_days": round((commit.time - snap_time) / SECONDS_PER_DAY, 1)})
    return rows


def build(corpus_dir: str | Path, repos_dir: str | Path, repos: Sequence[str], per_snapshot: int) -> list[dict]:
    check_corpus(repos)  # never a SWE-bench repository
    return [row for repo in repos for row in repo_instances(corpus_dir, repos_dir, repo, per_snapshot)]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m lab.eval.corpus_set", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus", default="bench/corpus", metavar="DIR")
    parser.add_argument("--repos-dir", required=True, metavar="DIR", help="bare clones (<owner>+<name>/repo)")
    parser.add_argument("--repo", action="append", required=True, metavar="OWNER/NAME")
    parser.add_argument("--per-snapshot", type=int, default=PER_SNAPSHOT, metavar="N")
    parser.add_argument("--out", required=True, metavar="FILE")
    args = parser.parse_args(argv)
    rows = build(args.corpus, args.repos_dir, args.repo, args.per_snapshot)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    by_repo: dict[str, int] = {}
    for r in rows:
        by_repo[r["repo"]] = by_repo.get(r["repo"], 0) + 1
    for repo, n in by_repo.items():
        snap = next(r["base_commit"] for r in rows if r["repo"] == repo)
        print(f"{repo}: {n} instances on {snap[:12]}")
    print(f"{len(rows)} instances -> {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
