"""The history core on a real tiny git repository: time cut, filters, incremental cache, votes and priors."""

from __future__ import annotations

import json
import sqlite3
import subprocess
from pathlib import Path

import polars as pl
import pytest

from pipelines.history.reader import HistoryReader
from semantica.config import HistoryConfig
from semantica.stores.history import HistorySearcher, load_history, save_history
from tests.dated_git import DAY, T0, commit, git
from tests.old_history_table import rewrite_with_functions

PARSER = '''def parse(text):
    return text.split(",")


def render(rows):
    return "\\n".join(rows)
'''
FIXED = PARSER.replace('"\\n".join(rows)', '"\\n".join(r.strip() for r in rows)')
UTILS = '''def helper():
    return 1
'''








@pytest.fixture()
def repo(tmp_path: Path) -> dict[str, object]:
    """base: parse/render exist; `snapshot` fixes render's escaping; `later` (after the snapshot) is the commit
    whose message names the future issue word-for-word and touches parse."""
    work = tmp_path / "work"
    work.mkdir()
    git(work, "init", "-q", "-b", "main")
    commit(work, {"pkg/parser.py": PARSER, "pkg/utils.py": UTILS}, "Initial import of the parser package", 0)
    fix = commit(work, {"pkg/parser.py": FIXED},
                 "Fix render dropping whitespace in rows (fixes #12)", 10)
    commit(work, {"pkg/utils.py": UTILS + "\n\ndef other():\n    return 2\n"},
           "Bump version to 1.2", 20)
    commit(work, {"pkg/utils.py": UTILS + "\n\ndef other():\n    return 3\n"},
           "Update pre-commit hooks and helper defaults", 21, author="pre-commit-ci[bot] <bot@example.com>")
    snapshot = commit(work, {"pkg/utils.py": UTILS.replace("return 1", "return 11")},
                      "Make helper return eleven for the quoting tables", 30)
    later = commit(work, {"pkg/parser.py": FIXED.replace('split(",")', 'split(";")')},
                   "Fix zebra xylophone semicolon separated csv parsing", 40)
    bare = tmp_path / "bare.git"
    subprocess.run(["git", "clone", "-q", "--bare", str(work), str(bare)], check=True)
    return {"git_dir": bare, "fix": fix, "snapshot": snapshot, "later": later, "cache": tmp_path / "history.sqlite"}


def config(**overrides: object) -> HistoryConfig:
    return HistoryConfig(**{"min_message_chars": 10, **overrides})


def test_later_commit_never_influences_votes_priors_or_explanations(repo):
    reader = HistoryReader(config(), repo["cache"])
    reader.read(repo["git_dir"], repo["later"])  # the later commit is even cached already: still never used
    history = reader.read(repo["git_dir"], repo["snapshot"])
    assert repo["later"] not in {r.sha for r in history.records}
    searcher = HistorySearcher(history, config())
    votes = searcher.index.votes("zebra xylophone semicolon separated csv parsing")
    assert votes.files == []  # only the later commit has these words
    votes = searcher.index.votes("render drops whitespace in rows")
    assert [v.key for v in votes.files] == ["pkg/parser.py"]
    assert [v.sha for v in votes.files[0].voters] == [repo["fix"]]
    assert all(voter.sha != repo["later"] for v in votes.files for voter in v.voters)
    assert searcher.priors.files["pkg/parser.py"].changes == 1
    assert searcher.priors.files["pkg/parser.py"].fixes == 1
    assert searcher.priors.files["pkg/parser.py"].last_change_days == 20.0  # snapshot day 30, fix day 10

    at_later = HistorySearcher(reader.read(repo["git_dir"], repo["later"]), config())
    later_votes = at_later.index.votes("zebra xylophone semicolon separated csv parsing")
    assert [v.key for v in later_votes.files] == ["pkg/parser.py"]  # the control: it would give it away
    assert at_later.priors.files["pkg/parser.py"].changes == 2


def test_a_query_is_voted_once_for_every_reader_of_the_index(repo, monkeypatch):
    """The history retriever and the localizer's features ask one index for the same query: one BM25 search."""
    searcher = HistorySearcher(HistoryReader(config(), repo["cache"]).read(repo["git_dir"], repo["snapshot"]), config())
    searches = []
    similar = searcher.index.similar
    monkeypatch.setattr(searcher.index, "similar", lambda query, k=None: searches.append(query) or similar(query, k))
    first = searcher.index.votes("render drops whitespace in rows")
    assert searcher.index.votes("render drops whitespace in rows") is first
    searcher.index.votes("csv parsing")
    assert searches == ["render drops whitespace in rows", "csv parsing"]


