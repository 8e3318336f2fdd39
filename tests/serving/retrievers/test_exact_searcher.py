"""THE exact searcher on a real index of this repository at a fixed commit: ordering, caps and `truncated`, globs,
context, guardrails, and the same (path, line) matches as ripgrep over the files the index holds."""

from __future__ import annotations

import dataclasses
import subprocess
from pathlib import Path

import pytest

from jobs.bench.grep import HAND_CASES, Case, find_rg, indexed_files, rg_lines
from semantica.api import QueryError
from semantica.ondisk.layout_errors import UnknownRepoError
from semantica.snapshot import SnapshotSet
from semantica.stores.exact import PatternError, segments
from semantica.stores.index_kinds.exact import KIND as EXACT_KIND
from serving.retrievers.exact import ExactSearcher, GrepRequest, PathGlobs
from tests.conftest import EXACT_COMMIT, EXACT_CORPUS, REPO_ROOT

pytestmark = pytest.mark.timeout(900)
# ~30 of the bench's cases: literals, regexes, -i, -w, Unicode, text in non-code files, hostile ones
ORACLE_CASES = [c for c in HAND_CASES if c.kind != "literal-short"][:26] + [
    Case("ErrorKind"), Case("errorkind", ignore_case=True, kind="literal-i"), Case("kind", word=True, kind="literal-w"),
    Case(r"\bINVALID\b", regex=True, kind="regex"), Case("semantica", ignore_case=True, word=True, kind="literal-w"),
    Case(r"(a+)+$", regex=True, kind="hostile"), Case("Makefile", kind="non-code"), Case(r"^\t", regex=True),
    Case(r"\S\s{2,}\S", regex=True, kind="regex-noliteral"), Case(r"[^\w\s]{3,}$", regex=True, kind="regex-noliteral"),
    Case(r"\W+$", regex=True, kind="regex-noliteral"),  # no literal: every file read, classes that hold a line break
    Case(r"\Aimport ", regex=True), Case(r"\)\z", regex=True), Case(r"\A\s*$", regex=True)]  # rg: a line's edges


@pytest.fixture(scope="module")
def searcher(indexed_exact) -> ExactSearcher:
    return ExactSearcher(indexed_exact.config)


def grep(searcher: ExactSearcher, pattern: str, **fields) -> object:
    return searcher.search(GrepRequest(pattern, repos=[searcher_repo()], **fields))


def searcher_repo() -> str:
    from tests.conftest import EXACT_NAME

    return EXACT_NAME


@pytest.fixture(scope="module")
def checkout(tmp_path_factory) -> Path:
    """The commit's tree (git archive), for rg."""
    root = tmp_path_factory.mktemp("exact-tree")
    archive = subprocess.run(["git", "-C", str(REPO_ROOT), "archive", "--format=tar", EXACT_COMMIT, *EXACT_CORPUS],
                             capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(root)], input=archive, check=True)
    return root


def test_the_snapshot_stores_every_indexed_file_and_matches_are_ordered_by_path_then_line(indexed_exact, searcher):
    snapshot = SnapshotSet(indexed_exact.config).get(indexed_exact.name)
    assert snapshot.manifest.counts["exact_files"] == len(EXACT_CORPUS)
    assert sorted(indexed_files(indexed_exact.config, indexed_exact.name)[0]) == sorted(EXACT_CORPUS)
    answer = grep(searcher, "error", ignore_case=True, max_count=10_000)
    keys = [(m.path, m.line) for m in answer.matches]
    assert keys == sorted(keys) and len(set(keys)) == len(keys)
    assert {"docs/errors.md", "semantica/errors.py", "conf/default.yaml"} <= {m.path for m in answer.matches}
    assert not answer.truncated and answer.snapshots == {indexed_exact.name: snapshot.snapshot_id}
    assert answer.freshness[indexed_exact.name]["commit"] == EXACT_COMMIT
    first = next(m for m in answer.matches if m.path == "semantica/errors.py")
    line = (REPO_ROOT / "semantica/errors.py").read_text().splitlines()[first.line - 1]
    assert line.lower().find("error") + 1 == first.column  # ASCII line: the byte column is the character column


def test_max_count_caps_the_whole_answer_and_says_it_was_truncated(searcher):
    whole = grep(searcher, "error", ignore_case=True, max_count=10_000).matches
    capped = grep(searcher, "error", ignore_case=True, max_count=7)
    assert capped.matches == whole[:7] and capped.truncated
    exact = grep(searcher, "error", ignore_case=True, max_count=len(whole))
    assert len(exact.matches) == len(whole) and not exact.truncated  # full, nothing left: not truncated


def test_the_per_file_cap_and_the_deadline_truncate(indexed_exact):
    capped = ExactSearcher(dataclasses.replace(indexed_exact.config, exact=dataclasses.replace(
        indexed_exact.config.exact, max_matches_per_file=2)))
    answer = capped.search(GrepRequest("error", ignore_case=True, repos=[indexed_exact.name], max_count=10_000))
    per_file: dict[str, int] = {}
    for m in answer.matches:
        per_file[m.path] = per_file.get(m.path, 0) + 1
    assert max(per_file.values()) == 2 and answer.truncated
    assert any("max_matches_per_file" in w for w in answer.warnings)
    late = ExactSearcher(dataclasses.replace(indexed_exact.config, exact=dataclasses.replace(
        indexed_exact.config.exact, deadline_s=0.0)))
    stopped = late.search(GrepRequest("error", repos=[indexed_exact.name]))
    assert stopped.truncated and stopped.matches == [] and any("deadline" in w for w in stopped.warnings)


