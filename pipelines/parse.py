"""Parse: chunks, symbols and raw graph facts of ONE file from ONE tree-sitter parse.

`FileParser.parse` is per file (a Ray Data map calls it); `GraphResolver.resolve` is the one
repo-level step that turns names into node ids (imports, `self.m()`, `super().m()`, inheritance).

Chunking: one chunk per function/method, one per class header (class line, docstring, attributes up
to the first method); long definitions are split by token budget with overlap; code outside any
definition becomes line windows (kind "module"); docs split by heading (kind "section"); other text
files and files that fail to parse become windows (kind "window"). Nested functions stay inside
their outer function's chunk and are not symbols of their own.
"""

from __future__ import annotations

import bisect
import posixpath
import re
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from pipelines.discover import SourceFile
from semantica.config import ChunkConfig
from semantica.schema import (
    Chunk,
    ChunkKind,
    Edge,
    EdgeType,
    Symbol,
    SymbolKind,
    file_node_id,
    module_of,
    symbol_node_id,
)
from semantica.tokenizer import count_tokens

# A piece's overlap with the next never exceeds this fraction of its lines, so splitting progresses.
MAX_OVERLAP_FRACTION = 0.5
# How many re-export / base-class hops the resolver follows before giving up (cycles, deep chains).
MAX_RESOLVE_DEPTH = 8
UNRESOLVED_PREFIX = "name:"
SELF_RECEIVERS = frozenset({"self", "cls", "this", "Self"})
SUPER_RECEIVER = "super"
OTHER_RECEIVER = "?"
COMMENT_TYPES = frozenset({"comment", "line_comment", "block_comment"})
JS_FUNCTION_VALUES = frozenset({"arrow_function", "function_expression", "function", "generator_function"})
_DOTTED = re.compile(r"[A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*)*")
_SUPER_CALL = re.compile(r"super\s*\(.*\)", re.S)
_IDENT = re.compile(r"[A-Za-z_$][\w$]*")
_MD_HEADING = re.compile(r"^ {0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
_MD_FENCE = re.compile(r"^ {0,3}(```|~~~)")
_RST_UNDERLINE = re.compile(r"^([=\-~^\"'`#*+<>:._])\1+\s*$")
PYTHON_INIT = "__init__"


@dataclass(frozen=True)
class LanguageSpec:
    """Which tree-sitter node types define what, per language (no logic, just names)."""

    family: str
    functions: frozenset[str]
    classes: frozenset[str]
    namespaces: frozenset[str] = frozenset()
    descend: frozenset[str] = frozenset()
    imports: frozenset[str] = frozenset()
    call_query: str = ""


_JS_DESCEND = frozenset({"export_statement", "expression_statement", "ambient_declaration"})
_JS_CALLS = "(call_expression) @call (new_expression) @call"
SPECS: dict[str, LanguageSpec] = {
    "python": LanguageSpec(
        family="python",
        functions=frozenset({"function_definition"}),
        classes=frozenset({"class_definition"}),
        descend=frozenset({
            "if_statement", "elif_clause", "else_clause", "try_statement", "except_clause",
            "except_group_clause", "finally_clause", "with_statement", "for_statement",
            "while_statement", "block",
        }),
        imports=frozenset({"import_statement", "import_from_statement"}),
        call_query="(call) @call",
    ),
    "javascript": LanguageSpec(
        family="js",
        functions=frozenset({"function_declaration", "generator_function_declaration", "method_definition"}),
        classes=frozenset({"class_declaration"}),
        descend=_JS_DESCEND,
        imports=frozenset({"import_statement"}),
        call_query=_JS_CALLS,
    ),
    "typescript": LanguageSpec(
        family="js",
        functions=frozenset({"function_declaration", "generator_function_declaration", "method_definition"}),
        classes=frozenset({"class_declaration", "abstract_class_declaration", "interface_declaration"}),
        namespaces=frozenset({"internal_module", "module"}),
        descend=_JS_DESCEND,
        imports=frozenset({"import_statement"}),
        call_query=_JS_CALLS,
    ),
    "go": LanguageSpec(
        family="go",
        functions=frozenset({"function_declaration", "method_declaration"}),
        classes=frozenset({"type_spec"}),
        descend=frozenset({"type_declaration"}),
        imports=frozenset({"import_declaration"}),
        call_query="(call_expression) @call",
    ),
    "java": LanguageSpec(
        family="java",
        functions=frozenset({"method_declaration", "constructor_declaration"}),
        classes=frozenset({
            "class_declaration", "interface_declaration", "enum_declaration", "record_declaration",
            "annotation_type_declaration",
        }),
        descend=frozenset({"enum_body_declarations"}),
        imports=frozenset({"import_declaration"}),
        call_query="(method_invocation) @call (object_creation_expression) @call",
    ),
    "rust": LanguageSpec(
        family="rust",
        functions=frozenset({"function_item"}),
        classes=frozenset({"struct_item", "enum_item", "trait_item", "union_item"}),
        namespaces=frozenset({"impl_item", "mod_item"}),
        imports=frozenset({"use_declaration"}),
        call_query="(call_expression) @call",
    ),
}
SPECS["tsx"] = SPECS["typescript"]
DOC_LANGUAGES = frozenset({"markdown", "rst"})

_PARSERS: dict[str, Any] = {}
_QUERIES: dict[str, Any] = {}


def _parser_and_query(language: str) -> tuple[Any, Any]:
    """Per-process cache: grammars load once, and FileParser itself stays cheap to pickle."""
    if language not in _PARSERS:
        from tree_sitter import Query
        from tree_sitter_language_pack import get_language, get_parser

        _PARSERS[language] = get_parser(language)
        _QUERIES[language] = Query(get_language(language), SPECS[language].call_query)
    return _PARSERS[language], _QUERIES[language]


# -- raw facts handed to the resolver ----------------------------------------------------------


@dataclass
class RawCall:
    """A call site: `receiver.name(...)` inside node `src` (whose enclosing class is `scope`)."""

    src: str
    name: str
    receiver: str
    scope: str
    line: int


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
    error: str = ""


@dataclass
class _Def:
    """A definition found by the walk (0-based inclusive rows)."""

    qualname: str
    kind: SymbolKind
    start: int
    end: int
    parent: str
    node: Any
    children: list[_Def] = field(default_factory=list)


# -- line splitting ----------------------------------------------------------------------------


def split_lines(
    tokens: list[int], lo: int, hi: int, max_tokens: int, overlap_tokens: int | None,
    max_lines: int | None = None, overlap_lines: int | None = None,
) -> list[tuple[int, int]]:
    """Split rows lo..hi (inclusive) into pieces of <= max_tokens (and <= max_lines) with overlap.

    A single line over budget becomes a piece of its own; overlap never exceeds
    MAX_OVERLAP_FRACTION of a piece, so every step moves forward.
    """
    pieces: list[tuple[int, int]] = []
    start = lo
    while start <= hi:
        end, total = start, tokens[start]
        while end < hi and total + tokens[end + 1] <= max_tokens and (max_lines is None or end + 1 - start < max_lines):
            end += 1
            total += tokens[end]
        pieces.append((start, end))
        if end >= hi:
            break
        max_back = int((end - start + 1) * MAX_OVERLAP_FRACTION)
        nxt, back_tokens, back_lines = end + 1, 0, 0
        while (
            back_lines < max_back
            and (overlap_tokens is None or back_tokens + tokens[nxt - 1] <= overlap_tokens)
            and (overlap_lines is None or back_lines < overlap_lines)
        ):
            nxt -= 1
            back_tokens += tokens[nxt]
            back_lines += 1
        start = nxt
    return pieces


def _node_text(node: Any) -> str:
    return node.text.decode("utf-8", "replace") if node is not None else ""


def _dotted(text: str) -> str:
    """Receiver text as a dotted name, "super" for super calls, "?" for anything else."""
    text = text.replace("::", ".").strip()
    if _DOTTED.fullmatch(text):
        return text
    if _SUPER_CALL.fullmatch(text):
        return SUPER_RECEIVER
    return OTHER_RECEIVER


class FileParser:
    """Turns one SourceFile into chunks, symbols and raw graph facts. Cheap to build and pickle."""

    def __init__(self, config: ChunkConfig) -> None:
        self.config = config

    def parse(self, repo: str, file: SourceFile) -> ParsedFile:
        """Parse one file; never raises for bad input (falls back to windows, sets `error`)."""
        out = ParsedFile(repo=repo, path=file.path, language=file.language, blob_sha=file.blob_sha)
        lines = file.text.split("\n")
        if lines and lines[-1] == "" and len(lines) > 1:
            lines.pop()
        tokens = [count_tokens(line) for line in lines]
        try:
            if file.language in SPECS:
                _CodeParse(self.config, out, file, lines, tokens).run()
                return out
            if file.language == "markdown":
                out.chunks = self._sections(out, file, lines, tokens, self._markdown_headings(lines))
                return out
            if file.language == "rst":
                out.chunks = self._sections(out, file, lines, tokens, self._rst_headings(lines))
                return out
        except Exception as exc:  # a parser bug must not lose the file: keep it as windows
            out.error = f"parse failed, indexed as windows: {type(exc).__name__}: {exc}"
            out.symbols, out.edges, out.imports, out.calls, out.bases, out.refs = [], [], [], [], [], []
        out.chunks = self._windows(out, file, lines, tokens, 0, len(lines) - 1, ChunkKind.WINDOW)
        return out

    # -- shared chunk builders (also used by _CodeParse) --

    def _make(self, out: ParsedFile, file: SourceFile, lines: list[str], s: int, e: int,
              kind: ChunkKind, symbol: str) -> Chunk:
        return Chunk.build(
            repo=out.repo, path=file.path, language=file.language, start_line=s + 1, end_line=e + 1,
            kind=kind, symbol=symbol, content="\n".join(lines[s : e + 1]), blob_sha=file.blob_sha,
        )

    def _windows(self, out: ParsedFile, file: SourceFile, lines: list[str], tokens: list[int],
                 lo: int, hi: int, kind: ChunkKind, symbol: str = "") -> list[Chunk]:
        """Line windows over rows lo..hi, blank edges trimmed, tiny windows dropped."""
        while lo <= hi and tokens[lo] == 0:
            lo += 1
        while hi >= lo and tokens[hi] == 0:
            hi -= 1
        if lo > hi:
            return []
        cfg = self.config
        chunks = []
        for s, e in split_lines(tokens, lo, hi, cfg.max_tokens, None, cfg.window_lines, cfg.window_overlap_lines):
            if sum(tokens[s : e + 1]) >= cfg.min_window_tokens:
                chunks.append(self._make(out, file, lines, s, e, kind, symbol))
        return chunks

    def _pieces(self, out: ParsedFile, file: SourceFile, lines: list[str], tokens: list[int],
                lo: int, hi: int, kind: ChunkKind, symbol: str) -> list[Chunk]:
        """A definition or section: whole if it fits, else token-budget pieces with overlap."""
        cfg = self.config
        return [
            self._make(out, file, lines, s, e, kind, symbol)
            for s, e in split_lines(tokens, lo, hi, cfg.max_tokens, cfg.overlap_tokens)
        ]

    # -- documents --

    @staticmethod
    def _markdown_headings(lines: list[str]) -> list[tuple[int, str]]:
        headings, fenced = [], False
        for row, line in enumerate(lines):
            if _MD_FENCE.match(line):
                fenced = not fenced
                continue
            match = None if fenced else _MD_HEADING.match(line)
            if match:
                headings.append((row, match.group(2)))
        return headings

    @staticmethod
    def _rst_headings(lines: list[str]) -> list[tuple[int, str]]:
        headings = []
        for row in range(len(lines) - 1):
            title, under = lines[row].rstrip(), lines[row + 1].rstrip()
            if title.strip() and not _RST_UNDERLINE.match(title) and _RST_UNDERLINE.match(under) \
                    and len(under) >= len(title.strip()):
                over = row > 0 and _RST_UNDERLINE.match(lines[row - 1].rstrip())
                headings.append((row - 1 if over else row, title.strip()))
        return headings

    def _sections(self, out: ParsedFile, file: SourceFile, lines: list[str], tokens: list[int],
                  headings: list[tuple[int, str]]) -> list[Chunk]:
        starts = [(0, "")] + headings if not headings or headings[0][0] > 0 else headings
        chunks: list[Chunk] = []
        for i, (row, title) in enumerate(starts):
            hi = starts[i + 1][0] - 1 if i + 1 < len(starts) else len(lines) - 1
            lo = row
            while hi >= lo and tokens[hi] == 0:
                hi -= 1
            while lo <= hi and tokens[lo] == 0:
                lo += 1
            if lo <= hi:
                chunks.extend(self._pieces(out, file, lines, tokens, lo, hi, ChunkKind.SECTION, title))
        return chunks


class _CodeParse:
    """One tree-sitter parse of a code file -> chunks, symbols, parse-time edges, raw facts."""

    def __init__(self, config: ChunkConfig, out: ParsedFile, file: SourceFile,
                 lines: list[str], tokens: list[int]) -> None:
        self.config, self.out, self.file, self.lines, self.tokens = config, out, file, lines, tokens
        self.spec = SPECS[file.language]
        self.path = file.path
        self.helper = FileParser(config)
        self.defs: list[_Def] = []
        self.top: list[_Def] = []

    def run(self) -> None:
        parser, query = _parser_and_query(self.file.language)
        tree = parser.parse(self.file.text.encode("utf-8"))
        root = tree.root_node
        self._walk(root, "", "", "module", self.top)
        self._chunks_and_symbols()
        self._imports(root)
        self._calls(root, query)
        self._edges()

    # -- definitions --

    def _start_row(self, node: Any) -> int:
        """Start row including decorators and the doc comments right above the definition."""
        row = node.start_point[0]
        prev = node.prev_named_sibling
        while prev is not None and prev.type in COMMENT_TYPES and prev.end_point[0] >= row - 1:
            row = prev.start_point[0]
            prev = prev.prev_named_sibling
        return row

    def _add(self, qual: str, kind: SymbolKind, span: Any, parent: str, node: Any, siblings: list[_Def]) -> _Def:
        d = _Def(qual, kind, self._start_row(span), span.end_point[0], parent, node)
        self.defs.append(d)
        siblings.append(d)
        return d

    def _walk(self, node: Any, prefix: str, parent: str, container: str, siblings: list[_Def]) -> None:
        """Find definitions under `node`; `container` is "module", "class", "impl" or "namespace"."""
        for child in node.named_children:
            kind, span = child.type, child
            if kind == "decorated_definition":
                inner = child.child_by_field_name("definition")
                if inner is None:
                    continue
                child, kind = inner, inner.type
            if kind in self.spec.functions:
                self._function(child, span, prefix, parent, container, siblings)
            elif kind in self.spec.classes:
                name = _node_text(child.child_by_field_name("name"))
                if not name:
                    continue
                qual = prefix + name
                d = self._add(qual, SymbolKind.CLASS, span, parent, child, siblings)
                self._bases(child, symbol_node_id(self.path, qual))
                body = child.child_by_field_name("body")
                if body is not None:
                    self._walk(body, qual + ".", symbol_node_id(self.path, qual), "class", d.children)
            elif kind in self.spec.namespaces:
                self._namespace(child, prefix, siblings)
            elif kind in ("lexical_declaration", "variable_declaration") and self.spec.family == "js":
                self._js_variables(child, prefix, parent, container, siblings)
            elif kind in self.spec.descend:
                self._walk(child, prefix, parent, container, siblings)

    def _function(self, node: Any, span: Any, prefix: str, parent: str, container: str,
                  siblings: list[_Def]) -> None:
        name = _node_text(node.child_by_field_name("name"))
        if not name:
            return
        kind = SymbolKind.METHOD if container in ("class", "impl") else SymbolKind.FUNCTION
        if node.type == "method_declaration" and self.spec.family == "go":
            receiver = _IDENT.search(_node_text(node.child_by_field_name("receiver")).split(" ", 1)[-1].lstrip("*"))
            rtype = receiver.group(0) if receiver else ""
            if rtype:
                prefix, parent, kind = rtype + ".", symbol_node_id(self.path, rtype), SymbolKind.METHOD
        self._add(prefix + name, kind, span, parent, node, siblings)

    def _namespace(self, node: Any, prefix: str, siblings: list[_Def]) -> None:
        """Rust impl/mod, TS namespace: a name prefix, not a symbol (its items are top-level)."""
        is_impl = node.type == "impl_item"
        name_node = node.child_by_field_name("type" if is_impl else "name")
        match = _IDENT.search(_node_text(name_node))
        body = node.child_by_field_name("body")
        if match is None or body is None:
            return
        qual = prefix + match.group(0)
        parent = symbol_node_id(self.path, qual) if is_impl else ""
        self._walk(body, qual + ".", parent, "impl" if is_impl else "namespace", siblings)

    def _js_variables(self, node: Any, prefix: str, parent: str, container: str, siblings: list[_Def]) -> None:
        """`const f = () => ...` / `= function () {}` define functions too."""
        declarators = [c for c in node.named_children if c.type == "variable_declarator"]
        for decl in declarators:
            value = decl.child_by_field_name("value")
            name_node = decl.child_by_field_name("name")
            if value is None or value.type not in JS_FUNCTION_VALUES or name_node is None \
                    or name_node.type != "identifier":
                continue
            span = node if len(declarators) == 1 else decl
            kind = SymbolKind.METHOD if container == "class" else SymbolKind.FUNCTION
            self._add(prefix + _node_text(name_node), kind, span, parent, value, siblings)

    def _bases(self, node: Any, class_id: str) -> None:
        holders = []
        for name in ("superclasses", "superclass", "interfaces"):
            holder = node.child_by_field_name(name)
            if holder is not None:
                holders.append(holder)
        holders.extend(c for c in node.named_children if c.type in ("class_heritage", "extends_interfaces"))
        for holder in holders:
            self._base_names(holder, class_id)

    def _base_names(self, node: Any, class_id: str) -> None:
        for child in node.named_children:
            if child.type in ("keyword_argument", "comment", "type_arguments"):
                continue
            if child.type in ("identifier", "type_identifier", "attribute", "member_expression",
                              "scoped_type_identifier", "scoped_identifier", "generic_type"):
                text = _node_text(child).split("<", 1)[0].split("[", 1)[0]
                base = _dotted(text)
                if base not in (OTHER_RECEIVER, SUPER_RECEIVER):
                    self.out.bases.append(RawBase(class_id, base, child.start_point[0] + 1))
            else:
                self._base_names(child, class_id)

    # -- chunks and symbols --

    def _chunks_and_symbols(self) -> None:
        p, out, file, lines, tokens = self.helper, self.out, self.file, self.lines, self.tokens
        chunks: list[Chunk] = []
        first_chunk: dict[str, str] = {}
        for d in self.defs:
            if d.kind == SymbolKind.CLASS:
                pieces = self._class_chunks(d)
            else:
                ck = ChunkKind.METHOD if d.kind == SymbolKind.METHOD else ChunkKind.FUNCTION
                pieces = p._pieces(out, file, lines, tokens, d.start, d.end, ck, d.qualname)
            chunks.extend(pieces)
            if pieces:
                first_chunk.setdefault(d.qualname, pieces[0].chunk_id)
        covered = sorted((d.start, d.end) for d in self.top)
        row = 0
        for s, e in covered + [(len(lines), len(lines))]:
            if s > row:
                chunks.extend(p._windows(out, file, lines, tokens, row, s - 1, ChunkKind.MODULE))
            row = max(row, e + 1)
        chunks.sort(key=lambda c: (c.start_line, c.end_line))
        out.chunks = chunks
        module = module_of(self.path)
        known = {d.qualname for d in self.defs}
        seen: set[str] = set()
        for d in self.defs:
            sid = symbol_node_id(self.path, d.qualname)
            if sid in seen:
                continue
            seen.add(sid)
            parent = d.parent if d.parent and d.parent.split("::", 1)[1] in known else ""
            out.symbols.append(Symbol(
                symbol_id=sid, repo=out.repo, path=self.path, name=d.qualname.rsplit(".", 1)[-1],
                qualname=d.qualname, module=module, kind=d.kind.value, language=file.language,
                start_line=d.start + 1, end_line=d.end + 1, chunk_id=first_chunk.get(d.qualname, ""),
                parent=parent,
            ))

    def _class_chunks(self, d: _Def) -> list[Chunk]:
        """Header (up to the first member definition) plus any other non-member lines, as class chunks."""
        p, out, file, lines, tokens = self.helper, self.out, self.file, self.lines, self.tokens
        members = sorted((c.start, c.end) for c in d.children)
        if not members:
            return p._pieces(out, file, lines, tokens, d.start, d.end, ChunkKind.CLASS, d.qualname)
        header_end = members[0][0] - 1
        while header_end > d.start and tokens[header_end] == 0:
            header_end -= 1
        chunks = p._pieces(out, file, lines, tokens, d.start, max(d.start, header_end), ChunkKind.CLASS, d.qualname)
        row = members[0][1] + 1
        for s, e in members[1:] + [(d.end + 1, d.end + 1)]:
            if s > row:
                chunks.extend(p._windows(out, file, lines, tokens, row, s - 1, ChunkKind.CLASS, d.qualname))
            row = max(row, e + 1)
        return chunks

    # -- imports, calls, references --

    def _imports(self, root: Any) -> None:
        family, imports = self.spec.family, self.out.imports
        stack = [root]
        while stack:
            node = stack.pop()
            for child in node.named_children:
                if child.type in self.spec.imports:
                    line = child.start_point[0] + 1
                    if family == "python":
                        self._python_import(child, line)
                    elif family == "js":
                        self._js_import(child, line)
                    elif family == "go":
                        for spec in _descendants(child, "import_spec"):
                            module = _node_text(spec.child_by_field_name("path")).strip('"`')
                            alias = _node_text(spec.child_by_field_name("name"))
                            imports.append(RawImport(module, "", alias, line))
                    elif family == "java":
                        text = _node_text(child).removeprefix("import").strip().rstrip(";").strip()
                        imports.append(RawImport(text.removeprefix("static ").strip(), "", "", line))
                    else:
                        text = _node_text(child.child_by_field_name("argument") or child)
                        imports.append(RawImport(text, "", "", line))
                elif family == "python" and child.type in ("function_definition", "class_definition",
                                                           "decorated_definition", "block", "if_statement",
                                                           "try_statement", "with_statement", "else_clause",
                                                           "except_clause", "finally_clause", "elif_clause"):
                    stack.append(child)

    def _python_import(self, node: Any, line: int) -> None:
        imports = self.out.imports
        if node.type == "import_statement":
            for child in node.named_children:
                if child.type == "aliased_import":
                    imports.append(RawImport(_node_text(child.child_by_field_name("name")), "",
                                             _node_text(child.child_by_field_name("alias")), line))
                elif child.type == "dotted_name":
                    imports.append(RawImport(_node_text(child), "", "", line))
            return
        module = _node_text(node.child_by_field_name("module_name")).replace(" ", "")
        names = node.children_by_field_name("name")
        if any(c.type == "wildcard_import" for c in node.named_children):
            imports.append(RawImport(module, "*", "", line))
        for child in names:
            if child.type == "aliased_import":
                name = _node_text(child.child_by_field_name("name"))
                imports.append(RawImport(module, name, _node_text(child.child_by_field_name("alias")), line))
            else:
                name = _node_text(child)
                imports.append(RawImport(module, name, name, line))

    def _js_import(self, node: Any, line: int) -> None:
        module = _node_text(node.child_by_field_name("source")).strip("'\"`")
        bound = False
        for spec in _descendants(node, "import_specifier"):
            name = _node_text(spec.child_by_field_name("name"))
            alias = _node_text(spec.child_by_field_name("alias")) or name
            self.out.imports.append(RawImport(module, name, alias, line))
            bound = True
        if not bound:
            self.out.imports.append(RawImport(module, "", "", line))

    def _enclosing(self) -> tuple[list[int], list[_Def]]:
        """Definitions sorted by start byte, for innermost-container lookup by position."""
        ordered = sorted(self.defs, key=lambda d: (d.node.start_byte, -d.node.end_byte))
        return [d.node.start_byte for d in ordered], ordered

    def _owner(self, starts: list[int], ordered: list[_Def], byte: int) -> _Def | None:
        i = bisect.bisect_right(starts, byte) - 1
        while i >= 0:
            d = ordered[i]
            if d.node.start_byte <= byte < d.node.end_byte:
                return d
            i -= 1
        return None

    def _calls(self, root: Any, query: Any) -> None:
        from tree_sitter import QueryCursor

        starts, ordered = self._enclosing()
        file_id = file_node_id(self.path)
        for node in QueryCursor(query).captures(root).get("call", []):
            name, receiver = self._callee(node)
            if not name:
                continue
            owner = self._owner(starts, ordered, node.start_byte)
            src = symbol_node_id(self.path, owner.qualname) if owner else file_id
            scope = ""
            if owner is not None:
                scope = owner.qualname if owner.kind == SymbolKind.CLASS else (
                    owner.parent.split("::", 1)[1] if owner.parent else "")
            self.out.calls.append(RawCall(src, name, receiver, scope, node.start_point[0] + 1))
        if self.spec.family == "python":
            self._python_refs(root, starts, ordered)

    def _callee(self, node: Any) -> tuple[str, str]:
        """(name, receiver) of a call node; name "" when it is not a plain named call."""
        if node.type == "method_invocation":
            return _node_text(node.child_by_field_name("name")), _receiver(node.child_by_field_name("object"))
        if node.type in ("new_expression", "object_creation_expression"):
            target = node.child_by_field_name("constructor") or node.child_by_field_name("type")
            match = _IDENT.search(_node_text(target).split("<", 1)[0].split(".")[-1])
            return (match.group(0) if match else ""), ""
        fn = node.child_by_field_name("function")
        if fn is None:
            return "", ""
        if fn.type == "identifier":
            return _node_text(fn), ""
        fields = {"attribute": ("object", "attribute"), "member_expression": ("object", "property"),
                  "selector_expression": ("operand", "field"), "field_expression": ("value", "field"),
                  "scoped_identifier": ("path", "name")}.get(fn.type)
        if fields is None:
            return "", ""
        return _node_text(fn.child_by_field_name(fields[1])), _receiver(fn.child_by_field_name(fields[0]))

    def _python_refs(self, root: Any, starts: list[int], ordered: list[_Def]) -> None:
        """Identifiers that name a file-level definition or import, used other than as a call."""
        names = {d.qualname for d in self.top} | {
            (i.alias or i.module.split(".")[0]) for i in self.out.imports if i.name != "*"}
        names.discard("")
        if not names or not ordered:
            return
        from tree_sitter import Query, QueryCursor

        if "python:refs" not in _QUERIES:
            from tree_sitter_language_pack import get_language

            _QUERIES["python:refs"] = Query(get_language("python"), "(identifier) @id")
        seen: set[tuple[str, str]] = set()
        wanted = {name.encode("utf-8") for name in names}
        for node in QueryCursor(_QUERIES["python:refs"]).captures(root).get("id", []):
            if node.text not in wanted:
                continue
            text = _node_text(node)
            if _is_binding_or_call(node):
                continue
            owner = self._owner(starts, ordered, node.start_byte)
            if owner is None:
                continue
            src = symbol_node_id(self.path, owner.qualname)
            if (src, text) not in seen and owner.qualname != text:
                seen.add((src, text))
                self.out.refs.append(RawRef(src, text, node.start_point[0] + 1))

    # -- parse-time edges --

    def _edges(self) -> None:
        out, file_id = self.out, file_node_id(self.path)
        for s in out.symbols:
            src = s.parent or file_id
            out.edges.append(Edge(src, s.symbol_id, EdgeType.CONTAINS.value, out.repo, self.path, s.start_line))
        for b in out.bases:
            out.edges.append(Edge(b.class_id, UNRESOLVED_PREFIX + b.base, EdgeType.INHERITS.value,
                                  out.repo, self.path, b.line, resolved=False))
        for i in out.imports:
            out.edges.append(Edge(file_id, UNRESOLVED_PREFIX + i.module, EdgeType.IMPORTS.value,
                                  out.repo, self.path, i.line, resolved=False))
        for c in out.calls:
            out.edges.append(Edge(c.src, UNRESOLVED_PREFIX + c.name, EdgeType.CALLS.value,
                                  out.repo, self.path, c.line, resolved=False))


_NAME_FIELDS = {
    "call": "function", "function_definition": "name", "class_definition": "name",
    "attribute": "attribute", "keyword_argument": "name",
}
_NOT_REFERENCE_PARENTS = frozenset({
    "import_statement", "import_from_statement", "dotted_name", "aliased_import", "parameters",
    "default_parameter", "typed_parameter", "typed_default_parameter", "global_statement",
    "nonlocal_statement",
})


def _is_binding_or_call(node: Any) -> bool:
    """True for identifiers that define a name, are called (CALLS covers them) or are attributes."""
    parent = node.parent
    if parent is None:
        return False
    if parent.type in _NOT_REFERENCE_PARENTS:
        return True
    name_field = _NAME_FIELDS.get(parent.type)
    return name_field is not None and parent.child_by_field_name(name_field) == node


def _receiver(node: Any) -> str:
    return "" if node is None else _dotted(_node_text(node))


def _descendants(node: Any, node_type: str) -> list[Any]:
    found, stack = [], [node]
    while stack:
        current = stack.pop()
        for child in current.named_children:
            if child.type == node_type:
                found.append(child)
            else:
                stack.append(child)
    return found


# -- repo-level resolution ----------------------------------------------------------------------

JS_IMPORT_SUFFIXES = ("", ".ts", ".tsx", ".js", ".jsx", ".mjs", ".cjs", "/index.ts", "/index.tsx", "/index.js")


class GraphResolver:
    """Turns the raw names of many ParsedFiles of ONE repo into graph node ids.

    Python is resolved precisely (scopes, imports, inheritance); other languages by name: a call goes
    to the enclosing class's method of that name, else the unique definition of that name in the
    same file, the same directory, then the repo. What cannot be resolved stays as
    `name:<identifier>` with resolved=False.
    """

    def resolve(self, parsed: list[ParsedFile]) -> list[Edge]:
        """All edges of the repo (CONTAINS as parsed; CALLS/INHERITS/IMPORTS/REFERENCES resolved)."""
        return _Resolution(parsed).run()


class _Resolution:
    """State of one `GraphResolver.resolve` call (indexes over every file of the repo)."""

    def __init__(self, parsed: list[ParsedFile]) -> None:
        self.parsed = parsed
        self.symbols: dict[str, Symbol] = {s.symbol_id: s for pf in parsed for s in pf.symbols}
        self.paths = {pf.path for pf in parsed}
        self.by_basename: dict[str, list[str]] = defaultdict(list)
        for path in sorted(self.paths):
            self.by_basename[posixpath.basename(path)].append(path)
        self.family = {pf.path: SPECS[pf.language].family for pf in parsed if pf.language in SPECS}
        self.modules = self._module_index()
        self.bindings: dict[str, dict[str, list[str]]] = {}
        self.star: dict[str, list[str]] = defaultdict(list)
        for pf in parsed:
            if self.family.get(pf.path) == "python":
                self._python_bindings(pf)
        self.raw_bases: dict[str, list[RawBase]] = defaultdict(list)
        for pf in parsed:
            for b in pf.bases:
                self.raw_bases[b.class_id].append(b)
        self.by_name: dict[tuple[str, str], list[str]] = defaultdict(list)
        for sid, sym in self.symbols.items():
            fam = self.family.get(sym.path)
            if fam:
                self.by_name[(fam, sym.name)].append(sid)
        self._bases_cache: dict[str, list[str]] = {}

    def run(self) -> list[Edge]:
        edges: list[Edge] = []
        seen: set[tuple[str, str, str]] = set()

        def add(edge: Edge) -> None:
            key = (edge.src, edge.dst, edge.type)
            if key not in seen and edge.src != edge.dst:
                seen.add(key)
                edges.append(edge)

        for pf in self.parsed:
            python = self.family.get(pf.path) == "python"
            for e in pf.edges:
                if e.type == EdgeType.CONTAINS.value:
                    add(e)
            for b in pf.bases:
                dst = self.class_bases_one(pf.path, b)
                add(self._edge(b.class_id, dst, UNRESOLVED_PREFIX + b.base, EdgeType.INHERITS, pf, b.line))
            for i in pf.imports:
                dst = self._import_target(pf.path, i)
                add(self._edge(file_node_id(pf.path), dst, UNRESOLVED_PREFIX + i.module, EdgeType.IMPORTS, pf, i.line))
            for c in pf.calls:
                dst = self._python_call(pf.path, c) if python else self._named_call(pf.path, c)
                add(self._edge(c.src, dst, UNRESOLVED_PREFIX + c.name, EdgeType.CALLS, pf, c.line))
            for r in pf.refs:
                dst = self._python_symbol(pf.path, r.name, MAX_RESOLVE_DEPTH)
                if dst:
                    add(Edge(r.src, dst, EdgeType.REFERENCES.value, pf.repo, pf.path, r.line))
        return edges

    @staticmethod
    def _edge(src: str, dst: str | None, fallback: str, etype: EdgeType, pf: ParsedFile, line: int) -> Edge:
        return Edge(src, dst or fallback, etype.value, pf.repo, pf.path, line, resolved=dst is not None)

    # -- python modules and bindings --

    def _module_index(self) -> dict[str, str]:
        """Dotted module name -> path, by repo-relative name and by name under its source root
        (the directory above the topmost package, e.g. `src/`)."""
        python = sorted(p for p in self.paths if self.family.get(p) == "python")
        packages = {posixpath.dirname(p) for p in python if posixpath.basename(p) == "__init__.py"}
        index: dict[str, str] = {}
        for path in python:
            index.setdefault(module_of(path), path)
        for path in python:
            root = posixpath.dirname(path)
            while root and root in packages:
                root = posixpath.dirname(root)
            rel = path[len(root) + 1 :] if root else path
            index.setdefault(module_of(rel), path)
        return index

    def _package_parts(self, path: str) -> list[str]:
        """Dotted parts of the package a file belongs to (its directory)."""
        directory = posixpath.dirname(path)
        return [p for p in directory.split("/") if p]

    def _absolute(self, path: str, module: str) -> str:
        """Absolute dotted module for `module` as written in `path` (relative imports resolved)."""
        if not module.startswith("."):
            return module
        level = len(module) - len(module.lstrip("."))
        parts = self._package_parts(path)
        if level - 1 > len(parts):
            return ""
        base = parts[: len(parts) - (level - 1)]
        rest = [p for p in module.lstrip(".").split(".") if p]
        return ".".join(base + rest)

    def _python_bindings(self, pf: ParsedFile) -> None:
        """Local name -> absolute dotted target, from every import of the file (any scope)."""
        table: dict[str, list[str]] = {}
        for i in pf.imports:
            module = self._absolute(pf.path, i.module)
            if not module:
                continue
            if i.name == "*":
                self.star[pf.path].append(module)
            elif i.name:
                table[i.alias or i.name] = module.split(".") + [i.name]
            elif i.alias:
                table[i.alias] = module.split(".")
            else:
                head = module.split(".")[0]
                table[head] = [head]
        self.bindings[pf.path] = table

    def _module_path(self, parts: list[str]) -> str | None:
        return self.modules.get(".".join(parts)) if parts else None

    def _import_target(self, path: str, imp: RawImport) -> str | None:
        fam = self.family.get(path)
        if fam == "python":
            module = self._absolute(path, imp.module)
            if not module:
                return None
            parts = module.split(".")
            if imp.name and imp.name != "*":
                sub = self._module_path(parts + [imp.name])
                if sub:
                    return file_node_id(sub)
            target = self._module_path(parts)
            return file_node_id(target) if target else None
        if fam == "js" and imp.module.startswith("."):
            base = posixpath.normpath(posixpath.join(posixpath.dirname(path), imp.module))
            for suffix in JS_IMPORT_SUFFIXES:
                if base + suffix in self.paths:
                    return file_node_id(base + suffix)
        if fam == "java":
            tail = imp.module.replace(".", "/") + ".java"
            hits = [p for p in self.by_basename.get(posixpath.basename(tail), []) if p == tail or p.endswith("/" + tail)]
            if len(hits) == 1:
                return file_node_id(hits[0])
        return None

    # -- python names --

    def _python_symbol(self, path: str, dotted: str, depth: int) -> str | None:
        """Symbol id that `dotted` (as written in `path`) names, or None."""
        if depth <= 0 or not dotted:
            return None
        parts = dotted.split(".")
        if symbol_node_id(path, parts[0]) in self.symbols:
            return self._member(path, parts, depth)
        target = self.bindings.get(path, {}).get(parts[0])
        if target is None:
            for module in self.star.get(path, []):
                mpath = self._module_path(module.split("."))
                if mpath and mpath != path:
                    found = self._python_symbol(mpath, dotted, depth - 1)
                    if found:
                        return found
            return None
        absolute = target + parts[1:]
        for k in range(len(absolute), 0, -1):
            mpath = self._module_path(absolute[:k])
            if mpath:
                return self._member(mpath, absolute[k:], depth - 1) if k < len(absolute) else None
        return None

    def _member(self, mpath: str, parts: list[str], depth: int) -> str | None:
        """`parts` (Class.method...) inside the module at `mpath`, following re-exports and bases."""
        if not parts or depth <= 0:
            return None
        sid = symbol_node_id(mpath, ".".join(parts))
        if sid in self.symbols:
            return sid
        if len(parts) >= 2:
            owner = self._member(mpath, parts[:-1], depth)
            if owner and self.symbols[owner].kind == SymbolKind.CLASS.value:
                return self._find_method(owner, parts[-1], depth)
            return None
        return self._python_symbol(mpath, parts[0], depth - 1) if parts[0] in self.bindings.get(mpath, {}) \
            or self.star.get(mpath) else None

    def class_bases_one(self, path: str, base: RawBase) -> str | None:
        if self.family.get(path) == "python":
            found = self._python_symbol(path, base.base, MAX_RESOLVE_DEPTH)
        else:
            found = self._unique(path, base.base.split(".")[-1], kinds={SymbolKind.CLASS.value})
        return found if found and self.symbols[found].kind == SymbolKind.CLASS.value else None

    def _class_bases(self, class_id: str) -> list[str]:
        if class_id not in self._bases_cache:
            self._bases_cache[class_id] = []
            sym = self.symbols.get(class_id)
            found = [self.class_bases_one(sym.path, b) for b in self.raw_bases.get(class_id, [])] if sym else []
            self._bases_cache[class_id] = [f for f in found if f]
        return self._bases_cache[class_id]

    def _find_method(self, class_id: str, name: str, depth: int, skip_own: bool = False) -> str | None:
        """`name` on the class or, depth-first in declaration order, on its repository bases."""
        if depth <= 0:
            return None
        if not skip_own:
            sid = f"{class_id}.{name}"
            if sid in self.symbols:
                return sid
        for base in self._class_bases(class_id):
            found = self._find_method(base, name, depth - 1)
            if found:
                return found
        return None

    def _python_call(self, path: str, call: RawCall) -> str | None:
        scope_id = symbol_node_id(path, call.scope) if call.scope else ""
        if call.receiver in SELF_RECEIVERS:
            return self._find_method(scope_id, call.name, MAX_RESOLVE_DEPTH) if scope_id else None
        if call.receiver == SUPER_RECEIVER:
            return self._find_method(scope_id, call.name, MAX_RESOLVE_DEPTH, skip_own=True) if scope_id else None
        if call.receiver == OTHER_RECEIVER:
            return None
        dotted = f"{call.receiver}.{call.name}" if call.receiver else call.name
        found = self._python_symbol(path, dotted, MAX_RESOLVE_DEPTH)
        if found and self.symbols[found].kind == SymbolKind.CLASS.value:
            return self._find_method(found, PYTHON_INIT, MAX_RESOLVE_DEPTH) or found
        return found

    # -- other languages: by name --

    def _unique(self, path: str, name: str, kinds: set[str] | None = None, qual_hint: str = "") -> str | None:
        fam = self.family.get(path)
        candidates = [c for c in self.by_name.get((fam, name), []) if kinds is None or self.symbols[c].kind in kinds] \
            if fam else []
        if qual_hint:
            hinted = [c for c in candidates if self.symbols[c].qualname == qual_hint]
            if len(hinted) == 1:
                return hinted[0]
        directory = posixpath.dirname(path)
        for pool in (
            [c for c in candidates if self.symbols[c].path == path],
            [c for c in candidates if posixpath.dirname(self.symbols[c].path) == directory],
            candidates,
        ):
            if len(pool) == 1:
                return pool[0]
            if pool:
                return None
        return None

    def _named_call(self, path: str, call: RawCall) -> str | None:
        if call.receiver in SELF_RECEIVERS and call.scope:
            own = symbol_node_id(path, f"{call.scope}.{call.name}")
            if own in self.symbols:
                return own
        if call.receiver == SUPER_RECEIVER and call.scope:
            return self._find_method(symbol_node_id(path, call.scope), call.name, MAX_RESOLVE_DEPTH, skip_own=True)
        hint = f"{call.receiver}.{call.name}" if call.receiver and call.receiver not in SELF_RECEIVERS else ""
        if call.receiver in SELF_RECEIVERS and call.scope:
            hint = f"{call.scope}.{call.name}"
        return self._unique(path, call.name, qual_hint=hint)
