"""Extraction: one tree-sitter parse of a code file -> definitions, chunks, symbols, calls, edges.

Long because one walk of one tree fills every output: not split, since a second module would walk the tree again
or pass its cursor state across.

Generic over the language table; what differs per family (node types, imports) lives in the family
modules (`pipelines/parse/families/`), Python references and call typing in the `python*.py` modules. Nested functions stay inside their
outer function's chunk and are not symbols of their own.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass, field
from typing import Any

from pipelines.parse import python, python_locals
from pipelines.parse.chunking import ChunkBuilder
from pipelines.parse.facts import (
    OTHER_RECEIVER,
    SUPER_RECEIVER,
    UNRESOLVED_PREFIX,
    ParsedFile,
    RawBase,
    RawCall,
    RawRef,
)
from pipelines.parse.families import family_of_language, grammar_of, spec_of
from pipelines.parse.languages import COMMENT_TYPES, parser_and_query, type_refs_query
from pipelines.parse.nodes import IDENT, dotted, node_text, receiver_name
from pipelines.parse.python_calls import VALUE_CALL, PythonCallTyping
from pipelines.source_files import SourceFile
from semantica.config import ChunkConfig
from semantica.languages.spans import (
    WRAPPERS,
    class_name,
    declared_name,
    macro_namespace,
    namespace_name,
    wrapped_definition,
)
from semantica.schema import Chunk, ChunkKind, Edge, EdgeType, Symbol, SymbolKind, file_node_id, module_of, symbol_node_id

# Lines that open a definition in any supported language (counted inside unparsed regions, for the report).
_DEFINITION_LINE = re.compile(r"^\s*(?:(?:export|pub|public|private|protected|static|async|abstract|default)\s+)*"
                              r"(?:def|class|function|func|fn|interface|struct|enum|trait|impl)\b")
_MAX_ERROR_SPANS = 5


def _is_doc_block(node: Any) -> bool:
    """A `/** ... */` block: JSDoc and Javadoc document the definition after them across blank lines too."""
    return node.text.startswith(b"/**")


def _names_a_type(impl: Any, type_node: Any) -> bool:
    """Whether an impl's type is a named type (`Circle`, `Labeled<T>`, `shapes::Circle`), not one of the
    impl's own type parameters (a blanket `impl<T> Trait for T`), a tuple, a reference or a slice."""
    if type_node is None or type_node.type not in ("type_identifier", "generic_type", "scoped_type_identifier"):
        return False
    params = impl.child_by_field_name("type_parameters")
    own = {node_text(p.child_by_field_name("name") or p) for p in params.named_children} if params is not None else set()
    return node_text(type_node).split("<", 1)[0] not in own


def _is_inner_doc(node: Any) -> bool:
    """`//!` and `/*!`: the enclosing module's docs (rustdoc) or a kept license header, not the next item's."""
    return node.text.startswith((b"//!", b"/*!"))


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