def test_path_globs_follow_rg_glob_rules(searcher):
    markdown = {m.path for m in grep(searcher, "error", path_globs=["*.md"], max_count=5000).matches}
    assert "docs/errors.md" in markdown and all(p.endswith(".md") for p in markdown)
    assert {m.path for m in grep(searcher, "error", path_globs=["semantica/**"], max_count=5000).matches} == {
        "semantica/errors.py", "semantica/api.py"}
    assert "docs/errors.md" not in {m.path for m in grep(searcher, "error", path_globs=["!docs/*"]).matches}
    globs = PathGlobs(["*.py"])
    assert globs.accepts("a/b/c.py") and not globs.accepts("a/b/c.pyi")
    assert PathGlobs(["docs"]).accepts("docs/x.md") and not PathGlobs(["doc"]).accepts("docs/x.md")


def test_context_lines_come_with_each_match(searcher):
    (match,) = grep(searcher, "class ErrorKind(Enum):", context=2).matches
    source = (REPO_ROOT / "semantica/errors.py").read_text().splitlines()
    assert match.before == source[match.line - 3:match.line - 1] and match.after == source[match.line:match.line + 2]


def test_a_file_of_several_segments_answers_as_one_file_line_numbers_context_and_per_file_cap(indexed_exact, searcher):
    path = "conf/default.yaml"  # about 24 KB: three segments
    text = subprocess.run(["git", "-C", str(REPO_ROOT), "show", f"{EXACT_COMMIT}:{path}"], capture_output=True,
                          check=True, text=True).stdout
    source = text.splitlines()
    starts = [first for first, _ in segments(text)][1:]
    assert len(starts) >= 2
    answer = grep(searcher, r"\S", regex=True, path_globs=[path], context=3, max_count=5000)
    nonblank = [n + 1 for n, line in enumerate(source) if line.strip()]
    assert [m.line for m in answer.matches] == nonblank
    for m in answer.matches:  # context from the neighbouring segments too
        assert (m.before, m.after) == (source[max(0, m.line - 4):m.line - 1], source[m.line:m.line + 3]), m.line
    assert any(0 < start - m.line <= 3 or 0 <= m.line - start < 3 for m in answer.matches for start in starts)
    capped = ExactSearcher(dataclasses.replace(indexed_exact.config, exact=dataclasses.replace(
        indexed_exact.config.exact, max_matches_per_file=len(nonblank) - 5)))
    kept = capped.search(GrepRequest(r"\S", regex=True, path_globs=[path], repos=[indexed_exact.name], max_count=5000))
    assert [m.line for m in kept.matches] == nonblank[:-5] and kept.truncated  # one cap for the file, not one per segment
    assert sum("max_matches_per_file" in w for w in kept.warnings) == 1


def test_bad_requests_and_unknown_repositories_are_caller_errors(searcher, indexed_exact):
    with pytest.raises(PatternError, match="invalid regex"):
        grep(searcher, "(unclosed", regex=True)
    with pytest.raises(QueryError, match="max_count"):
        grep(searcher, "x", max_count=0)
    with pytest.raises(UnknownRepoError):
        searcher.search(GrepRequest("x", repos=["no/such"]))
    capped = grep(searcher, "error", context=10_000)
    assert any("max_context_lines" in w for w in capped.warnings)


def test_a_broken_exact_shard_degrades_the_answer_instead_of_failing_it(indexed_exact, tmp_path):
    snapshot = SnapshotSet(indexed_exact.config).get(indexed_exact.name)

    class Broken(SnapshotSet):
        def resolve(self, names=None):
            opened, broken = super().resolve(names)
            for s in opened:
                s._indexes.put(EXACT_KIND, None)  # an index that cannot be iterated
            return opened, broken

    answer = ExactSearcher(indexed_exact.config, Broken(indexed_exact.config)).search(
        GrepRequest("error", repos=[snapshot.repo]))
    assert answer.matches == [] and answer.degraded[0]["stage"] == "exact"


def test_the_same_matching_lines_as_ripgrep_over_the_indexed_files(indexed_exact, searcher, checkout):
    rg = find_rg()
    if not rg:
        pytest.skip("SKIPPED LOUDLY: no rg binary (pip install ripgrep==14.1.0, the dev extra, or apt-get install "
                    "ripgrep): the exact-search oracle cannot run")
    files, _ = indexed_files(indexed_exact.config, indexed_exact.name)
    assert len(ORACLE_CASES) >= 30
    differ = {}
    for case in ORACLE_CASES:
        ours = {(m.path, m.line) for m in grep(searcher, case.pattern, regex=case.regex, ignore_case=case.ignore_case,
                                                word=case.word, max_count=5000).matches}
        theirs = rg_lines(rg, checkout, files, case)
        if ours != theirs:
            differ[case.pattern] = (sorted(ours - theirs)[:3], sorted(theirs - ours)[:3])
    assert differ == {}