def test_bot_bump_and_root_commits_are_dropped(repo):
    history = HistoryReader(config(), repo["cache"]).read(repo["git_dir"], repo["snapshot"])
    subjects = [r.subject for r in history.records]
    assert subjects == ["Make helper return eleven for the quoting tables",
                        "Fix render dropping whitespace in rows (fixes #12)"]
    assert history.dropped == {"skipped subject": 1, "bot author": 1, "root commit": 1}
    assert history.records[1].issue_refs == ["12"]
    assert history.fix_like == {repo["fix"]}


def test_revert_and_huge_commits_are_dropped(tmp_path, repo):
    work = tmp_path / "w2"
    subprocess.run(["git", "clone", "-q", str(repo["git_dir"]), str(work)], check=True)
    git(work, "revert", "--no-edit", "HEAD", when=T0 + 50 * DAY)
    huge = {f"pkg/m{i}.py": UTILS for i in range(3)}
    commit(work, {"pkg/parser.py": PARSER + "\n# x\n", **huge}, "Reformat every module of the package", 60)
    for i in range(3):
        commit(work, {f"pkg/m{i}.py": UTILS.replace("1", "2")}, f"Touch module number {i} quickly", 61 + i)
    head = commit(work, {f"pkg/m{i}.py": UTILS.replace("1", "3") for i in range(3)},
                  "Change three modules at once for the test", 70)
    history = HistoryReader(config(max_commit_files=2), tmp_path / "c.sqlite").read(work, head)
    assert history.dropped.get("huge") == 1
    assert history.dropped.get("skipped subject", 0) == 2  # the revert and the bump
    assert not any(r.subject.startswith("Revert") for r in history.records)


def test_second_read_processes_only_new_commits(repo, tmp_path):
    reader = HistoryReader(config(), repo["cache"])
    first = reader.read(repo["git_dir"], repo["snapshot"])
    assert first.read_commits == 5 and first.cached_commits == 0
    again = HistoryReader(config(), repo["cache"]).read(repo["git_dir"], repo["later"])  # a fresh reader: disk cache
    assert again.read_commits == 1 and again.cached_commits == 5
    assert [r.sha for r in again.records][1:] == [r.sha for r in first.records]
    other_limits = HistoryReader(config(max_commit_lines=5), repo["cache"]).read(repo["git_dir"], repo["later"])
    assert other_limits.read_commits == 0  # a record is what the commit changed: other limits share it


def test_saved_history_answers_like_the_read_one(repo, tmp_path):
    history = HistoryReader(config(), repo["cache"]).read(repo["git_dir"], repo["snapshot"])
    save_history(history, tmp_path / "snap" / "history")
    loaded = load_history(tmp_path / "snap" / "history")
    assert [r.sha for r in loaded.records] == [r.sha for r in history.records]
    assert loaded.fix_like == history.fix_like and loaded.live_files == history.live_files
    opened = HistorySearcher.open(tmp_path / "snap" / "history", config())
    assert opened.index.votes("whitespace rows").files[0].key == "pkg/parser.py"


def test_a_table_written_with_function_columns_loads_and_answers_files_only(repo, tmp_path):
    """A snapshot stored while history also read functions has `functions` and `functions_skipped` columns with
    function rows: it loads, its function rows are left on disk, and its file votes and priors are the same."""
    history = HistoryReader(config(), repo["cache"]).read(repo["git_dir"], repo["snapshot"])
    save_history(history, tmp_path / "new")
    save_history(history, tmp_path / "old")
    rewrite_with_functions(tmp_path / "old", {"pkg/parser.py": ["pkg/parser.py::render", "pkg/parser.py::parse"]})
    assert "functions" in pl.read_parquet(tmp_path / "old" / "commits.parquet").columns

    old, new = load_history(tmp_path / "old"), load_history(tmp_path / "new")
    assert old.records == new.records and old.fix_like == new.fix_like
    assert not any(hasattr(r, "functions") for r in old.records)  # the function rows are not read
    old_votes = HistorySearcher(old, config()).index.votes("render drops whitespace in rows")
    new_votes = HistorySearcher(new, config()).index.votes("render drops whitespace in rows")
    assert [(v.key, v.score) for v in old_votes.files] == [(v.key, v.score) for v in new_votes.files]
    assert [v.key for v in old_votes.files] == ["pkg/parser.py"]
    assert HistorySearcher(old, config()).priors.files == HistorySearcher(new, config()).priors.files


