"""Reading a repository's history as of one commit: first-parent ancestors only, cached by sha."""

from __future__ import annotations

import dataclasses
import time
from collections import Counter
from pathlib import Path

from pipelines.history.cache import HistoryCache
from pipelines.history.gitread import (
    LoggedCommit,
    first_parent_shas,
    git,
    log_with_source_diffs,
    resolve_commit,
    source_renames,
)
from semantica.config import HistoryConfig
from semantica.languages.spans import spans_language
from semantica.stores.history.records import CommitFilter, CommitRecord, History

CACHE_BATCH = 200
RECORDS_KEY = "files-only"  # what a cached record holds: its changed files (no setting shapes it)


def commit_time(repo_path: str, commit: str) -> int:
    """Author time (unix seconds) of `commit`."""
    return int(git(repo_path, "log", "-1", "--format=%at", commit).decode("ascii").strip() or 0)


class HistoryReader:
    """Reads the first-parent history of a commit from a git dir (bare or not), through the sha cache."""

    def __init__(self, config: HistoryConfig, cache_path: str | Path) -> None:
        self.config = config
        self.filter = CommitFilter(config)
        self.cache = HistoryCache(cache_path, RECORDS_KEY)
        self._rename_scans: dict[str, tuple[set[str], dict[str, list[tuple[str, str]]]]] = {}

    def read(self, repo_path: str | Path, rev: str = "HEAD") -> History:
        """The history of `rev` (included) and its first-parent ancestors, never anything after it."""
        started = time.perf_counter()
        repo_path = str(repo_path)
        commit = resolve_commit(repo_path, rev)
        shas = first_parent_shas(repo_path, commit, self.config.max_commits)
        known = self.cache.get_many(shas)
        missing = [i for i, sha in enumerate(shas) if sha not in known]
        if missing:
            oldest = missing[-1]
            stop = shas[oldest + 1] if oldest + 1 < len(shas) else None
            want = {shas[i] for i in missing}
            fresh = self._read_range(repo_path, shas[missing[0]], stop, want)
            known.update(fresh)
            self.cache.put_many(fresh)
        kept: list[CommitRecord] = []
        dropped: Counter[str] = Counter()
        for sha in shas:
            record = known.get(sha)
            reason = "no source change" if record is None else self.filter.reason(record)
            if reason:
                dropped[reason] += 1
            else:
                kept.append(record)  # type: ignore[arg-type]
        fix_like = {r.sha for r in kept if self.filter.fix_like(r)}
        live = {path for path in git(repo_path, "ls-tree", "-r", "--name-only", commit).decode("utf-8", "replace")
                .split("\n") if spans_language(path)}
        kept, renamed = self._at_snapshot_paths(repo_path, commit, shas, kept, live)
        return History(commit, commit_time(repo_path, commit), kept, fix_like, len(missing),
                       len(shas) - len(missing), dict(dropped), time.perf_counter() - started, live, renamed)

    def _renames(self, repo_path: str, commit: str, shas: list[str]) -> dict[str, list[tuple[str, str]]]:
        """The renames of `shas`: from the sha cache when every sha was scanned before (a re-index reads no
        git log), else one git log of `commit`'s whole first-parent line, kept in memory and in the cache."""
        scanned, events = self._rename_scans.get(repo_path, (set(), {}))
        if not set(shas) <= scanned:
            stored = self.cache.get_renames(shas)
            if len(stored) == len(set(shas)):
                return {sha: stored[sha] for sha in shas if stored[sha]}
            events = {**events, **source_renames(repo_path, commit)}
            line = first_parent_shas(repo_path, commit, 10 ** 9)
            scanned = scanned | set(line)
            self._rename_scans[repo_path] = (scanned, events)
            self.cache.put_renames({sha: events.get(sha, []) for sha in line})
        return {sha: events[sha] for sha in shas if sha in events}

    def _at_snapshot_paths(self, repo_path: str, commit: str, shas: list[str], kept: list[CommitRecord],
                           live: set[str]) -> tuple[list[CommitRecord], int]:
        """Records with each path as the file is named at `commit`: renames made after a record and at or before
        `commit` are followed (newest first, so chains resolve); a path that exists at `commit` is kept as is."""
        final: dict[str, str] = {}
        renames = self._renames(repo_path, commit, shas)
        for sha in shas:  # newest first
            for old, new in renames.get(sha, ()):
                if old not in live:
                    final[old] = final.get(new, new)
        if not final:
            return kept, 0
        renamed = 0
        out = []
        for record in kept:
            files = [final.get(path, path) for path in record.files]
            if files != record.files:
                renamed += 1
                record = dataclasses.replace(record, files=files)
            out.append(record)
        return out, renamed

    def _read_range(self, repo_path: str, newest: str, stop: str | None, want: set[str]) -> dict[str, CommitRecord | None]:
        logged = [c for c in log_with_source_diffs(repo_path, newest, stop) if c.sha in want]
        out: dict[str, CommitRecord | None] = dict.fromkeys(want)
        pending: dict[str, CommitRecord | None] = {}
        for entry in logged:
            out[entry.sha] = pending[entry.sha] = self._record(entry)
            if len(pending) >= CACHE_BATCH:  # an interrupted read keeps what it has done
                self.cache.put_many(pending)
                pending = {}
        self.cache.put_many(pending)
        return out

    def _record(self, entry: LoggedCommit) -> CommitRecord:
        """The commit's changed files (those with parent-side lines) and size; file votes and priors read these."""
        changes = [c for c in entry.changes if c.old_lines]
        return CommitRecord(entry.sha, entry.parents[0] if entry.parents else "", entry.author, entry.author_time,
                            entry.message, [c.path for c in changes], sum(c.added + c.removed for c in changes))

    def close(self) -> None:
        self.cache.close()


def read_snapshot_history(config: HistoryConfig, cache_path: str | Path, repo_path: str | Path,
                          commit: str | None) -> History | None:
    """The history a snapshot stores: `commit` (HEAD for a working tree) and its first-parent ancestors, read
    through the sha cache at `cache_path`; None for a working tree whose repository has no commit yet."""
    if commit is None:
        try:
            resolve_commit(str(repo_path), "HEAD")
        except RuntimeError:
            return None
    reader = HistoryReader(config, cache_path)
    try:
        return reader.read(repo_path, commit or "HEAD")
    finally:
        reader.close()

