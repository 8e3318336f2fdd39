"""Tiny real git repositories with dated commits, for the tests whose point is time (history, time cuts)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

DAY = 86400
T0 = 1_600_000_000  # the first commit's date; commit(day=n) is n days later
AUTHOR = "Dev <dev@example.com>"


def git(repo: Path, *args: str, when: int = T0, author: str = AUTHOR) -> str:
    """`git -C repo ARGS` with author and committer fixed at `when`; its stdout, stripped."""
    name, email = author.split(" <")
    env = {**os.environ, "GIT_AUTHOR_NAME": name, "GIT_AUTHOR_EMAIL": email.rstrip(">"),
           "GIT_COMMITTER_NAME": name, "GIT_COMMITTER_EMAIL": email.rstrip(">"),
           "GIT_AUTHOR_DATE": f"@{when} +0000", "GIT_COMMITTER_DATE": f"@{when} +0000"}
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True,
                          env=env).stdout.strip()


def commit(repo: Path, files: dict[str, str], message: str, day: int, author: str = AUTHOR) -> str:
    """Write `files`, commit them `day` days after T0, and return the new commit's sha."""
    for path, text in files.items():
        (repo / path).parent.mkdir(parents=True, exist_ok=True)
        (repo / path).write_text(text)
        git(repo, "add", path)
    git(repo, "commit", "-q", "-m", message, when=T0 + day * DAY, author=author)
    return git(repo, "rev-parse", "HEAD")


def one_commit_repo(repo: Path, files: dict[str, str]) -> Path:
    """A new git repository at `repo` whose one commit (dated T0) holds `files`."""
    repo.mkdir(parents=True, exist_ok=True)
    git(repo, "init", "-q")
    commit(repo, files, "initial", 0)
    return repo
