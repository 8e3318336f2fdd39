"""A watched working tree: a check reuses the last git check only while no change came under the tree."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

import semantica.ondisk.freshness as freshness_module
from semantica.ondisk.freshness import CHECKED_BY_GIT, CHECKED_BY_WATCH
from semantica.ondisk.tree_watch import TreeWatcher
from semantica.snapshot import Snapshot
from tests.semantica.ondisk.test_freshness import git, index

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="inotify is Linux's: elsewhere every "
                                "check runs git (tests/semantica/ondisk/test_freshness.py)")


@pytest.fixture
def git_checks(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every `git status` a freshness check runs, by tree (the real one runs)."""
    calls: list[str] = []
    real = freshness_module.git_status

    def counted(path: str, timeout_s: float):
        calls.append(path)
        return real(path, timeout_s)

    monkeypatch.setattr(freshness_module, "git_status", counted)
    return calls


def watched(snapshot: Snapshot) -> Snapshot:
    """The snapshot after the two checks that start its tree's watch."""
    snapshot.freshness()
    snapshot.freshness()
    return snapshot


def checked(snapshot: Snapshot) -> tuple[bool | None, str, int]:
    fresh = snapshot.freshness()
    return fresh.stale, fresh.checked_by, fresh.changed_count


def test_an_unchanged_tree_is_not_checked_with_git_again(repo: Path, tmp_path: Path, git_checks: list[str]) -> None:
    snapshot = index(repo, tmp_path)
    assert checked(snapshot) == (False, CHECKED_BY_GIT, 0)  # a process's first check: git alone (a CLI answer)
    assert checked(snapshot) == (False, CHECKED_BY_GIT, 0)  # the second: git, and the watch begins
    (repo / "pkg/calc.py").read_text()  # reading is not a change
    assert checked(snapshot) == (False, CHECKED_BY_WATCH, 0)
    assert checked(snapshot) == (False, CHECKED_BY_WATCH, 0)
    assert len(git_checks) == 2


def test_every_kind_of_change_is_seen_by_the_next_check(repo: Path, tmp_path: Path, git_checks: list[str]) -> None:
    snapshot = watched(index(repo, tmp_path))
    assert checked(snapshot)[1] == CHECKED_BY_WATCH
    with open(repo / "pkg/calc.py", "a") as handle:  # written in place, the file still open
        handle.write("# more\n")
        handle.flush()
        assert checked(snapshot) == (True, CHECKED_BY_GIT, 1)
    (repo / "pkg/calc.py").write_text((repo / "pkg/calc.py").read_text().replace("# more\n", ""))
    assert checked(snapshot) == (False, CHECKED_BY_GIT, 0)
    assert checked(snapshot)[1] == CHECKED_BY_WATCH
    (repo / "pkg/text.py").rename(repo / "pkg/words.py")
    assert checked(snapshot) == (True, CHECKED_BY_GIT, 1)
    (repo / "pkg/words.py").rename(repo / "pkg/text.py")
    assert checked(snapshot) == (False, CHECKED_BY_GIT, 0)
    (repo / "docs/guide.md").unlink()
    assert checked(snapshot) == (True, CHECKED_BY_GIT, 1)


def test_a_file_in_a_directory_made_after_the_watch_began(repo: Path, tmp_path: Path, git_checks: list[str]) -> None:
    snapshot = watched(index(repo, tmp_path))
    (repo / "pkg/sub/deeper").mkdir(parents=True)
    assert checked(snapshot) == (False, CHECKED_BY_GIT, 0)  # an empty directory is no change, but it is watched
    assert checked(snapshot)[1] == CHECKED_BY_WATCH
    (repo / "pkg/sub/deeper/late.py").write_text("def late():\n    return 2\n")
    assert checked(snapshot) == (True, CHECKED_BY_GIT, 1)
    assert snapshot.freshness().changed["added"] == ["pkg/sub/deeper/late.py"]


def test_a_commit_and_a_branch_switch_in_another_process(repo: Path, tmp_path: Path, git_checks: list[str]) -> None:
    snapshot = watched(index(repo, tmp_path))
    git(repo, "checkout", "-qb", "topic")  # moves .git/HEAD only
    fresh = snapshot.freshness()
    assert fresh.checked_by == CHECKED_BY_GIT and fresh.current_branch == "topic" and fresh.stale is False
    (repo / "pkg/calc.py").write_text("def add(a, b):\n    return a + b + 0\n")
    git(repo, "commit", "-qam", "edit")
    assert checked(snapshot) == (True, CHECKED_BY_GIT, 1)
    assert checked(snapshot)[1] == CHECKED_BY_WATCH
    git(repo, "checkout", "-q", "main")
    fresh = snapshot.freshness()
    assert (fresh.stale, fresh.checked_by, fresh.current_branch) == (False, CHECKED_BY_GIT, "main")


def test_a_reused_check_expires_after_the_configured_age(repo: Path, tmp_path: Path, git_checks: list[str]) -> None:
    snapshot = watched(index(repo, tmp_path))
    assert checked(snapshot)[1] == CHECKED_BY_WATCH  # within the default 5 s
    snapshot.config.freshness.watch_max_age_s = 0.05
    time.sleep(0.1)  # the remembered check is now older than the age allowed
    assert checked(snapshot)[1] == CHECKED_BY_GIT
    snapshot.config.freshness.watch_max_age_s = 0.0  # off: git on every check
    assert [checked(snapshot)[1] for _ in range(3)] == [CHECKED_BY_GIT] * 3


def test_a_tree_with_too_many_directories_is_not_watched(repo: Path) -> None:
    few = TreeWatcher(max_dirs=2)
    assert [few.version(str(repo)) for _ in range(2)] == [None, None]  # repo, pkg, docs and .git's own
    watcher = TreeWatcher(max_dirs=100)
    assert watcher.version(str(repo)) is None  # asked once: not watched yet
    before = watcher.version(str(repo))
    assert before is not None and watcher.version(str(repo)) == before
    (repo / "pkg/calc.py").write_text("changed\n")
    assert watcher.version(str(repo)) > before


def test_a_git_status_leaves_the_watched_tree_unchanged(repo: Path) -> None:
    """The check's own `git --no-optional-locks status` writes nothing, so it never invalidates itself."""
    watcher = TreeWatcher(max_dirs=100)
    watcher.version(str(repo))
    before = watcher.version(str(repo))
    subprocess.run(["git", "--no-optional-locks", "-C", str(repo), "status", "--porcelain=v2", "-uall"], check=True,
                   capture_output=True)
    assert watcher.version(str(repo)) == before


def test_a_clone_inside_another_watched_tree_counts_for_both(repo: Path) -> None:
    """Two watched trees share the inner clone's directories (one inotify watch each): an edit there moves both, and
    the inner tree's count still moves after the outer one stops being watched."""
    inner = repo / "vendor" / "inner"
    inner.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(inner)], check=True)
    (inner / "lib.py").write_text("x = 1\n")
    watcher = TreeWatcher(max_dirs=100)
    for root in (repo, inner, repo, inner):  # each asked twice: both watched
        watcher.version(str(root))
    outer_before, inner_before = watcher.version(str(repo)), watcher.version(str(inner))
    (inner / "lib.py").write_text("x = 2\n")
    assert watcher.version(str(repo)) > outer_before and watcher.version(str(inner)) > inner_before
    watcher._forget(watcher._trees[str(repo)])
    inner_before = watcher.version(str(inner))
    (inner / "lib.py").write_text("x = 3\n")
    assert watcher.version(str(inner)) > inner_before
