"""SWE-bench instances: loading the JSONL split and finding each instance's git repository."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from jobs.eval.metrics import Gold


class EvalError(RuntimeError):
    """The benchmark input or a repository cannot be used; the message says what to fix."""


DEFAULT_LANGUAGE = "python"  # SWE-bench's instances carry no language: they are all Python


@dataclass
class Instance:
    """One benchmark instance (the fields of a SWE-bench or Multi-SWE-bench JSONL line that the eval uses)."""

    instance_id: str
    repo: str
    base_commit: str
    problem_statement: str
    gold_files: list[str] = field(default_factory=list)
    gold_functions: list[str] = field(default_factory=list)
    language: str = DEFAULT_LANGUAGE

    def gold(self) -> Gold:
        return Gold(self.repo, list(self.gold_files), list(self.gold_functions))


REQUIRED_FIELDS = ("instance_id", "repo", "base_commit", "problem_statement")
# a benchmark language -> the language-table rows its repositories' source is written in (a JavaScript instance's
# gold may be a `.d.ts`; a Go module's import paths need go.mod; C++ projects keep C headers)
BENCH_LANGUAGE_ROWS: dict[str, tuple[str, ...]] = {
    "javascript": ("javascript", "typescript", "tsx"), "typescript": ("javascript", "typescript", "tsx"),
    "go": ("go", "gomod"), "cpp": ("c", "cpp"), "c": ("c", "cpp"),
}
BENCH_LANGUAGE_GLOBS: dict[str, tuple[str, ...]] = {"python": ("*.py",)}  # SWE-bench's gold is `.py`; no stubs


def gold_list(value: object, where: str) -> list[str]:
    """A gold list as the benchmarks write it: a JSON list, or (Multi-SWE-bench) a string holding a list literal."""
    if value is None or value == "":
        return []
    if isinstance(value, str):
        try:
            value = ast.literal_eval(value)  # a literal only: never evaluates code
        except (ValueError, SyntaxError):
            raise EvalError(f"{where}: not a list literal: {value[:80]!r}") from None
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise EvalError(f"{where}: expected a list of strings, got {type(value).__name__}")
    return list(value)


def source_globs(languages: Iterable[str]) -> list[str]:
    """`discover.include_globs` for a benchmark's languages: the suffixes and file names of their table rows."""
    from semantica.languages import language_row

    globs: list[str] = []
    for language in sorted(set(languages)):
        if language in BENCH_LANGUAGE_GLOBS:
            globs.extend(BENCH_LANGUAGE_GLOBS[language])
            continue
        for row in BENCH_LANGUAGE_ROWS.get(language, (language,)):
            entry = language_row(row)
            if entry is None:
                raise EvalError(f"benchmark language {language!r}: no language-table row {row!r}")
            globs.extend(f"*{suffix}" for suffix in entry.suffixes)
            globs.extend(entry.filenames)
    return list(dict.fromkeys(globs))


