"""Raw facts one file yields for the repo-level resolver, and the names they share."""

from __future__ import annotations

from dataclasses import dataclass, field

from semantica.schema import Chunk, Edge, FileError, Symbol

# How many re-export / base-class hops the resolver follows before giving up (cycles, deep chains).
MAX_RESOLVE_DEPTH = 8
UNRESOLVED_PREFIX = "name:"
SELF_RECEIVERS = frozenset({"self", "cls", "this", "Self"})
SUPER_RECEIVER = "super"
OTHER_RECEIVER = "?"
PYTHON_INIT = "__init__"


@dataclass
class RawCall:
    """A call site: `receiver.name(...)` inside node `src` (whose enclosing class is `scope`)."""

    src: str
    name: str
    receiver: str
    scope: str
    line: int
    receiver_type: str = ""  # Python: the receiver's (or called value's) type string, see python_types


@dataclass
class RawBase:
    """`class_id` names `base` (as written, dotted) as a base class / interface."""

    class_id: str
    base: str
    line: int


@dataclass
class RawImport:
    """One imported binding. Python: `import a.b` -> (module "a.b", name "", alias ""),
    `import a.b as z` -> alias "z", `from .m import x as y` -> (".m", "x", "y"), `*` -> name "*".
    Other languages: module is the import string; names/aliases where the syntax has them."""

    module: str
    name: str
    alias: str
    line: int


@dataclass
class RawRef:
    """A non-call use of a file-level name (Python) inside node `src`."""

    src: str
    name: str
    line: int
    kind: str = ""  # Python: the type of an attribute passed as an argument (`self.on_exit`), see python_types


@dataclass(frozen=True)
class RawInterface:
    """An interface's method set as written (Go): `methods` are (name, parameters, results) counts;
    `embeds` the interfaces it embeds, as written (`Other`, `fmt.Stringer`)."""

    qualname: str
    methods: tuple[tuple[str, int, int], ...]
    embeds: tuple[str, ...] = ()


@dataclass
class ParsedFile:
    """Everything one file yields; `edges` are parse-time edges (only CONTAINS resolved)."""

    repo: str
    path: str
    language: str
    blob_sha: str
    chunks: list[Chunk] = field(default_factory=list)
    symbols: list[Symbol] = field(default_factory=list)
    edges: list[Edge] = field(default_factory=list)
    imports: list[RawImport] = field(default_factory=list)
    calls: list[RawCall] = field(default_factory=list)
    bases: list[RawBase] = field(default_factory=list)
    refs: list[RawRef] = field(default_factory=list)
    returns: dict[str, str] = field(default_factory=dict)  # Python: qualname -> return annotation (a class name)
    globals: dict[str, str] = field(default_factory=dict)  # Python: module-level `NAME: Foo = ...` / `NAME = Foo()`
    attributes: dict[str, dict[str, str]] = field(default_factory=dict)  # Python: class qualname -> attr -> type
    properties: list[str] = field(default_factory=list)  # Python: qualnames of `@property` methods
    interfaces: list[RawInterface] = field(default_factory=list)  # Go: interface method sets
    receivers: dict[str, tuple[str, int, int]] = field(default_factory=dict)  # Go: method qualname -> (name, params,
    # results) of methods declared with a receiver (`T.m`: T's method set, wherever in the package it is declared)
    error: str = ""
    lost: str = ""  # what the parse could not extract (syntax errors, parser nesting limit), for errors.parquet



PARSE_STAGE = "parse"


def parse_problems(parsed: list[ParsedFile]) -> list[FileError]:
    """Errors.parquet rows for files indexed only in part: a failed parse (kept as windows) or
    definitions the parser could not extract (syntax errors, tree-sitter's nesting limit)."""
    return [FileError(repo=pf.repo, path=pf.path, stage=PARSE_STAGE, reason=reason)
            for pf in parsed for reason in (pf.error, pf.lost) if reason]
