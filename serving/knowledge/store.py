"""Knowledge stores: one SQLite file (with FTS5 full-text search) per repository plus a global one.

Where: `<knowledge.directory>` (default `<paths.index_root>/.knowledge/`, beside the snapshots, never inside
one: snapshots are immutable and pruned, entries outlive them). Files are named by `repo_dir_name`, the
global store is `global.sqlite`. Each file holds:

    entries       the current version of every entry (retired ones too, with their reason)
    versions      every earlier version of an entry, as JSON, with who changed it and why
    entries_fts   FTS5 over title, text and code-aware terms (scope, symbols split like the lexical index)
    votes         one vote per voter per entry (the latest counts); an entry's `votes` is their sum
    meta          `revision`: bumped by every write (a query cache keyed on it never serves old entries)

The clock is injected (`clock()` -> aware datetime), so tests move time without sleeping.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import re
import sqlite3
import threading
import uuid
from collections.abc import Callable, Iterator
from dataclasses import fields
from pathlib import Path
from typing import Any

from semantica.config import Config, KnowledgeConfig
from semantica.ondisk.repo_names import normalize_repo_name, repo_dir_name, repo_from_dir_name
from semantica.stores.tokenizer import tokenize, unique_terms
from serving.knowledge.entry import GLOBAL, Entry, Kind, Review, SourceKind, Status, iso, now_utc
from serving.knowledge.trust import TrustScorer

GLOBAL_FILE = "global.sqlite"
SUFFIX = ".sqlite"
KNOWLEDGE_DIR = ".knowledge"
ID_PREFIX = "k-"
MAX_QUERY_TERMS = 64
MIN_TERM_CHARS = 3
STOPWORDS = frozenset(
    "the and for are was were this that with from into not but has have had you your our its can will what "
    "when where which who why how does did use used uses any all each per via than then them they their there "
    "should must may might also only just more most some such".split())
EDITABLE = ("title", "text", "kind", "paths", "symbols", "source_kind", "source_ref", "evidence")
Clock = Callable[[], dt.datetime]

_COLUMNS = [f.name for f in fields(Entry)]
_SCHEMA = f"""
CREATE TABLE IF NOT EXISTS entries ({", ".join(f"{c} {'TEXT PRIMARY KEY' if c == 'id' else ''}" for c in _COLUMNS)});
CREATE TABLE IF NOT EXISTS versions (id TEXT, version INTEGER, changed TEXT, actor TEXT, why TEXT, entry TEXT,
                                     PRIMARY KEY (id, version));
