"""Check an entry's scope and evidence against a snapshot: do its paths and symbols still exist, and
does its evidence resolve?

Paths (globs allowed) match the snapshot's indexed files; a symbol matches a definition's name, qualified
name (`Class.method`), `module.qualname` or `path::qualname`, with a trailing `()` ignored. A scope that
names nothing has nothing to check: `unverified`, never green. Unknown names are notes (warnings).

Evidence counts only when it resolves in the snapshot: a commit (`abc1234`, `commit abc1234`) that is in
the history of the snapshot's commit, a test id (`path::test_name`) or a path or symbol the snapshot has.
Anything else (`made-up`, a sha that does not exist) counts for nothing.
"""

from __future__ import annotations

import fnmatch
import re
from dataclasses import dataclass, field
from functools import cached_property

from semantica.ondisk.source import GitError, run_git
from semantica.snapshot import Snapshot
from serving.knowledge.entry import Entry, Verification

_SHA = re.compile(r"^(?:commit\s+)?([0-9a-fA-F]{7,40})$")
GIT_TIMEOUT_S = 5.0


@dataclass
class VerifyResult:
    state: Verification
    notes: list[str] = field(default_factory=list)
    snapshot_id: str = ""
    evidence: list[str] = field(default_factory=list)  # the evidence items that resolved

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

    def read_tables(self) -> None:
        """Read now the tables a verification reads (files, chunks, symbols): a damaged one fails the caller
        (DamagedTableError, 503) before it stores anything, so its retry cannot store the entry twice."""
        _ = self.files, self.names

    def has_path(self, pattern: str) -> bool:
        if any(ch in pattern for ch in "*?["):
            return any(fnmatch.fnmatchcase(f, pattern) for f in self.files)
        prefix = pattern.rstrip("/") + "/"
        return pattern in self.files or any(f.startswith(prefix) for f in self.files)

    def has_symbol(self, name: str) -> bool:
        return name.strip().removesuffix("()") in self.names

    def has_commit(self, sha: str) -> bool:
        """`sha` names a commit in the history of the snapshot's commit (git of its source checkout)."""
        source = self.snapshot.manifest.source or {}
        path, head = source.get("path") or "", self.snapshot.manifest.built_commit
        if not path or not head:
            return False
        try:
            run_git(path, ["merge-base", "--is-ancestor", f"{sha}^{{commit}}", head], GIT_TIMEOUT_S)
        except GitError:
            return False
        return True

    def resolves(self, item: str) -> bool:
        text = item.strip()
        sha = _SHA.match(text)
        if sha:
            return self.has_commit(sha.group(1))
        if "::" in text:  # a test id or path::qualname
            path, _, name = text.partition("::")
            return self.has_path(path) and (self.has_symbol(text) or self.has_symbol(name.split("[")[0]))
        return bool(text) and (self.has_path(text) or self.has_symbol(text))


class Verifier:
    """`verify(entry, index)` -> green when every path and symbol in its scope exists in the snapshot."""

    def verify(self, entry: Entry, index: SnapshotIndex) -> VerifyResult:
        notes = [f"path {p!r} matches no file in snapshot {index.snapshot.snapshot_id}" for p in entry.paths
                 if not index.has_path(p)]
        notes += [f"symbol {s!r} is not defined in snapshot {index.snapshot.snapshot_id}" for s in entry.symbols
                  if not index.has_symbol(s)]
        resolved = [e for e in entry.evidence if index.resolves(e)]
        state = (Verification.FAILED if notes else Verification.GREEN if entry.paths or entry.symbols
                 else Verification.UNVERIFIED)
        return VerifyResult(state, notes, index.snapshot.snapshot_id, resolved)