def load_instances(path: str | os.PathLike[str]) -> list[Instance]:
    """Read the instances JSONL; a malformed line or a missing field is an error naming the line."""
    file = Path(path)
    if not file.is_file():
        raise EvalError(f"instances file {file} does not exist")
    instances: list[Instance] = []
    seen: set[str] = set()
    for lineno, line in enumerate(file.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            raw = json.loads(line)
        except json.JSONDecodeError as exc:
            raise EvalError(f"{file}:{lineno}: not valid JSON ({exc.msg})") from None
        missing = [k for k in REQUIRED_FIELDS if not raw.get(k)]
        if missing:
            raise EvalError(f"{file}:{lineno}: missing field(s) {missing}")
        if raw["instance_id"] in seen:
            raise EvalError(f"{file}:{lineno}: duplicate instance_id {raw['instance_id']!r}")
        seen.add(raw["instance_id"])
        instances.append(Instance(
            instance_id=raw["instance_id"], repo=raw["repo"], base_commit=raw["base_commit"],
            problem_statement=raw["problem_statement"],
            gold_files=gold_list(raw.get("gold_files"), f"{file}:{lineno}: gold_files"),
            gold_functions=gold_list(raw.get("gold_functions"), f"{file}:{lineno}: gold_functions"),
            language=str(raw.get("language") or DEFAULT_LANGUAGE),
        ))
    return instances


def repo_candidates(repos_dir: str | os.PathLike[str], repo: str) -> list[Path]:
    """Where a clone of `owner/name` may live under `repos_dir`, in the order they are tried."""
    root = Path(repos_dir)
    owner, _, name = repo.partition("/")
    flat = f"{owner}+{name}" if name else owner
    name = name or owner
    return [root / flat / "repo", root / flat, root / f"{owner}__{name}", root / name, root / f"{name}.git"]


MIRRORS_ENV = "SEMANTICA_MIRRORS"


def mirrors_dir(given: str | os.PathLike[str] | None = None) -> Path | None:
    """The directory of bare clones (`<owner>+<name>/repo` inside): the one given, else $SEMANTICA_MIRRORS,
    else None. There is no default path: the clones live wherever the user fetched them."""
    chosen = given or os.environ.get(MIRRORS_ENV, "")
    return Path(chosen) if chosen else None


def mirror_clone(repo: str) -> Path:
    """The bare clone of `repo` under $SEMANTICA_MIRRORS, or an EvalError saying what to set or fetch."""
    root = mirrors_dir()
    if root is None:
        raise EvalError(f"set {MIRRORS_ENV} to the directory of bare clones (<owner>+<name>/repo) that holds {repo}")
    return find_repo(root, repo)


def find_clone(repos_dir: str | os.PathLike[str], repo: str) -> Path | None:
    """The first git repository among `repo_candidates`, or None."""
    return next((p for p in repo_candidates(repos_dir, repo) if is_git_repository(p)), None)


def is_git_repository(path: Path) -> bool:
    """A work tree (`.git` inside) or a bare repository (`HEAD` and `objects/`)."""
    return path.is_dir() and ((path / ".git").exists() or ((path / "HEAD").is_file() and (path / "objects").is_dir()))


def find_repo(repos_dir: str | os.PathLike[str], repo: str) -> Path:
    """The clone of `repo` under `repos_dir`, or an EvalError listing every path tried."""
    tried = repo_candidates(repos_dir, repo)
    for path in tried:
        if is_git_repository(path):
            return path
    raise EvalError(f"no git clone of {repo} under {repos_dir}; tried: {', '.join(str(p) for p in tried)} "
                    f"(clone it with `git clone --bare https://github.com/{repo} {tried[0]}`)")


def commit_times(repo_path: Path, commits: Iterable[str]) -> dict[str, int]:
    """Committer timestamps of the given commits (unknown ones are missing from the result)."""
    times: dict[str, int] = {}
    for sha in dict.fromkeys(commits):
        proc = subprocess.run(["git", "-C", str(repo_path), "show", "-s", "--format=%ct", "--no-walk", sha],
                              capture_output=True, text=True, check=False)
        stamp = proc.stdout.strip()
        if proc.returncode == 0 and stamp.isdigit():
            times[sha] = int(stamp)
    return times


def order_instances(instances: Sequence[Instance], repo_paths: dict[str, Path]) -> list[Instance]:
    """Grouped by repository (first-seen order), oldest base commit first within a repository."""
    by_repo: dict[str, list[Instance]] = {}
    for inst in instances:
        by_repo.setdefault(inst.repo, []).append(inst)
    ordered: list[Instance] = []
    for repo, members in by_repo.items():
        times = commit_times(repo_paths[repo], (i.base_commit for i in members))
        members.sort(key=lambda i: (times.get(i.base_commit, sys.maxsize), i.instance_id))
        ordered.extend(members)
    return ordered
