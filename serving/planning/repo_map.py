"""Repository map: a repository's files ranked by personalised PageRank over its file graph (Aider's repo map).

The graph: one node per indexed file; each resolved code-graph edge (calls, imports, inheritance, references)
between two files adds `EDGE_WEIGHTS[type]` to the edge from the using file to the defining file.
The personalisation: the query's identifiers resolved through the symbol table (the files defining them),
plus the file paths the query names. With no seed, it is plain PageRank (the repository's central files).
Each ranked file lists its top symbols (seeded names first, then the most used from the ranked files) with
the line and signature, packed greedily into a token budget: `semantica map`, `POST /v1/map`, MCP `repo_map`.
"""

from __future__ import annotations

import threading
import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

from semantica.api import QueryError
from semantica.config import Config, RepoMapConfig
from semantica.runtime import linear_regex
from semantica.runtime.token_count import TokenCounter
from semantica.schema import Symbol
from semantica.snapshot import Snapshot, SnapshotSet, answer_freshness
from semantica.stores.tokenizer import count_tokens

_IDENTIFIER = linear_regex.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*")
_PATHLIKE = linear_regex.compile(r"[\w.-]+(?:/[\w.-]+)+|[\w-]+\.[A-Za-z]{1,5}\b")
_CODE_LOOKING = linear_regex.compile(r".*(?:_|\.|[a-z][A-Z]|^[A-Z][a-z0-9]+[A-Z]).*")
_SIGNATURE_ENDS = (":", "{", ")", "=>")
_SIGNATURE_MAX_LINES = 4
# Line comments by language, and Rust's attributes (`#[inline]`); `#` opens a JavaScript private method
_LINE_COMMENTS = {"": ("//",), "python": ("#",), "rust": ("//", "#[", "#![")}
_DECORATOR = linear_regex.compile(r"@[\w.]+")  # a decorator or annotation's name (`@Override`, `@app.route`)

# the ranking's constants (formula weights and caps, not per-deployment settings)
DAMPING = 0.85  # PageRank's damping (networkx's and the paper's default)
# weight each resolved code-graph edge type adds from the using file to the defining file
EDGE_WEIGHTS = {"CALLS": 1.0, "INHERITS": 1.0, "REFERENCES": 0.5, "IMPORTS": 0.5, "OVERRIDES": 0.5, "TESTS": 0.2}
REVERSE_WEIGHT = 0.5  # each edge also links the defining file back to the user, at this fraction
CODE_IDENTIFIER_WEIGHT = 1.0  # seed weight of a snake_case / CamelCase / dotted name in the query
PLAIN_WORD_WEIGHT = 0.2  # seed weight of a plain word that is exactly a symbol's name (e.g. `search`)
MIN_PLAIN_WORD_CHARS = 4  # a plain word shorter than this seeds nothing
PATH_WEIGHT = 3.0  # seed weight of a file path (or its tail) named in the query
MAX_SEED_DEFINITIONS = 20  # a name defined in more places than this is too common to seed
SYMBOLS_PER_FILE = 6  # symbols listed under each ranked file
SIGNATURE_MAX_CHARS = 160  # a longer signature is cut with "..."


def signature_start(lines: list[str], language: str = "") -> int:
    """The first line of a definition that is neither its doc comment (JSDoc, Javadoc, Go doc, rustdoc,
    Python `#` comments) nor a decorator, annotation or attribute (`@Override`, `@app.route(...)` over
    several lines, `#[derive(...)]`): the chunk holds those, the map shows the signature."""
    comments = _LINE_COMMENTS.get(language, _LINE_COMMENTS[""])
    in_block, depth = False, 0
    for row, line in enumerate(lines):
        text = line.strip()
        if in_block:
            in_block = "*/" not in text
            continue
        if depth > 0:  # a decorator's arguments, continued: the line may end them and start the signature
            depth, rest = _balance(text, depth)
            if depth == 0 and rest.strip():
                return row
            continue
        if text.startswith("/*"):
            in_block = "*/" not in text[2:]
            continue
        if not text or text.startswith(comments):
            continue
        decorator = _DECORATOR.match(text)
        if decorator is not None:
            rest = text[decorator.end():]
            if rest.startswith("("):
                depth, rest = _balance(rest, 0)
            if depth > 0 or not rest.strip():
                continue
        return row
    return 0


def _balance(text: str, depth: int) -> tuple[int, str]:
    """Parenthesis depth after `text` (quoted strings skipped), and what follows where it returns to 0."""
    quote = ""
    for i, char in enumerate(text):
        if quote:
            quote = "" if char == quote else quote
        elif char in "\"'":
            quote = char
        elif char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
            if depth == 0:
                return 0, text[i + 1:]
    return depth, ""


@dataclass
class MapSymbol:
    name: str
    kind: str
    line: int
    signature: str
    seeded: bool = False


@dataclass
class MapFile:
    path: str
    score: float
    seeded: bool
    symbols: list[MapSymbol] = field(default_factory=list)


