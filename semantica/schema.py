"""The records both sides share: what indexing writes and what serving reads.

Every record is a flat dataclass so it maps 1:1 onto a Parquet row (`to_row` / `from_row`).
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
from collections.abc import Iterable
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, TypeVar

import pyarrow as pa

SCHEMA_VERSION = 1


class ParsableEnum(str, Enum):
    """A string Enum with `parse`: a member or its (case-insensitive) name; an unknown name raises a
    ValueError listing the known ones (named after the class: "unknown intent ...")."""

    @classmethod
    def parse(cls, value: object) -> Any:
        if isinstance(value, cls):
            return value
        try:
            return cls(str(value).lower())
        except ValueError:
            known = ", ".join(member.value for member in cls)
            kind = cls.__name__.lower()
            raise ValueError(f"unknown {kind} {value!r}; known {kind}s: {known}") from None


class ChunkKind(str, Enum):
    """What a chunk covers."""

    FUNCTION = "function"
    METHOD = "method"
    CLASS = "class"
    MODULE = "module"
    WINDOW = "window"
    SECTION = "section"


class SymbolKind(str, Enum):
    """What a symbol is."""

    FUNCTION = "function"
    METHOD = "method"
    CLASS = "class"
    MODULE = "module"


class EdgeType(str, Enum):
    """Code graph edge types (costs for each live in conf: graph.edge_costs)."""

    CALLS = "CALLS"
    IMPORTS = "IMPORTS"
    INHERITS = "INHERITS"
    CONTAINS = "CONTAINS"
    REFERENCES = "REFERENCES"
    OVERRIDES = "OVERRIDES"
    TESTS = "TESTS"


class Resolution(str, Enum):
    """How an edge's target was found, best first (graph answers are ordered by this).

    IMPORT/SELF/TYPE/INHERITANCE/LOCAL follow the code's own bindings; UNIQUE is the only definition of
    that name in the repo; OVERRIDE is `self.m()` reaching a subclass's override (dynamic dispatch);
    NAME is a bare-name guess among several (same file or directory);
    SYNTAX is a CONTAINS edge; "" is an edge from a snapshot written before this field existed.
    """

    IMPORT = "import"
    SELF = "self"
    TYPE = "type"
    INHERITANCE = "inheritance"
    LOCAL = "local"
    UNIQUE = "unique"
    OVERRIDE = "override"
    NAME = "name"
    SYNTAX = "syntax"
    UNRESOLVED = "unresolved"

    @property
    def tier(self) -> int:
        """0: by the code's bindings; 1: by unique name; 2: by bare name; 3: unresolved."""
        return RESOLUTION_TIERS[self]


RESOLUTION_TIERS = {
    Resolution.IMPORT: 0, Resolution.SELF: 0, Resolution.TYPE: 0, Resolution.INHERITANCE: 0,
    Resolution.LOCAL: 0, Resolution.SYNTAX: 0, Resolution.UNIQUE: 1, Resolution.OVERRIDE: 1, Resolution.NAME: 2,
    Resolution.UNRESOLVED: 3,
}


def sha1_text(text: str) -> str:
    """Content sha of a chunk (hex sha1 of its UTF-8 bytes)."""
    return hashlib.sha1(text.encode("utf-8", "surrogatepass")).hexdigest()


def make_chunk_id(repo: str, path: str, start_line: int, end_line: int, content_sha: str) -> str:
    """Deterministic chunk id: the same repo, path, lines and content always give the same id."""
    key = f"{repo}\x00{path}\x00{start_line}\x00{end_line}\x00{content_sha}"
    return hashlib.sha1(key.encode("utf-8", "surrogatepass")).hexdigest()[:20]


def module_of(path: str) -> str:
    """`pkg/sub/mod.py` -> `pkg.sub.mod`; `pkg/__init__.py` -> `pkg`."""
    stem = path.rsplit(".", 1)[0] if "." in path.rsplit("/", 1)[-1] else path
    parts = [p for p in stem.split("/") if p]
    if parts and parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def file_node_id(path: str) -> str:
    """Graph node id of a file."""
    return f"file:{path}"


def symbol_node_id(path: str, qualname: str) -> str:
    """Graph node id of a definition: `path::Qualified.name` (the evaluation's spelling too)."""
    return f"{path}::{qualname}"


