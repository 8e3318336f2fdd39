"""Cheap structural checks of a published snapshot's table and index files (no row is read), and the error that
names the damaged ones: what `/v1/repos`, `/healthz` and every reader of a table report, kept apart from the
snapshot reader that raises it. Each file's verdict is kept while its stat is unchanged (`check_cache`)."""

from __future__ import annotations

import os
import zipfile
from collections.abc import Callable
from pathlib import Path, PurePosixPath
from typing import Any

import faiss
import numpy as np
import pyarrow.parquet as pq

from semantica.errors import public_message
from semantica.ondisk.check_cache import StatCachedChecks
from semantica.ondisk.layout_errors import BrokenSnapshotError
from semantica.ondisk.lucene_files import lucene_damage
from semantica.ondisk.snapshot_paths import SnapshotPaths
from semantica.schema import Manifest
from semantica.stores.vectors import read_index_mmap

CORE_TABLES = ("chunks.parquet", "symbols.parquet", "edges.parquet")  # checked even if a manifest omits them
JSON_TAIL_BYTES = 64  # enough to find a JSON document's last non-blank character
SQLITE_MAGIC = b"SQLite format 3\x00"
SQLITE_HEADER_BYTES = 100  # page size at 16, change counter at 24, page count at 28, the count's validity at 92
SQLITE_LARGEST_PAGE = 65_536  # the one page size the header stores as 1
FAISS_PRODUCT_QUANTIZER = "pq.faiss"  # semantica.stores.token_vectors.PQ_FILE: a bare quantizer, not an index
LUCENE_KIND = "lucene"  # a shard of this kind is a Lucene index directory (semantica.stores.index_kinds.lucene)


class DamagedTableError(BrokenSnapshotError):
    """Tables of a published snapshot cannot be read (truncated, corrupt): 503 naming them. Damaged chunks leave
    the repository out of answers (`degraded`: the others answer); another table fails only what reads it."""

    def __init__(self, repo: str, tables: list[str], detail: str) -> None:
        self.repo, self.tables, self.detail = repo, list(tables), detail
        what = PurePosixPath(self.tables[0]).stem if len(self.tables) == 1 else "tables"
        super().__init__(f"repository {repo!r}: {what} unreadable: damaged table(s) {', '.join(self.tables)} "
                         f"({detail}); re-index it (`semantica index --repo PATH --name {repo}`)")

    def __reduce__(self) -> tuple[Any, ...]:  # crosses Ray (a retriever deployment raises it)
        return type(self), (self.repo, self.tables, self.detail)


def _check_parquet(path: Path) -> None:
    pq.read_metadata(path)


def _check_npz(path: Path) -> None:
    with zipfile.ZipFile(path) as archive:  # opening reads the central directory at the end: a cut file has none
        archive.namelist()


def _check_npy(path: Path) -> None:
    np.load(path, mmap_mode="r", allow_pickle=False)  # the header's shape must fit the file's size


def _check_json(path: Path) -> None:
    """The document's last character closes it (every JSON file of a snapshot is an object or a list): a cut
    file fails this without being parsed, which /healthz cannot afford on every check."""
    with open(path, "rb") as handle:
        handle.seek(0, 2)
        handle.seek(max(0, handle.tell() - JSON_TAIL_BYTES))
        tail = handle.read().rstrip()
    if not tail.endswith((b"}", b"]")):
        raise ValueError("the JSON document is cut short (it does not end with '}' or ']')")