@dataclass
class RepoMap:
    """A ranked, budgeted map of one repository (`render()` is what an agent reads)."""

    repo: str
    snapshot: str
    query: str
    seeds: dict[str, list[str]]  # query name -> files it resolved to
    files: list[MapFile]
    tokens: int
    budget: int
    total_files: int
    took_ms: float = 0.0

    def render(self) -> str:
        lines: list[str] = []
        for f in self.files:
            lines.append(f"{f.path}:")
            lines.extend(f"  {s.line:>5}: {_owner(s.name)}{s.signature}" for s in f.symbols)
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "text": self.render()}


def _owner(qualname: str) -> str:
    """`(Ledger) ` for the method `Ledger.record`: its signature line alone does not say whose it is."""
    return f"({qualname.rsplit('.', 1)[0]}) " if "." in qualname else ""


class FileGraph:
    """The file-level graph of one snapshot and its symbol tables (built once per snapshot)."""

    def __init__(self, snapshot: Snapshot, config: RepoMapConfig) -> None:
        self.paths = sorted(snapshot.chunks_by_path)
        self.symbols_by_path: dict[str, list[Symbol]] = defaultdict(list)
        self.by_name: dict[str, list[Symbol]] = defaultdict(list)
        self.by_lower: dict[str, list[Symbol]] = defaultdict(list)
        for sym in snapshot.symbols:
            self.symbols_by_path[sym.path].append(sym)
            self.by_name[sym.name].append(sym)
            if sym.qualname != sym.name:
                self.by_name[sym.qualname].append(sym)
            self.by_lower[sym.name.lower()].append(sym)
        self.used_by: dict[str, dict[str, float]] = defaultdict(dict)  # symbol id -> using file -> weight
        weights: dict[tuple[str, str], float] = defaultdict(float)
        for edge in snapshot.edges:
            w = EDGE_WEIGHTS.get(edge.type, 0.0)
            if not edge.resolved or w <= 0:
                continue
            src, dst = _path_of(edge.src), _path_of(edge.dst)
            if src != dst:
                weights[(src, dst)] += w
                weights[(dst, src)] += w * REVERSE_WEIGHT  # rank flows to callers/importers too
            if "::" in edge.dst:
                self.used_by[edge.dst][src] = self.used_by[edge.dst].get(src, 0.0) + w
        import networkx as nx  # here, not at module level: a query that never builds a repo map skips its import

        self.graph = nx.DiGraph()
        self.graph.add_nodes_from(self.paths)
        self.graph.add_weighted_edges_from((s, d, w) for (s, d), w in weights.items())


def _path_of(node: str) -> str:
    return node.removeprefix("file:").split("::", 1)[0]


