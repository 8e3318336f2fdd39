"""Writing a snapshot when the disk fills up: a clear error naming the directory and its free space, no
trace, no half-written snapshot left, the previous snapshot still published."""

from __future__ import annotations

import errno
import subprocess
from pathlib import Path

import pytest

from jobs.cli import main
from semantica.layout import TMP_SUFFIX, IndexLayout
from tests.conftest import SHORT_EMBEDDINGS, WITHOUT_TOKEN_VECTORS

GIT = ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", "-c", "commit.gpgsign=false"]
JAVA_TRACE = ["org.apache.lucene.store.FSDirectory$FSIndexOutput$1.write(FSDirectory.java:416)",
              "org.apache.lucene.index.IndexWriter.addDocument(IndexWriter.java:1470)"]


def java_disk_full(*_args, **_kwargs):
    """What pyjnius raises when the JVM's write fails with ENOSPC (the JNI boundary)."""
    from jnius import JavaException

    raise JavaException("JVM exception occurred: No space left on device", "java.io.IOException",
                        "No space left on device", JAVA_TRACE)


def python_disk_full(*_args, **_kwargs):
    raise OSError(errno.ENOSPC, "No space left on device", "/somewhere/chunks.parquet")


@pytest.fixture()
def published(tmp_path: Path) -> tuple[Path, list[str]]:
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "mod.py").write_text("def first():\n    return 1\n")
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "one"]):
        subprocess.run([*GIT, "-C", str(repo), *args], check=True, capture_output=True)
    sets = [f"paths.index_root={tmp_path / 'index'}", f"paths.cache_dir={tmp_path / 'cache'}",
            *SHORT_EMBEDDINGS, *WITHOUT_TOKEN_VECTORS]
    argv = ["index", "--repo", str(repo), "--name", "full", *[a for s in sets for a in ("--set", s)]]
    assert main(argv) == 0
    (repo / "mod.py").write_text("def first():\n    return 1\n\n\ndef second():\n    return 2\n")
    return tmp_path / "index", argv


@pytest.mark.parametrize("where, failure", [
    ("pyserini.index.lucene.LuceneIndexer.add_batch_raw", java_disk_full),
    ("pyarrow.parquet.write_table", python_disk_full),
])
def test_a_full_disk_while_writing_is_one_clear_line_and_keeps_the_published_snapshot(
        published, monkeypatch, capsys, where, failure):
    """N14: ENOSPC from the JVM (Lucene) or from Python (Parquet), injected at the write call."""
    root, argv = published
    layout = IndexLayout(str(root))
    before = layout.current_id("full")
    capsys.readouterr()
    module, _, attribute = where.rpartition(".")
    if module.endswith("LuceneIndexer"):
        from pyserini.index.lucene import LuceneIndexer
        monkeypatch.setattr(LuceneIndexer, attribute, failure)
    else:
        monkeypatch.setattr(module + "." + attribute, failure)
    assert main(argv) != 0
    err = capsys.readouterr().err
    assert "no space left on device while writing a snapshot under" in err and "MiB free there" in err
    assert str(layout.repo_dir("full")) in err and "previous snapshot stays published" in err
    assert "Traceback" not in err and "IndexWriter" not in err
    assert layout.current_id("full") == before
    assert not any(p.name.endswith(TMP_SUFFIX) for p in layout.repo_dir("full").iterdir())
