"""Writing a snapshot when the disk fills up: a clear error naming the directory and its free space, no
trace, no half-written snapshot left, the previous snapshot still published."""

from __future__ import annotations

import errno
import subprocess
from pathlib import Path

import pytest

from jobs.cli import main
from pipelines.write import is_disk_full
from semantica.layout import TMP_SUFFIX, IndexLayout
from tests.conftest import SHORT_EMBEDDINGS, WITHOUT_TOKEN_VECTORS
from tests.tmpfs import mounted_tmpfs

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


TINY_TMPFS = "size=256k"  # a real file system that fills up: each writer below needs more than this


@pytest.fixture()
def full_disk(tmp_path: Path):
    """A directory on a 256 KiB tmpfs (needs root and mount rights; skipped loudly otherwise): ENOSPC for real,
    from the kernel, to every writer (Python, the JVM, FAISS's C++, SQLite, a memory map)."""
    with mounted_tmpfs(tmp_path / "tiny", TINY_TMPFS, "the injected failures above cover the messages") as mount_point:
        yield mount_point


def test_a_lucene_shard_that_fills_the_disk_is_an_enospc(full_disk):
    """N14: Anserini logs the JVM's IOException and drops the documents; the shard's read-back then raised
    IndexNotFoundException (a Java trace with the shard's absolute path). Now: ENOSPC, which is_disk_full knows."""
    from semantica.config import LuceneConfig
    from semantica.stores.lucene import LuceneDoc, LuceneShardWriter

    writer = LuceneShardWriter(full_disk / "lucene", LuceneConfig())
    writer.add(LuceneDoc(f"c{n}", f"def function_{n}(value):\n    return value * {n} + {n * 7}\n" * 20, f"m{n}.py",
                         f"function_{n}") for n in range(3000))
    with pytest.raises(OSError) as raised:
        writer.close()
    assert raised.value.errno == errno.ENOSPC and is_disk_full(raised.value)


def test_faiss_and_sqlite_writes_that_fill_the_disk_are_recognised(full_disk):
    """FAISS's C++ writer raises a RuntimeError ('... (No space left on device)') and SQLite 'database or disk is
    full': both were printed as they came (absolute path, FAISS's source line) instead of the one clear line."""
    import sqlite3

    import faiss
    import numpy as np

    index = faiss.IndexFlatIP(64)
    index.add(np.random.default_rng(0).random((4000, 64), dtype=np.float32))
    with pytest.raises(RuntimeError) as faiss_full:
        faiss.write_index(index, str(full_disk / "vectors.faiss"))
    assert is_disk_full(faiss_full.value), faiss_full.value
    (full_disk / "vectors.faiss").unlink()
    db = sqlite3.connect(full_disk / "exact.sqlite")
    db.execute("CREATE TABLE t (x BLOB)")
    with pytest.raises(sqlite3.OperationalError) as sqlite_full:
        for _ in range(100):
            db.execute("INSERT INTO t VALUES (?)", (b"\0" * 16384,))
            db.commit()
    db.close()
    assert is_disk_full(sqlite_full.value), sqlite_full.value


TOKEN_WRITE = """
import errno, sys
import numpy as np
from semantica.stores.token_vectors import TokenCodec, TokenProjection, write_token_part
codec = TokenCodec(TokenProjection(None, 64), "float16")
rows = [codec.encode(np.random.default_rng(n).random((200, 64), dtype=np.float32)) for n in range(40)]
try:
    write_token_part(__import__("pathlib").Path(sys.argv[1]), codec, rows)
except OSError as exc:
    sys.exit(0 if exc.errno == errno.ENOSPC else 3)
sys.exit(4)
"""


def test_token_vectors_that_fill_the_disk_are_an_enospc_not_a_sigbus(full_disk):
    """The codes were stored through a memory map: on a full tmpfs the store into an unbacked page is SIGBUS, which
    killed the build (the JVM's crash report in the working directory, the .tmp and its lock left behind)."""
    import sys

    from tests.conftest import REPO_ROOT

    done = subprocess.run([sys.executable, "-c", TOKEN_WRITE, str(full_disk / "tokens")], cwd=full_disk.parent,
                          env={"PYTHONPATH": str(REPO_ROOT), "PATH": "/usr/bin:/bin"}, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, (done.returncode, done.stderr[-2000:])
