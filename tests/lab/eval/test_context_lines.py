"""Gold lines from a real git diff, their placement on the base file, upstream pull requests, coverage."""

from __future__ import annotations

from pathlib import Path

from jobs.eval.instances import Instance
from lab.eval.context_lines import covered, gold_lines, parse_patch, upstream_patch
from semantica.config import ContextConfig
from semantica.hits import Hit
from semantica.schema import Chunk
from serving.core.context import ContextBuilder
from tests.dated_git import commit, git, one_commit_repo

BASE = "".join(f"line {n}\n" for n in range(1, 21))


def _lines(text: str) -> list[str]:
    return text.splitlines()


def test_removed_and_inserted_lines_are_gold(tmp_path: Path) -> None:
    repo = one_commit_repo(tmp_path / "r", {"m.py": BASE})
    lines = _lines(BASE)
    lines[4] = "line 5 changed"  # a modification: line 5 is gold
    lines.insert(12, "inserted")  # a pure insertion after line 12: it anchors there
    del lines[17]  # removes old line 18 (17 after the insertion shifts by one)
    commit(repo, {"m.py": "\n".join(lines) + "\n"}, "fix", 1)
    patch = git(repo, "diff", "HEAD~1", "HEAD")
    gold, unplaced = gold_lines(patch, {"m.py": _lines(BASE)})
    assert unplaced == 0
    assert gold == {"m.py": {5, 12, 17}}


def test_hunks_placed_by_content_when_the_base_is_older(tmp_path: Path) -> None:
    repo = one_commit_repo(tmp_path / "r", {"m.py": BASE})
    moved = "header a\nheader b\n" + BASE  # the pull request started two lines later in history
    commit(repo, {"m.py": moved}, "later", 1)
    commit(repo, {"m.py": moved.replace("line 10\n", "line ten\n")}, "fix", 2)
    patch = git(repo, "diff", "HEAD~1", "HEAD")
    assert parse_patch(patch)["m.py"][0].start != 7  # stated against the later file
    gold, unplaced = gold_lines(patch, {"m.py": _lines(BASE)})
    assert (gold, unplaced) == ({"m.py": {10}}, 0)
    gold, unplaced = gold_lines(patch, {"m.py": ["other"] * 5})
    assert (gold, unplaced) == ({}, 1)


def test_upstream_patch_from_a_merged_pull_request(tmp_path: Path) -> None:
    repo = one_commit_repo(tmp_path / "r", {"m.py": BASE, "test_m.py": "t\n"})
    base = git(repo, "rev-parse", "HEAD")
    git(repo, "checkout", "-q", "-b", "fix")
    commit(repo, {"m.py": BASE.replace("line 3\n", "line three\n"), "test_m.py": "t2\n"}, "fix it", 1)
    git(repo, "checkout", "-q", "-")
    commit(repo, {"other.py": "x\n"}, "unrelated", 2)
    git(repo, "merge", "-q", "--no-ff", "fix", "-m", "Merge pull request #12 from someone/fix")
    inst = Instance("o__r-12", "o/r", base, "issue", gold_files=["m.py"])
    patch = upstream_patch(repo / ".git", inst)
    assert patch is not None and "test_m.py" not in patch and "other.py" not in patch
    assert gold_lines(patch, {"m.py": _lines(BASE)})[0] == {"m.py": {3}}
    assert upstream_patch(repo / ".git", Instance("o__r-13", "o/r", base, "issue", gold_files=["m.py"])) is None


def test_upstream_patch_from_a_squash_commit(tmp_path: Path) -> None:
    repo = one_commit_repo(tmp_path / "r", {"m.py": BASE})
    base = git(repo, "rev-parse", "HEAD")
    commit(repo, {"m.py": BASE.replace("line 7\n", "line seven\n")}, "Fix the seventh line (#21)", 1)
    patch = upstream_patch(repo / ".git", Instance("o__r-21", "o/r", base, "issue", gold_files=["m.py"]))
    assert patch is not None and gold_lines(patch, {"m.py": _lines(BASE)})[0] == {"m.py": {7}}


def test_coverage_counts_lines_inside_the_packed_blocks() -> None:
    text = BASE
    built = [Chunk.build("o/r", "m.py", "python", lo, hi, "function", name, "\n".join(_lines(text)[lo - 1:hi]))
             for name, lo, hi in (("a", 1, 4), ("b", 9, 12))]
    chunks = {c.chunk_id: c for c in built}
    hits = [Hit(chunk_id=c.chunk_id, score=1.0, fused_score=1.0) for c in built]
    context = ContextBuilder(ContextConfig(context_lines=0)).build(hits, chunks, lambda _r, _p: _lines(text), 4000)
    gold = {"m.py": {2, 10, 15}, "n.py": {1}}
    lines, files = covered(gold, context)
    assert (round(lines, 4), files) == (0.5, 0.5)  # 2 of 4 gold lines; m.py of m.py and n.py
    tiny = ContextBuilder(ContextConfig(context_lines=0)).build(hits, chunks, lambda _r, _p: _lines(text), 0)
    assert covered(gold, tiny) == (0.0, 0.0)