CREATE VIRTUAL TABLE IF NOT EXISTS entries_fts USING fts5(id UNINDEXED, title, text, terms);
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT);
CREATE TABLE IF NOT EXISTS votes (id TEXT, voter TEXT, value REAL, at TEXT, PRIMARY KEY (id, voter));
CREATE INDEX IF NOT EXISTS entries_status ON entries(status);
"""
_BINARY = re.compile(r"[\x00-\x08\x0e-\x1f\x7f]")
_SURROGATE = re.compile("[\ud800-\udfff]")  # a lone surrogate (JSON's "\\ud800") is no text UTF-8 can store


class KnowledgeInputError(ValueError):
    """A bad entry: `status` 413 (too large) or 422 (binary, empty, unknown kind...); the message says which field."""

    def __init__(self, message: str, status: int = 422) -> None:
        super().__init__(message)
        self.status = status


class UnknownEntryError(LookupError):
    """No entry with that id in the stores the caller may read (HTTP 404)."""


def query_terms(text: str) -> list[str]:
    """Distinct code-aware terms worth matching: no stop words, no one- or two-letter pieces."""
    terms = [t for t in unique_terms(tokenize(text)) if len(t) >= MIN_TERM_CHARS and t not in STOPWORDS]
    return [t for t in terms if "." not in t][:MAX_QUERY_TERMS]


def entry_terms(entry: Entry) -> str:
    return " ".join(tokenize(" ".join([entry.title, entry.text, *entry.paths, *entry.symbols])))


def check_text(config: KnowledgeConfig, name: str, value: str, limit: int, required: bool = True) -> str:
    if not isinstance(value, str):
        raise KnowledgeInputError(f"{name} must be text, got {type(value).__name__}")
    if len(value) > limit:
        raise KnowledgeInputError(f"{name} is {len(value)} characters; the limit is {limit} "
                                  f"(knowledge.max_{name}_chars): keep an entry to one claim and link the rest", 413)
    if _BINARY.search(value) or "\ufffd" in value:
        raise KnowledgeInputError(f"{name} holds binary or control characters: an entry is plain text")
    if _SURROGATE.search(value):
        raise KnowledgeInputError(f"{name} holds a lone UTF-16 surrogate: an entry is valid Unicode text")
    if required and not value.strip():
        raise KnowledgeInputError(f"{name} is empty")
    return value.strip()


def check_list(name: str, values: Any) -> list[str]:
    if values is None:
        return []
    if isinstance(values, str) or not isinstance(values, list) or not all(isinstance(v, str) for v in values):
        raise KnowledgeInputError(f"{name} must be a list of strings")
    if any(_BINARY.search(v) for v in values):
        raise KnowledgeInputError(f"{name} holds binary or control characters")
    if any(_SURROGATE.search(v) for v in values):
        raise KnowledgeInputError(f"{name} holds a lone UTF-16 surrogate: an entry is valid Unicode text")
    return [v.strip() for v in values if v.strip()]


class KnowledgeStore:
    """One SQLite + FTS5 file: add, edit (versioned), get, list, search, and field updates for the curator."""

    def __init__(self, path: Path, repo: str, config: KnowledgeConfig, clock: Clock = now_utc) -> None:
        self.path, self.repo, self.config, self.clock = path, repo, config, clock
        self.scorer = TrustScorer(config)
        path.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
        self._db.row_factory = sqlite3.Row
        self._lock = threading.RLock()
        with self._lock:
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")  # WAL: durable at checkpoints, no fsync per use count
            self._db.executescript(_SCHEMA)
            self._add_missing_columns()

    def _add_missing_columns(self) -> None:
        """A store written before a field existed gains its column (NULL reads as the field's default)."""
        have = {row[1] for row in self._db.execute("PRAGMA table_info(entries)")}
        for column in _COLUMNS:
            if column not in have:
                self._db.execute(f"ALTER TABLE entries ADD COLUMN {column}")

    def close(self) -> None:
        self._db.close()

    # -- writes -------------------------------------------------------------------------------------

    def add(self, title: str, text: str, kind: str = Kind.FACT.value, paths: list[str] | None = None,
            symbols: list[str] | None = None, source_kind: str = SourceKind.PERSON.value, source_ref: str = "",
            evidence: list[str] | None = None, status: str = Status.ACTIVE.value, pinned: bool = False) -> Entry:
        now = iso(self.clock())
        entry = Entry(id=ID_PREFIX + uuid.uuid4().hex[:12], title="", text="", repo=self.repo, created=now, updated=now,
                      status=Status.parse(status).value, pinned=pinned)
        self._apply(entry, {"title": title, "text": text, "kind": kind, "paths": paths, "symbols": symbols,
                            "source_kind": source_kind, "source_ref": source_ref, "evidence": evidence})
        entry.review = Review.PENDING.value if entry.source_kind == SourceKind.AGENT.value else Review.NOT_NEEDED.value
        _hold_for_review(entry)
        entry.trust = self.scorer.score(entry, self.clock())
        with self._write():
            self._db.execute(f"INSERT INTO entries ({', '.join(_COLUMNS)}) VALUES ({', '.join('?' * len(_COLUMNS))})",
                             [entry.to_row()[c] for c in _COLUMNS])
            self._index(entry)
        return entry

    def edit(self, entry_id: str, changes: dict[str, Any], actor: str = "", why: str = "") -> Entry:
        """A new version of the entry; the old one is kept in `versions`. Only `EDITABLE` fields."""
        unknown = sorted(set(changes) - set(EDITABLE))
        if unknown:
            raise KnowledgeInputError(f"cannot edit {unknown}; editable fields: {', '.join(EDITABLE)}")
        if "source_kind" in changes and self.get(entry_id).source_kind == SourceKind.AGENT.value \
                and _parse(SourceKind, changes["source_kind"]) != SourceKind.AGENT.value:
            raise KnowledgeInputError("an agent's entry stays an agent's: a person approves it with "
                                      "`knowledge review ID --keep`, which records the reviewer")
        return self.update(entry_id, actor or "edit", why, lambda e: self._apply(e, changes), bump=True)

    def update(self, entry_id: str, actor: str, why: str, change: Callable[[Entry], None], bump: bool = False,
               revise: bool = True, searchable: bool = True) -> Entry:
        """Apply `change` to the entry; `bump` makes it a new version (the old one goes to `versions`).
        Curator and feedback updates (trust, votes, status) are recorded in `versions` too when they bump.
        `revise=False` leaves the store's revision (a use count must not empty the query cache);
        `searchable=False` skips re-indexing the text (counters and dates only: it did not change)."""
        with self._write(revise):
            entry = self.get(entry_id)
            before = json.dumps(entry.to_dict(), ensure_ascii=False)
            change(entry)
            _hold_for_review(entry)
            now = self.clock()
            if bump:
                self._db.execute("INSERT INTO versions VALUES (?, ?, ?, ?, ?, ?)",
                                 (entry.id, entry.version, iso(now), actor, why, before))
                entry.version += 1
                entry.updated = iso(now)
            entry.trust = self.scorer.score(entry, now)
            row = entry.to_row()
            self._db.execute(f"UPDATE entries SET {', '.join(f'{c} = ?' for c in _COLUMNS if c != 'id')} WHERE id = ?",
                             [row[c] for c in _COLUMNS if c != "id"] + [entry.id])
            if searchable:
                self._db.execute("DELETE FROM entries_fts WHERE id = ?", (entry.id,))
                self._index(entry)
            return entry

    def vote(self, entry_id: str, voter: str, value: float) -> Entry:
        """`voter`'s vote on the entry, replacing their earlier one: repeating a vote moves nothing."""
        if not voter.strip():
            raise KnowledgeInputError("a vote needs its voter")
        self.get(entry_id)  # UnknownEntryError before anything is written
        with self._write(revise=False):
            self._db.execute("INSERT OR REPLACE INTO votes VALUES (?, ?, ?, ?)", (entry_id, voter, value,
                                                                                 iso(self.clock())))
            [total] = self._db.execute("SELECT COALESCE(SUM(value), 0) FROM votes WHERE id = ?", (entry_id,)).fetchone()
        return self.update(entry_id, voter, f"vote {value:+g} by {voter}", lambda e: setattr(e, "votes", float(total)),
                           searchable=False)

    def voters(self, entry_id: str) -> dict[str, float]:
        return {r["voter"]: r["value"] for r in self._read("SELECT voter, value FROM votes WHERE id = ?", (entry_id,))}

    def set_status(self, entry_id: str, status: Status, actor: str, why: str) -> Entry:
        def change(entry: Entry) -> None:
            entry.status = status.value
            entry.retire_reason = why if status is Status.RETIRED else ""

        return self.update(entry_id, actor, why, change, bump=True)

    def _apply(self, entry: Entry, values: dict[str, Any]) -> None:
        c = self.config
        if "title" in values:
            entry.title = check_text(c, "title", values["title"], c.max_title_chars)
        if "text" in values:
            entry.text = check_text(c, "text", values["text"], c.max_text_chars)
        if "kind" in values:
            entry.kind = _parse(Kind, values["kind"])
        if "source_kind" in values:
            entry.source_kind = _parse(SourceKind, values["source_kind"])
        if "source_ref" in values:
            entry.source_ref = check_text(c, "source_ref", values["source_ref"] or "", c.max_title_chars, required=False)
        for name in ("paths", "symbols", "evidence"):
            if name in values:
                setattr(entry, name, check_list(name, values[name]))

    def _index(self, entry: Entry) -> None:
        self._db.execute("INSERT INTO entries_fts (id, title, text, terms) VALUES (?, ?, ?, ?)",
                         (entry.id, entry.title, entry.text, entry_terms(entry)))

    @contextlib.contextmanager
    def _write(self, revise: bool = True) -> Iterator[None]:
        """One transaction under the store's lock; a nested one (an `update` inside `edit`) joins the outer."""
        with self._lock:
            outer = not self._db.in_transaction
            if outer:
                self._db.execute("BEGIN IMMEDIATE")
            try:
                yield
            except BaseException:
                if outer:
                    self._db.execute("ROLLBACK")
                raise
            if outer:
                if revise:
                    self._db.execute("INSERT INTO meta VALUES ('revision', '1') ON CONFLICT(key) DO UPDATE "
                                     "SET value = CAST(value AS INTEGER) + 1")
                self._db.execute("COMMIT")

    def _read(self, sql: str, params: Any = ()) -> list[sqlite3.Row]:
        with self._lock:
            return self._db.execute(sql, params).fetchall()

    # -- reads --------------------------------------------------------------------------------------

    def revision(self) -> int:
        rows = self._read("SELECT value FROM meta WHERE key = 'revision'")
        return int(rows[0][0]) if rows else 0

    def get(self, entry_id: str) -> Entry:
        rows = self._read("SELECT * FROM entries WHERE id = ?", (entry_id,))
        if not rows:
            raise UnknownEntryError(f"no knowledge entry {entry_id!r}")
        return Entry.from_row(dict(rows[0]))

    def has(self, entry_id: str) -> bool:
        return bool(self._read("SELECT 1 FROM entries WHERE id = ?", (entry_id,)))

    def history(self, entry_id: str) -> list[dict[str, Any]]:
        rows = self._read("SELECT * FROM versions WHERE id = ? ORDER BY version", (entry_id,))
        return [{**dict(r), "entry": json.loads(r["entry"])} for r in rows]

    def entries(self, statuses: tuple[Status, ...] = ()) -> list[Entry]:
        if statuses:
            marks = ", ".join("?" * len(statuses))
            rows = self._read(f"SELECT * FROM entries WHERE status IN ({marks}) ORDER BY trust DESC, id",
                              [s.value for s in statuses])
        else:
            rows = self._read("SELECT * FROM entries ORDER BY trust DESC, id")
        return [Entry.from_row(dict(r)) for r in rows]

    def search(self, text: str, limit: int, statuses: tuple[Status, ...] = (Status.ACTIVE,)) -> list[Entry]:
        """Entries whose title, text or scope share terms with `text`, best BM25 first (FTS5)."""
        terms = query_terms(text)
        if not terms:
            return []
        match = " OR ".join('"' + t.replace('"', '""') + '"' for t in terms)
        marks = ", ".join("?" * len(statuses))
        rows = self._read(
            f"SELECT e.* FROM entries_fts f JOIN entries e ON e.id = f.id WHERE entries_fts MATCH ? "
            f"AND e.status IN ({marks}) ORDER BY bm25(entries_fts) LIMIT ?",
            [match, *[s.value for s in statuses], limit])
        return [Entry.from_row(dict(r)) for r in rows]


def _hold_for_review(entry: Entry) -> None:
    """The one rule every write passes: an agent's entry a person has not approved is never active."""
    if entry.needs_review and entry.status == Status.ACTIVE.value:
        entry.status = Status.CANDIDATE.value


def _parse(enum: Any, value: Any) -> str:
    try:
        return enum.parse(value).value
    except ValueError as exc:
        raise KnowledgeInputError(str(exc)) from None


def knowledge_dir(config: Config) -> Path:
    return Path(config.knowledge.directory or Path(config.paths.index_root) / KNOWLEDGE_DIR)


class KnowledgeBase:
    """Every store under the knowledge directory: one per repository (opened on first use) plus the global one."""

    def __init__(self, config: Config, clock: Clock = now_utc) -> None:
        self.config, self.clock = config, clock
        self.directory = knowledge_dir(config)
        self._stores: dict[str, KnowledgeStore] = {}
        self._lock = threading.Lock()

    def store(self, repo: str = GLOBAL) -> KnowledgeStore:
        name = normalize_repo_name(repo) if repo else GLOBAL
        with self._lock:
            if name not in self._stores:
                file = GLOBAL_FILE if name == GLOBAL else repo_dir_name(name) + SUFFIX
                self._stores[name] = KnowledgeStore(self.directory / file, name, self.config.knowledge, self.clock)
            return self._stores[name]

    def existing(self, repo: str = GLOBAL) -> KnowledgeStore | None:
        """The store of `repo` if its file exists (a read never creates one)."""
        name = normalize_repo_name(repo) if repo else GLOBAL
        file = GLOBAL_FILE if name == GLOBAL else repo_dir_name(name) + SUFFIX
        if name in self._stores or (self.directory / file).exists():
            return self.store(name)
        return None

    def stores(self, repos: list[str] | None = None, include_global: bool = True) -> Iterator[KnowledgeStore]:
        """Stores of `repos` (None: every repository with a store file) plus the global one."""
        if repos is None:
            repos = sorted(repo_from_dir_name(p.name[: -len(SUFFIX)]) for p in self.directory.glob(f"*{SUFFIX}")
                           if p.name != GLOBAL_FILE) if self.directory.exists() else []
        names = [*repos, GLOBAL] if include_global else list(repos)
        for name in dict.fromkeys(names):
            store = self.existing(name)
            if store is not None:
                yield store

    def find(self, entry_id: str, repos: list[str] | None = None) -> KnowledgeStore:
        """The store holding `entry_id` among `repos` (None: all) and the global one."""
        for store in self.stores(repos):
            if store.has(entry_id):
                return store
        raise UnknownEntryError(f"no knowledge entry {entry_id!r}")

    def revision(self, repos: list[str]) -> tuple[int, ...]:
        return tuple(s.revision() for s in self.stores(repos))

    def close(self) -> None:
        for store in self._stores.values():
            store.close()
        self._stores.clear()