class CodeExtraction:
    """One tree-sitter parse of a code file -> chunks, symbols, parse-time edges, raw facts."""

    def __init__(self, config: ChunkConfig, out: ParsedFile, file: SourceFile,
                 lines: list[str], tokens: list[int]) -> None:
        self.config, self.out, self.file, self.lines, self.tokens = config, out, file, lines, tokens
        spec, family = spec_of(file.language), family_of_language(file.language)
        assert spec is not None and family is not None, f"{file.language} is not a parsed language"
        self.spec, self.family, self.grammar = spec, family, grammar_of(file.language)
        self.path = file.path
        self.helper = ChunkBuilder(config)
        self.defs: list[_Def] = []
        self.top: list[_Def] = []
        self._attached = COMMENT_TYPES | spec.attached

    def run(self) -> None:
        parser, query = parser_and_query(self.grammar, self.spec)
        tree = parser.parse(self.file.text.encode("utf-8"))
        root = tree.root_node
        self._walk(root, "", "", "module", self.top)
        if root.has_error:
            self.out.lost = lost_definitions(root, self.lines, {d.node.start_point[0] for d in self.defs})
        self._chunks_and_symbols()
        self._imports(root)
        self._calls(root, query)
        self._type_refs(root)
        if self.family.facts is not None:
            self.family.facts(root, self.out)
        self._edges()

    # -- definitions --

    def _start_row(self, node: Any) -> int:
        """Start row including decorators and the doc comments (JSDoc, Javadoc, Go doc, rustdoc) right above
        the definition (a `/** */` block also across blank lines). A definition opening a wrapper on its own line (`export function f`, Go's
        `type T struct`) takes the wrapper's comments: they sit above the wrapper, not inside it."""
        while node.prev_named_sibling is None and node.parent is not None \
                and node.parent.type in self.spec.descend and node.parent.start_point[0] == node.start_point[0]:
            node = node.parent
        row = node.start_point[0]
        prev = node.prev_named_sibling
        while prev is not None and prev.type in self._attached and self._opens_line(prev) and not _is_inner_doc(prev) \
                and (prev.end_point[0] >= row - 1 or (row == node.start_point[0] and _is_doc_block(prev))):
            row = prev.start_point[0]
            prev = prev.prev_named_sibling
        return row

    def _opens_line(self, node: Any) -> bool:
        """Whether nothing but indentation precedes `node` on its line (not a trailing comment of code above)."""
        row, column = node.start_point
        return not self.lines[row].encode("utf-8")[:column].strip()

    def _add(self, qual: str, kind: SymbolKind, span: Any, parent: str, node: Any, siblings: list[_Def]) -> _Def:
        d = _Def(qual, kind, self._start_row(span), span.end_point[0], parent, node)
        self.defs.append(d)
        siblings.append(d)
        return d

    def _walk(self, node: Any, prefix: str, parent: str, container: str, siblings: list[_Def]) -> None:
        """Find definitions under `node`; `container` is "module", "class", "impl" or "namespace"."""
        for child in node.named_children:
            kind, span = child.type, child
            if kind in WRAPPERS:
                inner = wrapped_definition(child)
                if inner is None:
                    continue
                child, kind = inner, inner.type
            hidden = macro_namespace(child) if kind in self.spec.functions else None
            if hidden is not None:
                name, body = hidden
                self._walk(body, f"{prefix}{name}." if name else prefix, "", "namespace", siblings)
            elif kind in self.spec.functions:
                self._function(child, span, prefix, parent, container, siblings)
            elif kind in self.spec.classes:
                name = node_text(class_name(child))
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
            elif kind in ("lexical_declaration", "variable_declaration") and self.spec.function_values:
                self._js_variables(child, prefix, parent, container, siblings)
            elif kind in self.spec.descend:
                self._walk(child, prefix, parent, container, siblings)

    def _function(self, node: Any, span: Any, prefix: str, parent: str, container: str,
                  siblings: list[_Def]) -> None:
        name = node_text(node.child_by_field_name("name"))
        if not name:  # C and C++: the name sits at the end of the declarator chain (`Foo::grow`: a method of Foo)
            scope, name = declared_name(node)
            if scope:
                prefix = prefix + "".join(f"{part}." for part in scope)
                container = "class"
        if not name:
            return
        kind = SymbolKind.METHOD if container in ("class", "impl") else SymbolKind.FUNCTION
        if node.type == "method_declaration" and self.spec.receiver_methods:
            receiver = IDENT.search(node_text(node.child_by_field_name("receiver")).split(" ", 1)[-1].lstrip("*"))
            rtype = receiver.group(0) if receiver else ""
            if rtype:
                prefix, parent, kind = rtype + ".", symbol_node_id(self.path, rtype), SymbolKind.METHOD
        self._add(prefix + name, kind, span, parent, node, siblings)

    def _namespace(self, node: Any, prefix: str, siblings: list[_Def]) -> None:
        """Rust impl/mod, TS namespace: a name prefix, not a symbol (its items are top-level)."""
        is_impl = node.type == "impl_item"
        name_node = node.child_by_field_name("type" if is_impl else "name")
        name, body = namespace_name(node), node.child_by_field_name("body")
        if name is None or body is None:
            return
        if not name:  # C++'s `namespace { ... }`: its items keep the enclosing prefix
            self._walk(body, prefix, "", "namespace", siblings)
            return
        qual = prefix + name
        parent = symbol_node_id(self.path, qual) if is_impl else ""
        trait = node.child_by_field_name("trait") if is_impl else None
        if trait is not None and _names_a_type(node, name_node):  # `impl Trait for Type`: `impls Trait` is Type
            base = dotted(node_text(trait).split("<", 1)[0])
            if base not in (OTHER_RECEIVER, SUPER_RECEIVER):
                self.out.bases.append(RawBase(parent, base, node.start_point[0] + 1))
        self._walk(body, qual + ".", parent, "impl" if is_impl else "namespace", siblings)

    def _js_variables(self, node: Any, prefix: str, parent: str, container: str, siblings: list[_Def]) -> None:
        """`const f = () => ...` / `= function () {}` define functions too."""
        declarators = [c for c in node.named_children if c.type == "variable_declarator"]
        for decl in declarators:
            value = decl.child_by_field_name("value")
            name_node = decl.child_by_field_name("name")
            if value is None or value.type not in self.spec.function_values or name_node is None \
                    or name_node.type != "identifier":
                continue
            span = node if len(declarators) == 1 else decl
            kind = SymbolKind.METHOD if container == "class" else SymbolKind.FUNCTION
            self._add(prefix + node_text(name_node), kind, span, parent, value, siblings)

    def _bases(self, node: Any, class_id: str) -> None:
        holders = []
        for name in ("superclasses", "superclass", "interfaces", "bounds"):  # bounds: Rust supertraits
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
                text = node_text(child).split("<", 1)[0].split("[", 1)[0]
                base = dotted(text)
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
                pieces = p.pieces(out, file, lines, tokens, d.start, d.end, ck, d.qualname)
            chunks.extend(pieces)
            if pieces:
                first_chunk.setdefault(d.qualname, pieces[0].chunk_id)
        covered = sorted((d.start, d.end) for d in self.top)
        row = 0
        for s, e in covered + [(len(lines), len(lines))]:
            if s > row:
                chunks.extend(p.windows(out, file, lines, tokens, row, s - 1, ChunkKind.MODULE))
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
            return p.pieces(out, file, lines, tokens, d.start, d.end, ChunkKind.CLASS, d.qualname)
        header_end = members[0][0] - 1
        while header_end > d.start and tokens[header_end] == 0:
            header_end -= 1
        chunks = p.pieces(out, file, lines, tokens, d.start, max(d.start, header_end), ChunkKind.CLASS, d.qualname)
        row = members[0][1] + 1
        for s, e in members[1:] + [(d.end + 1, d.end + 1)]:
            if s > row:
                chunks.extend(p.windows(out, file, lines, tokens, row, s - 1, ChunkKind.CLASS, d.qualname))
            row = max(row, e + 1)
        return chunks

    # -- imports, calls, references --

    def _imports(self, root: Any) -> None:
        extract, scopes = self.family.imports, self.spec.import_scopes
        stack = [root]
        while stack:
            node = stack.pop()
            for child in node.named_children:
                if child.type in self.spec.imports:
                    self.out.imports.extend(extract(child, child.start_point[0] + 1))
                elif child.type in scopes:
                    stack.append(child)

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
        python = self.spec.typed_calls
        typing = PythonCallTyping(self.defs, root, lambda byte: self._owner(starts, ordered, byte)) if python else None
        # capture order varies run to run: sort, so the facts (and their lines) do not depend on luck
        nodes = typing.calls if typing is not None else \
            sorted(QueryCursor(query).captures(root).get("call", []), key=lambda n: (n.start_byte, n.end_byte))
        for node in nodes:
            name, receiver = self._callee(node)
            owner = self._owner(starts, ordered, node.start_byte)
            src = symbol_node_id(self.path, owner.qualname) if owner else file_id
            scope = ""
            if owner is not None:
                scope = owner.qualname if owner.kind == SymbolKind.CLASS else (
                    owner.parent.split("::", 1)[1] if owner.parent else "")
            kind = ""
            if typing is not None:
                self.out.refs.extend(typing.callbacks(node, src, owner, scope))
                kind = typing.receiver_kind(node, receiver, owner, scope) if receiver else \
                    typing.callee_kind(node, owner, scope)
                if not name and kind:
                    name, receiver = VALUE_CALL, OTHER_RECEIVER
            if name:
                self.out.calls.append(RawCall(src, name, receiver, scope, node.start_point[0] + 1, kind))
        if typing is not None:
            self.out.returns, self.out.attributes, self.out.properties = typing.file_facts(SymbolKind.CLASS.value)
            self.out.globals = python_locals.module_types(root)
            self._python_refs(root, starts, ordered)

    def _callee(self, node: Any) -> tuple[str, str]:
        """(name, receiver) of a call node; name "" when it is not a plain named call."""
        if node.type == "method_invocation":
            return node_text(node.child_by_field_name("name")), receiver_name(node.child_by_field_name("object"))
        if node.type in ("new_expression", "object_creation_expression"):
            target = node.child_by_field_name("constructor") or node.child_by_field_name("type")
            match = IDENT.search(node_text(target).split("<", 1)[0].split(".")[-1])
            return (match.group(0) if match else ""), ""
        fn = node.child_by_field_name("function")
        if fn is None:
            return "", ""
        if fn.type == "identifier":
            return node_text(fn), ""
        fields = {"attribute": ("object", "attribute"), "member_expression": ("object", "property"),
                  "selector_expression": ("operand", "field"), "field_expression": ("value", "field"),
                  "scoped_identifier": ("path", "name"), "qualified_identifier": ("scope", "name")}.get(fn.type)
        if fields is None:
            return "", ""
        holder = fn.child_by_field_name(fields[0])
        if holder is None and fn.type == "field_expression":  # C and C++ name a field's object `argument`
            holder = fn.child_by_field_name("argument")
        return node_text(fn.child_by_field_name(fields[1])), receiver_name(holder)

    def _type_refs(self, root: Any) -> None:
        """Type names used in type positions (the spec's `type_refs` query), as references from their owner:
        `Name` or `pkg.Name` (a qualified type); a type's own declared name is not a use."""
        from tree_sitter import QueryCursor

        query = type_refs_query(self.grammar, self.spec)
        if query is None:
            return
        starts, ordered = self._enclosing()
        file_id = file_node_id(self.path)
        for node in sorted(QueryCursor(query).captures(root).get("type", []), key=lambda n: n.start_byte):
            parent = node.parent
            if parent is not None and parent.type == "type_spec" and parent.child_by_field_name("name") == node:
                continue
            name = node_text(parent) if parent is not None and parent.type == "qualified_type" else node_text(node)
            if name in self.spec.builtin_types:
                continue
            owner = self._owner(starts, ordered, node.start_byte)
            src = symbol_node_id(self.path, owner.qualname) if owner else file_id
            self.out.refs.append(RawRef(src, name, node.start_point[0] + 1))

    def _python_refs(self, root: Any, starts: list[int], ordered: list[_Def]) -> None:
        """Identifiers that name a file-level definition or import, used other than as a call."""
        names = {d.qualname for d in self.top} | {
            (i.alias or i.module.split(".")[0]) for i in self.out.imports if i.name != "*"}
        names.discard("")
        if not names or not ordered:
            return

        def owner_of(byte: int) -> tuple[str, str] | None:
            owner = self._owner(starts, ordered, byte)
            return None if owner is None else (symbol_node_id(self.path, owner.qualname), owner.qualname)

        self.out.refs.extend(python.references(root, names, owner_of))

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



