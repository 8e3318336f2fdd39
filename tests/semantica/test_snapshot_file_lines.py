"""A snapshot's rebuilt file lines: kept per file once asked for, and every caller gets its own list (the context
builder, the repository map and the learned localizer all read them)."""

from __future__ import annotations

from pathlib import Path

import pytest

from pipelines.indexer import Indexer
from semantica.layout import IndexLayout
from semantica.schema import chunk_lines
from semantica.snapshot import Snapshot
from tests.conftest import make_config
from tests.dated_git import one_commit_repo

pytestmark = pytest.mark.timeout(600)

SOURCE = "".join(f"def step_{n}(value):\n    return value + {n}\n\n\n" for n in range(60))


@pytest.fixture(scope="module")
def snapshot(tmp_path_factory) -> Snapshot:
    root: Path = tmp_path_factory.mktemp("lines")
    config = make_config(root)
    Indexer(config, progress=False).index(str(one_commit_repo(root / "repo", {"steps.py": SOURCE})), "lines")
    return Snapshot.open(IndexLayout(config.paths.index_root).current("lines"), config)


def test_file_lines_are_the_chunks_rebuilt_and_each_caller_owns_its_list(snapshot: Snapshot) -> None:
    first = snapshot.file_lines("steps.py")
    assert first == chunk_lines(snapshot.chunks_by_path["steps.py"])
    assert first[:2] == ["def step_0(value):", "    return value + 0"]
    first[0] = "edited by a caller"
    first.append("appended by a caller")
    again = snapshot.file_lines("steps.py")
    assert again == chunk_lines(snapshot.chunks_by_path["steps.py"])
    assert snapshot.file_lines("absent.py") == []
