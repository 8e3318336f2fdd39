"""Check an entry's scope against a snapshot: do its paths and symbols still exist?

Paths (globs allowed) match the snapshot's indexed files; a symbol matches a definition's name, qualified
name (`Class.method`), `module.qualname` or `path::qualname`, with a trailing `()` ignored. A scope that
names nothing is green once its repository has a snapshot. Unknown names are notes (warnings), not errors.
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass, field
from functools import cached_property

from semantica.knowledge.entry import Entry, Verification
from semantica.snapshot import Snapshot


@dataclass
class VerifyResult:
    state: Verification
    notes: list[str] = field(default_factory=list)
    snapshot_id: str = ""

    @property
    def warnings(self) -> list[str]:
        return self.notes if self.state is Verification.FAILED else []


class SnapshotIndex:
    """The names one snapshot defines and the files it holds, built once per curator pass or request."""

    def __init__(self, snapshot: Snapshot) -> None:
        self.snapshot = snapshot

    @cached_property
    def files(self) -> set[str]:
        return set(self.snapshot.file_blobs.blobs) | set(self.snapshot.chunks_by_path)

    @cached_property
    def names(self) -> set[str]:
        names: set[str] = set()
        for s in self.snapshot.symbols:
            names.update({s.name, s.qualname, f"{s.module}.{s.qualname}" if s.module else s.qualname,
                          f"{s.path}::{s.qualname}", s.fqn})
        return names

    def has_path(self, pattern: str) -> bool:
        if any(ch in pattern for ch in "*?["):
            return any(fnmatch.fnmatchcase(f, pattern) for f in self.files)
        prefix = pattern.rstrip("/") + "/"
        return pattern in self.files or any(f.startswith(prefix) for f in self.files)

    def has_symbol(self, name: str) -> bool:
        return name.strip().removesuffix("()") in self.names


class Verifier:
    """`verify(entry, index)` -> green when every path and symbol in its scope exists in the snapshot."""

    def verify(self, entry: Entry, index: SnapshotIndex) -> VerifyResult:
        notes = [f"path {p!r} matches no file in snapshot {index.snapshot.snapshot_id}" for p in entry.paths
                 if not index.has_path(p)]
        notes += [f"symbol {s!r} is not defined in snapshot {index.snapshot.snapshot_id}" for s in entry.symbols
                  if not index.has_symbol(s)]
        return VerifyResult(Verification.FAILED if notes else Verification.GREEN, notes, index.snapshot.snapshot_id)
