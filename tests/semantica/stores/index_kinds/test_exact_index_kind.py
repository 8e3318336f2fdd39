"""The `exact` index kind on this repository at a fixed commit: every text file discovery keeps is stored whole
(code and non-code alike) with trigram postings that never miss a file holding a literal, and an unchanged
partition is linked from the previous snapshot instead of being read and written again."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest

from pipelines.discover import RepoSource
from pipelines.indexer import SourceTexts
from pipelines.source_files import SourceFile
from semantica.stores.exact import ExactShard, PatternSpec, fts_query
from semantica.stores.exact.pattern import required_literals
from semantica.stores.exact.store import StoredFile
from semantica.stores.index_kinds import ShardInputs, WriteContext
from semantica.stores.index_kinds.exact import ExactKind, partition_count
from semantica.stores.index_kinds.sharding import PreviousShards, ShardLinker
from tests.conftest import EXACT_COMMIT, REPO_ROOT, make_config

pytestmark = pytest.mark.timeout(600)
PARTITIONS = 4
LITERALS = ("ErrorKind", "def read(", "index_root", "mkdocs", "Apache", "schema_version", "TODO", "é")


@pytest.fixture(scope="module")
def source_files() -> tuple[RepoSource, list[SourceFile]]:
    source = RepoSource(str(REPO_ROOT), EXACT_COMMIT, make_config(Path("/nonexistent")).discover)
    entries, _ = source.entries()
    return source, [f for f in source.read(entries) if isinstance(f, SourceFile)]


def write(root: Path, texts: object, previous: PreviousShards | None = None) -> tuple[list, ShardLinker]:
    # shards of a quarter of the text each: PARTITIONS of them (the shipped size would hold this corpus in one)
    shard_bytes = -(-texts.bytes // PARTITIONS) if texts is not None else 1
    config = make_config(root, f"exact.shard_bytes={shard_bytes}")
    linker = ShardLinker(previous or PreviousShards(), root)
    inputs = ShardInputs([], np.zeros((0, 4), dtype=np.float32), [], "m", texts=texts)
    written = ExactKind().write(WriteContext(root, inputs, config, PARTITIONS, [], linker))
    return written.shards, linker


def test_every_kept_text_file_is_stored_whole_and_found_by_its_literals(tmp_path, source_files) -> None:
    source, files = source_files
    entries = {e.path: e for e in source.entries()[0]}
    shards, linker = write(tmp_path, SourceTexts(source, [entries[f.path] for f in files]))
    assert len(shards) == PARTITIONS and linker.reuse.written == {"exact": PARTITIONS}
    readers = [ExactShard(tmp_path / s.path) for s in shards]
    stored = {path: n for n, r in enumerate(readers) for path, _ in r.texts()}
    assert set(stored) == {f.path for f in files}  # every file discovery keeps, not only chunked code
    assert {p.rsplit(".", 1)[-1] for p in stored} >= {"py", "md", "yaml", "toml", "json"}
    by_path = {f.path: f.text for f in files}
    for path in ("semantica/errors.py", "docs/errors.md", "conf/default.yaml"):
        assert readers[stored[path]].file(path).decode("utf-8") == by_path[path]
    for literal in LITERALS:
        spec = PatternSpec(literal)
        prefilter = required_literals(spec)
        holding = {p for p, text in by_path.items() if literal in text}
        if prefilter is None:  # shorter than a trigram: every file is read
            continue
        query = fts_query(prefilter, 32)
        found = {run[0] for r in readers for run in r.candidates(query)}
        assert holding <= found, literal  # a superset: RE2 decides
        assert len(found) < len(stored), literal  # and the index ruled files out
    folded = {run[0] for r in readers for run in r.candidates(fts_query(required_literals(
        PatternSpec("errorkind", ignore_case=True)), 32))}
    assert {p for p, t in by_path.items() if "ErrorKind" in t} <= folded  # the index folds case


class ChangedOne:
    """The same files with one changed (a new blob and a new line)."""

    def __init__(self, texts: SourceTexts, path: str) -> None:
        self.inner, self.path = texts, path
        self.files = [(p, "0" * 40 if p == path else b) for p, b in texts.files]
        self.bytes = texts.bytes
        self.read_paths: list[str] = []

    def read(self, wanted):
        for file in self.inner.read(wanted):
            self.read_paths.append(file.path)
            yield dataclasses.replace(file, text=file.text + "brand_new_line\n") if file.path == self.path else file


def test_an_unchanged_partition_is_linked_and_its_files_are_not_read_again(tmp_path, source_files) -> None:
    source, files = source_files
    entries = {e.path: e for e in source.entries()[0]}
    first_root, second_root = tmp_path / "one", tmp_path / "two"
    texts = SourceTexts(source, [entries[f.path] for f in files])
    shards, _ = write(first_root, texts)
    checksums = {s.path: "trusted" for s in shards}
    changed = ChangedOne(texts, "semantica/errors.py")
    again, linker = write(second_root, changed, PreviousShards(first_root, checksums, PARTITIONS))
    assert linker.reuse.linked == {"exact": PARTITIONS - 1} and linker.reuse.written == {"exact": 1}
    partition = next(s for s in again if s.path not in checksums)
    reader = ExactShard(second_root / partition.path)
    assert sorted(changed.read_paths) == sorted(p for p, _ in reader.texts())  # only that partition read
    assert "semantica/errors.py" in {run[0] for run in reader.candidates('"new" AND "_li"')}


def test_a_snapshot_without_texts_or_with_the_kind_off_writes_nothing(tmp_path) -> None:
    assert write(tmp_path, None)[0] == []
    config = make_config(tmp_path, "exact.index=false")
    inputs = ShardInputs([], np.zeros((0, 4), dtype=np.float32), [], "m",
                         texts=type("T", (), {"files": [("a.py", "1" * 40)], "bytes": 1, "read": lambda self, w: iter(
                             [StoredFile("a.py", "1" * 40, "x")])})())
    linker = ShardLinker(PreviousShards(), tmp_path)
    assert ExactKind().write(WriteContext(tmp_path, inputs, config, 1, [], linker)).shards == []


def test_the_partition_count_follows_the_text_size() -> None:
    assert partition_count(0, 4 << 20, 64) == 1  # an empty snapshot still has one (empty) partition
    assert partition_count(30_000_000, 4 << 20, 64) == 8  # about sympy's text
    assert partition_count(10 << 30, 4 << 20, 64) == 64  # capped at shards.max_partitions