def _check_sqlite(path: Path) -> None:
    """The header's magic, and a file as long as the pages its header counts: a cut file is shorter (no page is
    read; SQLite itself would only notice on reaching a missing page)."""
    with open(path, "rb") as handle:
        header = handle.read(SQLITE_HEADER_BYTES)
        size = os.fstat(handle.fileno()).st_size
    if len(header) < SQLITE_HEADER_BYTES or not header.startswith(SQLITE_MAGIC):
        raise ValueError("not an SQLite database (its header is missing or cut short)")
    page_size = int.from_bytes(header[16:18], "big")
    page_size = SQLITE_LARGEST_PAGE if page_size == 1 else page_size
    pages = int.from_bytes(header[28:32], "big")
    if pages and header[24:28] == header[92:96]:  # the page count is valid for this version of the file
        if size < pages * page_size:
            raise ValueError(f"the SQLite database is cut short ({size} bytes of {pages} pages of {page_size})")
    elif not page_size or size % page_size:
        raise ValueError(f"the SQLite database is cut short ({size} bytes, not whole pages of {page_size})")


def _check_faiss(path: Path) -> None:
    """FAISS's own reader, memory-mapped as the searcher opens it: it checks every stored array against the
    file's length without reading the vectors' pages."""
    try:
        if path.name == FAISS_PRODUCT_QUANTIZER:
            faiss.read_ProductQuantizer(str(path))
        else:
            read_index_mmap(path)
    except RuntimeError as exc:  # FAISS's message names the file: say what is wrong without it
        raise ValueError("the FAISS index is cut short or corrupt (FAISS cannot read it)") from exc


TABLE_CHECKS: dict[str, Callable[[Path], None]] = {
    ".parquet": _check_parquet, ".npz": _check_npz, ".npy": _check_npy, ".json": _check_json,
    ".faiss": _check_faiss, ".sqlite": _check_sqlite}
"""A cheap structural check per file format (no row is read): what `damaged_tables` runs on every such file."""


def _file_verdict(path: Path) -> str:
    """'' for a file that passes its format's check, else why (path-free)."""
    try:
        TABLE_CHECKS[path.suffix](path)
    except Exception as exc:  # truncated, corrupt or unreadable
        return public_message(exc)
    return ""


class TableChecks:
    """The damaged tables and index files of a snapshot, each file's verdict kept while its stat is unchanged."""

    def __init__(self) -> None:
        self._files = StatCachedChecks(_file_verdict)
        self._lucene = StatCachedChecks(lucene_damage)

    def damaged(self, paths: SnapshotPaths, manifest: Manifest) -> dict[str, str]:
        """Each table or index file of the snapshot that fails its format's cheap check -> why (path-free):
        Parquet footers, NumPy archives' directories and arrays' sizes, JSON documents' ends, FAISS indexes as
        FAISS reads them, SQLite headers against the file's length, for every such file the manifest lists
        (files, history, localizer, function-vector and exact tables too); and each Lucene shard's commit point,
        segment infos and the files they list (missing, or without the codec footer a cut file loses)."""
        names = dict.fromkeys([*CORE_TABLES, *(r for r in manifest.checksums if PurePosixPath(r).suffix in TABLE_CHECKS)])
        damaged: dict[str, str] = {}
        for relative in names:
            why = self._checked(paths.root / relative)
            if why:
                damaged[relative] = why
        for shard in manifest.shards:
            if shard.kind == LUCENE_KIND:
                for name, why in self._lucene_damage(paths.root / shard.path).items():
                    damaged[f"{shard.path}/{name}" if name else shard.path] = why
        return damaged

    def _checked(self, path: Path) -> str:
        try:
            return self._files.verdict(path)
        except OSError as exc:  # missing or unreadable: not cached (it may come back)
            return public_message(exc)

    def _lucene_damage(self, directory: Path) -> dict[str, str]:
        try:
            return self._lucene.verdict(directory)
        except OSError as exc:
            return {"": public_message(exc)}


SHARED_CHECKS = TableChecks()
"""One process's verdicts (every `SnapshotSet` of a process lists the same files)."""


def damaged_tables(paths: SnapshotPaths, manifest: Manifest) -> dict[str, str]:
    """`TableChecks.damaged` with this process's shared verdicts."""
    return SHARED_CHECKS.damaged(paths, manifest)


def damaged_error(repo: str, damaged: dict[str, str]) -> DamagedTableError:
    first = next(iter(damaged.values()))
    return DamagedTableError(repo, list(damaged), first)