class RepoMapper:
    """`map(snapshot, query, tokens)` -> RepoMap; also the ranking scope selection uses (`rank`)."""

    def __init__(self, config: RepoMapConfig, count: Callable[[str], int] = count_tokens) -> None:
        self.config = config
        self.count = count  # the budget's unit: the encoder's tokenizer where a front serves the map
        self._graphs: dict[str, FileGraph] = {}
        self._lock = threading.Lock()

    def file_graph(self, snapshot: Snapshot) -> FileGraph:
        key = f"{snapshot.repo}\x00{snapshot.snapshot_id}"
        with self._lock:
            if key not in self._graphs:
                self._graphs = {k: g for k, g in self._graphs.items() if not k.startswith(snapshot.repo + "\x00")}
                self._graphs[key] = FileGraph(snapshot, self.config)
            return self._graphs[key]

    def seeds(self, graph: FileGraph, query: str) -> tuple[dict[str, float], dict[str, list[str]], set[str]]:
        """(file -> personalisation weight, query name -> files, seeded symbol ids) for the query's names."""
        weights: dict[str, float] = defaultdict(float)
        named: dict[str, list[str]] = {}
        seeded: set[str] = set()
        for token in dict.fromkeys(_PATHLIKE.findall(query)):
            hits = [p for p in graph.paths if p == token or p.endswith("/" + token)]
            if 0 < len(hits) <= MAX_SEED_DEFINITIONS:
                named[token] = hits
                for p in hits:
                    weights[p] += PATH_WEIGHT / len(hits)
        for token in dict.fromkeys(_IDENTIFIER.findall(query)):
            code_like = bool(_CODE_LOOKING.fullmatch(token))
            defs = graph.by_name.get(token) or (graph.by_name.get(token.rsplit(".", 1)[-1]) if "." in token else None)
            if not defs and code_like:
                defs = graph.by_lower.get(token.rsplit(".", 1)[-1].lower())
            if not defs or len(defs) > MAX_SEED_DEFINITIONS:
                continue
            if not code_like and len(token) < MIN_PLAIN_WORD_CHARS:
                continue
            weight = CODE_IDENTIFIER_WEIGHT if code_like else PLAIN_WORD_WEIGHT
            named[token] = sorted({s.path for s in defs})
            for sym in defs:
                weights[sym.path] += weight / len(defs)
                seeded.add(sym.symbol_id)
        return dict(weights), named, seeded

    def rank(self, snapshot: Snapshot, query: str) -> tuple[list[tuple[str, float]], dict[str, list[str]], set[str]]:
        """Files by personalised PageRank (plain PageRank when the query names nothing in the repository)."""
        graph = self.file_graph(snapshot)
        if not graph.paths:
            return [], {}, set()
        weights, named, seeded = self.seeds(graph, query)
        import networkx as nx

        ranks = nx.pagerank(graph.graph, alpha=DAMPING, personalization=weights or None, weight="weight")
        order = sorted(ranks.items(), key=lambda kv: (-kv[1], kv[0]))
        return order, named, seeded

    def map(self, snapshot: Snapshot, query: str = "", tokens: int | None = None) -> RepoMap:
        budget = self.config.default_tokens if tokens is None else tokens
        if isinstance(budget, bool) or not isinstance(budget, int) or budget <= 0:
            raise QueryError(f"tokens must be a positive integer, got {budget!r}")
        if budget > self.config.max_tokens:
            raise QueryError(f"tokens={budget} is above the maximum {self.config.max_tokens} (repo_map.max_tokens)")
        start = time.perf_counter()
        graph = self.file_graph(snapshot)
        order, named, seeded = self.rank(snapshot, query)
        seeded_paths = {p for paths in named.values() for p in paths}
        ranks = dict(order)
        files: list[MapFile] = []
        used = 0
        for path, score in order:
            header = self.count(f"{path}:")
            if used + header > budget:
                break
            entry = MapFile(path, round(score, 6), path in seeded_paths)
            cost = header
            for sym in self._top_symbols(graph, path, ranks, seeded):
                line = MapSymbol(sym.qualname, sym.kind, sym.start_line, self._signature(snapshot, sym),
                                 sym.symbol_id in seeded)
                line_cost = self.count(f"{line.line}: {line.signature}")
                if used + cost + line_cost > budget:
                    break
                cost += line_cost
                entry.symbols.append(line)
            if not entry.symbols and graph.symbols_by_path.get(path):
                break  # a file whose first symbol no longer fits: the budget is spent
            used += cost
            files.append(entry)
        return RepoMap(snapshot.repo, snapshot.snapshot_id, query, named, files, used, budget, len(graph.paths),
                       round((time.perf_counter() - start) * 1000, 3))

    def _top_symbols(self, graph: FileGraph, path: str, ranks: dict[str, float], seeded: set[str]) -> list[Symbol]:
        def use(sym: Symbol) -> float:
            return sum(ranks.get(p, 0.0) * w for p, w in graph.used_by.get(sym.symbol_id, {}).items())

        symbols = graph.symbols_by_path.get(path, [])
        ordered = sorted(symbols, key=lambda s: (s.symbol_id not in seeded, -use(s), s.start_line))
        return sorted(ordered[: SYMBOLS_PER_FILE], key=lambda s: s.start_line)

    def _signature(self, snapshot: Snapshot, sym: Symbol) -> str:
        lines = snapshot.file_lines(sym.path)[sym.start_line - 1: sym.end_line]
        start = signature_start(lines, sym.language)
        parts: list[str] = []
        for text in lines[start: start + _SIGNATURE_MAX_LINES]:
            parts.append(text.strip())
            if text.rstrip().endswith(_SIGNATURE_ENDS):
                break
        signature = " ".join(p for p in parts if p) or sym.qualname
        limit = SIGNATURE_MAX_CHARS
        return signature if len(signature) <= limit else signature[: limit - 3] + "..."


class RepoMapService:
    """One entry for the CLI, HTTP and MCP: validate, open the snapshot, map it; the answer carries the snapshot's
    freshness like every other answer."""

    def __init__(self, config: Config, snapshots: SnapshotSet | None = None, mapper: RepoMapper | None = None) -> None:
        self.config = config
        self.snapshots = snapshots or SnapshotSet(config)
        self.mapper = mapper or RepoMapper(config.repo_map, TokenCounter(config.encoder.model_path).count)

    def run(self, repo: str, query: str = "", tokens: int | None = None) -> dict[str, Any]:
        if not isinstance(repo, str) or not repo.strip():
            raise QueryError("repo is empty: name an indexed repository (`semantica repos` lists them)")
        if not isinstance(query, str):
            raise QueryError(f"query must be a string, got {query!r}")
        query = query[: self.config.query.max_query_chars]
        snapshot = self.snapshots.get(repo)
        return {**self.mapper.map(snapshot, query, tokens).to_dict(),
                "freshness": answer_freshness(self.config, [snapshot])}


_SERVICES: dict[int, RepoMapService] = {}


def map_answer(core: Any, body: dict[str, Any], principal: Any) -> dict[str, Any]:
    """`POST /v1/map` over an ingress core: the caller's scope decides the repository (exactly one)."""
    repos = core.readable_scope(principal, list(body.get("repos") or [])) or core.visible_repos(principal)
    if len(repos) != 1:
        raise QueryError(f"name one repository to map in `repos` (got {len(repos)}: {', '.join(repos[:5])})")
    service = _SERVICES.get(id(core))
    if service is None:
        service = _SERVICES[id(core)] = RepoMapService(core.config, core.pipeline.snapshots)
    return service.run(repos[0], body.get("query") or "", body.get("tokens"))
