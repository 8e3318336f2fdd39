"""Cheap structural checks of a published snapshot's table files (no row is read), and the error that names the
damaged ones: what `/v1/repos`, `/healthz` and every reader of a table report, kept apart from the snapshot reader
that raises it."""

from __future__ import annotations

import zipfile
from pathlib import Path, PurePosixPath
from typing import Any

import numpy as np
import pyarrow.parquet as pq

from semantica.errors import public_message
from semantica.ondisk.layout_errors import BrokenSnapshotError
from semantica.ondisk.snapshot_paths import SnapshotPaths
from semantica.schema import Manifest

CORE_TABLES = ("chunks.parquet", "symbols.parquet", "edges.parquet")  # checked even if a manifest omits them
JSON_TAIL_BYTES = 64  # enough to find a JSON document's last non-blank character


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


TABLE_CHECKS = {".parquet": _check_parquet, ".npz": _check_npz, ".npy": _check_npy, ".json": _check_json}
"""A cheap structural check per table format (no row is read): what `damaged_tables` runs on every such file."""


def damaged_tables(paths: SnapshotPaths, manifest: Manifest) -> dict[str, str]:
    """Each table of the snapshot that fails its format's cheap check -> why (path-free): Parquet footers, NumPy
    archives' directories and arrays' sizes, JSON documents' ends, for every such file the manifest lists (files,
    history, localizer and function-vector tables too)."""
    names = dict.fromkeys([*CORE_TABLES, *(r for r in manifest.checksums if PurePosixPath(r).suffix in TABLE_CHECKS)])
    damaged: dict[str, str] = {}
    for relative in names:
        try:
            TABLE_CHECKS[PurePosixPath(relative).suffix](paths.root / relative)
        except Exception as exc:  # truncated, corrupt, missing or unreadable
            damaged[relative] = public_message(exc)
    return damaged


def damaged_error(repo: str, damaged: dict[str, str]) -> DamagedTableError:
    first = next(iter(damaged.values()))
    return DamagedTableError(repo, list(damaged), first)