T = TypeVar("T")


_FLAT = (str, int, float, bool, bytes, type(None))  # values a row holds as they are


@functools.cache
def _field_names(cls: type) -> tuple[str, ...]:
    return tuple(f.name for f in dataclasses.fields(cls))


class _Row:
    """Mixin: dataclass <-> Parquet row."""

    def to_row(self) -> dict[str, Any]:
        """The Parquet row: `dataclasses.asdict` with Enums as their values, made field by field when every value is
        flat (a snapshot write turns ~50k records into rows; asdict's deep copy was most of that)."""
        row: dict[str, Any] = {}
        for name in _field_names(type(self)):
            value = getattr(self, name)
            if isinstance(value, Enum):
                value = value.value
            elif isinstance(value, list) and all(isinstance(v, _FLAT) for v in value):
                value = list(value)
            elif not isinstance(value, _FLAT):  # a nested record or container: asdict's own copy
                return self._deep_row()
            row[name] = value
        return row

    def _deep_row(self) -> dict[str, Any]:
        row = dataclasses.asdict(self)  # type: ignore[call-overload]
        for key, value in row.items():
            if isinstance(value, Enum):
                row[key] = value.value
        return row

    @classmethod
    def from_row(cls: type[T], row: dict[str, Any]) -> T:
        names = {f.name for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
        return cls(**{k: v for k, v in row.items() if k in names})

    @classmethod
    def from_table(cls: type[T], table: pa.Table) -> list[T]:
        """Every row of `table` as `from_row` makes it, built column-wise: a snapshot's 40k edges load in a
        fraction of the time of a dict per row (a cold query waits for them)."""
        fields = [f.name for f in dataclasses.fields(cls)]  # type: ignore[arg-type]
        names = [n for n in fields if n in table.column_names]
        if not names:  # no column to build from: what `from_row` makes of each row
            return [cls.from_row(row) for row in table.to_pylist()]
        columns = [table.column(n).to_pylist() for n in names]
        if names == fields[:len(names)]:  # the table's columns are the leading fields: positional
            return [cls(*values) for values in zip(*columns)]
        return [cls(**dict(zip(names, values))) for values in zip(*columns)]


@dataclass
class Chunk(_Row):
    """A retrievable span of one file."""

    chunk_id: str
    repo: str
    path: str
    language: str
    start_line: int
    end_line: int
    kind: str
    symbol: str
    content: str
    content_sha: str
    blob_sha: str = ""

    @staticmethod
    def build(
        repo: str, path: str, language: str, start_line: int, end_line: int, kind: ChunkKind | str,
        symbol: str, content: str, blob_sha: str = "",
    ) -> Chunk:
        """Make a chunk with its sha and deterministic id filled in."""
        content_sha = sha1_text(content)
        return Chunk(
            chunk_id=make_chunk_id(repo, path, start_line, end_line, content_sha),
            repo=repo, path=path, language=language, start_line=start_line, end_line=end_line,
            kind=ChunkKind(kind).value, symbol=symbol, content=content, content_sha=content_sha,
            blob_sha=blob_sha,
        )

    def embedding_text(self) -> str:
        """What the bi-encoder sees: path + symbol + code."""
        header = f"{self.path} {self.symbol}".strip()
        return f"{header}\n{self.content}"


@dataclass
class Symbol(_Row):
    """A definition with its fully qualified name."""

    symbol_id: str
    repo: str
    path: str
    name: str
    qualname: str
    module: str
    kind: str
    language: str
    start_line: int
    end_line: int
    chunk_id: str
    parent: str = ""

    @property
    def fqn(self) -> str:
        """`module.path::Class.method`."""
        return f"{self.module}::{self.qualname}"


@dataclass
class Edge(_Row):
    """A directed code-graph edge between node ids (`file:path` or `path::Qualified.name`).

    `resolved` is False when the target could only be named (e.g. a call to an unknown function);
    then `dst` is `name:<identifier>`. One edge per (src, dst, type): `line` is the first site and
    `lines` every site in source order (each call of `dst` in `src`); empty in snapshots written
    before the column existed, where `line` is the only one known.
    """

    src: str
    dst: str
    type: str
    repo: str
    path: str
    line: int
    resolved: bool = True
    resolution: str = ""
    lines: list[int] = field(default_factory=list)

    @property
    def sites(self) -> list[int]:
        """Every line of this edge (`lines`, or `[line]` for an older snapshot)."""
        return list(self.lines) if self.lines else [self.line]


@dataclass
class FileError(_Row):
    """A file that was skipped or failed, and why."""

    repo: str
    path: str
    stage: str
    reason: str


@dataclass
class ShardInfo:
    """One shard file or directory listed in a manifest."""

    kind: str
    path: str
    count: int
    checksum: str


@dataclass
class Manifest:
    """`manifest.json`: everything needed to trust and open a snapshot."""

    repo: str
    snapshot_id: str
    commit: str
    created: str
    model_id: str
    dim: int
    counts: dict[str, int]
    shards: list[ShardInfo]
    checksums: dict[str, str]
    schema_version: int = SCHEMA_VERSION
    late_model_id: str = ""
    model_path: str = ""  # the encoder checkpoint ("" = the packaged default): serving loads it on a mismatch
    stats: dict[str, Any] = field(default_factory=dict)
    token_vectors: dict[str, Any] = field(default_factory=dict)  # semantica.stores.token_vectors.TokenVectorsInfo; {} = none stored

    source: dict[str, Any] = field(default_factory=dict)  # semantica.ondisk.source.SourceRecord: what it was built from
    # the numeric path of every vector in it (semantica.encoder_identity.RuntimeIdentity; model_id says the same):
    # torch | torch-int8 | onnx | onnx-int8 | onnx-int8-text, and the ONNX export's sha256 prefix.
    # "" = built before they were recorded (torch)
    runtime: str = ""
    export_sha: str = ""
    # index kinds a successor snapshot of the same commit is still building (`index.dense_later`); [] = complete
    pending: list[str] = field(default_factory=list)

    @property
    def built_commit(self) -> str:
        """The commit the build was made from: a working-tree build's `commit` is "" (its files are not that
        commit's), its source records the HEAD it was read at."""
        return str(self.source.get("commit") or self.commit)

    @property
    def built_dirty(self) -> bool:
        """The build read a working tree with uncommitted changes (its source lists the paths)."""
        return bool(self.source.get("dirty"))

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @staticmethod
    def from_dict(values: dict[str, Any]) -> Manifest:
        data = dict(values)
        data["shards"] = [ShardInfo(**s) for s in data.get("shards", [])]
        return Manifest(**data)


CHUNK_ARROW_SCHEMA = pa.schema(
    [
        ("chunk_id", pa.string()), ("repo", pa.string()), ("path", pa.string()),
        ("language", pa.string()), ("start_line", pa.int32()), ("end_line", pa.int32()),
        ("kind", pa.string()), ("symbol", pa.string()), ("content", pa.string()),
        ("content_sha", pa.string()), ("blob_sha", pa.string()),
    ]
)
SYMBOL_ARROW_SCHEMA = pa.schema(
    [
        ("symbol_id", pa.string()), ("repo", pa.string()), ("path", pa.string()),
        ("name", pa.string()), ("qualname", pa.string()), ("module", pa.string()),
        ("kind", pa.string()), ("language", pa.string()), ("start_line", pa.int32()),
        ("end_line", pa.int32()), ("chunk_id", pa.string()), ("parent", pa.string()),
    ]
)
EDGE_ARROW_SCHEMA = pa.schema(
    [
        ("src", pa.string()), ("dst", pa.string()), ("type", pa.string()), ("repo", pa.string()),
        ("path", pa.string()), ("line", pa.int32()), ("resolved", pa.bool_()),
        ("resolution", pa.string()), ("lines", pa.list_(pa.int32())),
    ]
)
ERROR_ARROW_SCHEMA = pa.schema(
    [("repo", pa.string()), ("path", pa.string()), ("stage", pa.string()), ("reason", pa.string())]
)


def chunk_lines(chunks: Iterable[Chunk]) -> list[str]:
    """One file's lines rebuilt from its chunks in row order (lines no chunk covers are empty); the index
    writer and the reader rebuild a file the same way."""
    lines: dict[int, str] = {}
    for chunk in chunks:
        for offset, text in enumerate(chunk.content.split("\n")):
            lines.setdefault(chunk.start_line + offset, text)
    last = max(lines, default=0)
    return [lines.get(n, "") for n in range(1, last + 1)]