def lost_definitions(root: Any, lines: list[str], extracted_rows: set[int]) -> str:
    """Where tree-sitter gave up (ERROR/MISSING nodes: syntax errors, or nesting past its stack limit of
    about 500 levels) and the definition lines there that did not become symbols; "" when none."""
    spans: list[tuple[int, int]] = []
    stack = [root]
    while stack:  # iterative: these trees are deep by definition
        node = stack.pop()
        if node.type == "ERROR" or node.is_missing:
            spans.append((node.start_point[0], node.end_point[0]))
            continue
        if node.has_error:
            stack.extend(node.children)
    if not spans:
        return ""
    spans.sort()
    rows = {r for s, e in spans for r in range(s, min(e, len(lines) - 1) + 1)}
    lost = sorted(r for r in rows if r not in extracted_rows and _DEFINITION_LINE.match(lines[r]))
    if not lost:
        return ""
    where = ", ".join(f"{s + 1}-{e + 1}" for s, e in spans[:_MAX_ERROR_SPANS]) + (" ..." if len(spans) > _MAX_ERROR_SPANS else "")
    return (f"{len(lost)} definition(s) not extracted, first at line {lost[0] + 1}, last at line {lost[-1] + 1}: "
            f"tree-sitter could not parse lines {where} (a syntax error, or nesting deeper than its limit)")
