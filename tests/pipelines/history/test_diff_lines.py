"""The parent-side lines a commit touched, per file, from git's diff (pipelines/history/gitread.py): the pair
miner's `.py` read and the source read are one parser."""

from __future__ import annotations

from pathlib import Path

from pipelines.history.gitread import changed_python_lines, changed_source_lines
from tests.dated_git import commit, git, one_commit_repo

# a docstring line that starts with "-- " is a diff line "--- ..." once removed: not a file header
BEFORE = '"""Rows.\n\n-- the separator is a comma\n"""\n' + "".join(f"x{i} = {i}\n" for i in range(40))
AFTER = BEFORE.replace("-- the separator is a comma\n", "").replace("x30 = 30\n", "x30 = 31\n")


def test_a_removed_line_that_looks_like_a_file_header_keeps_the_later_hunks(tmp_path: Path) -> None:
    repo = one_commit_repo(tmp_path / "r", {"pkg/rows.py": BEFORE})
    parent = git(repo, "rev-parse", "HEAD")
    child = commit(repo, {"pkg/rows.py": AFTER}, "Drop the separator note and fix x30", 1)
    (python,) = changed_python_lines(str(repo), parent, child)
    (source,) = changed_source_lines(str(repo), parent, child)
    assert python.path == source.path == "pkg/rows.py"
    assert python.old_lines == source.old_lines == {3, 35}  # the note, and x30 (line 35 of the parent)