def test_a_cached_record_with_function_fields_is_reused(repo):
    """Cache rows written while history also read functions carry `functions` and `functions_skipped`: they are
    read again as they are (no git), their function fields dropped."""
    first = HistoryReader(config(), repo["cache"]).read(repo["git_dir"], repo["snapshot"])
    db = sqlite3.connect(str(repo["cache"]))
    with db:
        for key, sha, stored in db.execute("SELECT key, sha, record FROM commits").fetchall():
            if stored:
                old = {**json.loads(stored), "functions": ["pkg/parser.py::render"], "functions_skipped": False}
                db.execute("UPDATE commits SET record = ? WHERE key = ? AND sha = ?", (json.dumps(old), key, sha))
    db.close()
    again = HistoryReader(config(), repo["cache"]).read(repo["git_dir"], repo["snapshot"])
    assert again.read_commits == 0 and again.records == first.records


def test_age_decay_prefers_the_recent_commit(repo):
    history = HistoryReader(config(), repo["cache"]).read(repo["git_dir"], repo["snapshot"])
    flat = HistorySearcher(history, config()).index
    decayed = HistorySearcher(history, config(half_life_days=5.0)).index
    record = history.records[1]
    assert flat.weight(record, 2.0, 2.0) == 1.0
    assert decayed.weight(record, 2.0, 2.0) == pytest.approx(0.5 ** 4)  # 20 days old, half-life 5 days


def _renamed_clone(repo, work: Path) -> tuple[str, str]:
    """A clone of `repo` whose newest commit renames pkg/parser.py to pkg/rows.py: (before, after) shas."""
    subprocess.run(["git", "clone", "-q", str(repo["git_dir"]), str(work)], check=True)
    before = git(work, "rev-parse", "HEAD")
    git(work, "mv", "pkg/parser.py", "pkg/rows.py")
    git(work, "commit", "-q", "-m", "Move the parser module to rows.py", when=T0 + 50 * DAY)
    return before, git(work, "rev-parse", "HEAD")


def test_votes_follow_renames_up_to_the_snapshot_only(repo, tmp_path):
    work = tmp_path / "w3"
    before, after = _renamed_clone(repo, work)
    reader = HistoryReader(config(), tmp_path / "r.sqlite")
    moved = HistorySearcher(reader.read(work, after), config()).index.votes("render drops whitespace")
    assert "pkg/rows.py" in [v.key for v in moved.files] and "pkg/parser.py" not in [v.key for v in moved.files]
    kept = HistorySearcher(reader.read(work, before), config()).index.votes("render drops whitespace")
    assert [v.key for v in kept.files] == ["pkg/parser.py"]  # the later rename is not followed


def test_reindex_takes_renames_from_the_cache_and_keeps_the_time_cut(repo, tmp_path, monkeypatch):
    import pipelines.history.reader as reader_module

    work = tmp_path / "w4"
    before, after = _renamed_clone(repo, work)
    first = HistoryReader(config(), tmp_path / "r.sqlite").read(work, after)

    def no_git_log(*_args: object) -> dict:
        raise AssertionError("a re-index of scanned commits must not scan git for renames")
    monkeypatch.setattr(reader_module, "source_renames", no_git_log)
    again = HistoryReader(config(), tmp_path / "r.sqlite").read(work, after)  # a fresh reader: disk cache only
    assert [(r.sha, r.files) for r in again.records] == [(r.sha, r.files) for r in first.records]
    assert "pkg/rows.py" in {f for r in again.records for f in r.files} and again.renamed_paths == first.renamed_paths > 0
    earlier = HistoryReader(config(), tmp_path / "r.sqlite").read(work, before)  # cached, the later rename not applied
    assert "pkg/parser.py" in {f for r in earlier.records for f in r.files}
    assert "pkg/rows.py" not in {f for r in earlier.records for f in r.files} and earlier.renamed_paths == 0
