"""Function spans of one file in any parsed language, from one tree-sitter parse: the outer functions and methods
the learned localizer ranks, the history index attributes changes to and the dense function channel encodes.

Which node types define a function, a class or a namespace is the parser's own knowledge (the family specs in
`pipelines/parse/families/`); the ground floor cannot import the indexer, so the few names a span walk needs are
listed here per family, and a test holds them equal to the parser's. Nested functions fold into the outer function
that holds them (as in the SWE-bench gold and the parse stage's chunks); a method is `Class.method` (Go: the
receiver's type, Rust: the impl's type, TypeScript: `namespace.fn`).
"""

from __future__ import annotations

import ast
import inspect
import re
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from semantica.languages.registry import ROWS, language_of, language_row

COMMENTS = frozenset({"comment", "line_comment", "block_comment"})
IDENT = re.compile(r"[A-Za-z_$][\w$]*")
JS_FUNCTION_VALUES = frozenset({"arrow_function", "function_expression", "function", "generator_function"})
DECLARATION_SUFFIXES = (".pyi", ".d.ts")  # stubs and type declarations: signatures, no bodies
JS_DECLARATIONS = frozenset({"lexical_declaration", "variable_declaration"})
# C and C++: the nodes a function's declarator chain ends in (a plain, qualified, destructor or operator name)
C_NAME_DECLARATORS = frozenset({"identifier", "field_identifier", "qualified_identifier", "destructor_name",
                                "operator_name", "template_function", "template_method"})
# C and C++: blocks whose definitions are the file's own (header guards, `#if` branches, `extern "C" {}`,
# namespace bodies, and the ERROR node tree-sitter wraps around code behind a macro it cannot expand, such as
# `FMT_BEGIN_NAMESPACE`)
C_DESCEND = frozenset({"preproc_if", "preproc_ifdef", "preproc_else", "preproc_elif", "preproc_elifdef",
                       "linkage_specification", "declaration_list", "friend_declaration", "declaration",
                       "field_declaration", "ERROR"})
C_CLASSES = frozenset({"class_specifier", "struct_specifier", "union_specifier"})
# nodes that hold one definition and belong to its span: Python's decorators, C++'s `template <...>` line
WRAPPERS = frozenset({"decorated_definition", "template_declaration"})


def namespace_name(node: Any) -> str | None:
    """The name a namespace-like node puts before its definitions' names: a Rust impl's type (`Labeled<T>` ->
    Labeled), a TypeScript namespace, C++'s `a::b` -> `a.b`; "" for C++'s `namespace { ... }`; None when it names
    nothing usable."""
    is_impl = node.type == "impl_item"
    name = node.child_by_field_name("type" if is_impl else "name")
    if name is None:
        return None if is_impl else ""
    if node.type == "namespace_definition":
        return ".".join(m.group(0) for m in (IDENT.search(part) for part in _text(name).split("::")) if m)
    match = IDENT.search(_text(name))
    return match.group(0) if match is not None else None


def macro_namespace(definition: Any) -> tuple[str, Any] | None:
    """C++: a macro line before `namespace x {` (fmt's `FMT_BEGIN_NAMESPACE`) makes tree-sitter read a function
    named `namespace` whose body is the namespace's; (the namespace's name, its body) for such a node, else None."""
    declarator, body = definition.child_by_field_name("declarator"), definition.child_by_field_name("body")
    if declarator is None or body is None or _text(declarator) != "namespace":
        return None
    error = next((c for c in definition.named_children if c.type == "ERROR"), None)
    return ".".join(IDENT.findall(_text(error))), body


def class_name(definition: Any) -> Any:
    """The node naming a class: its `name`, or a C++ specialization's template name (`formatter<T>` -> formatter)."""
    name = definition.child_by_field_name("name")
    if name is not None and name.type == "template_type":
        name = name.child_by_field_name("name")
    return name


def wrapped_definition(wrapper: Any) -> Any:
    """The definition inside a `WRAPPERS` node (its `definition` field, or a template's last named child)."""
    inner = wrapper.child_by_field_name("definition")
    if inner is None and wrapper.type == "template_declaration" and wrapper.named_child_count:
        inner = wrapper.named_children[-1]
    return inner


@dataclass(frozen=True)
class SpanNodes:
    """A family's node types as the span walk reads them (the same names as its `LanguageSpec`)."""

    functions: frozenset[str]
    classes: frozenset[str]
    namespaces: frozenset[str] = frozenset()
    descend: frozenset[str] = frozenset()
    function_values: frozenset[str] = frozenset()  # `const f = () => ...` (JavaScript)
    receiver_methods: bool = False  # Go: a method names its type in a receiver
    leading_comments: bool = True  # doc comments above a definition belong to it (not Python: docstrings inside)
    docstrings: bool = False  # a leading string statement is the docstring (Python)
    whole_file: bool = False  # a file with a syntax error has no spans (Python, as the stdlib `ast` reads it)


_JS_FUNCTIONS = frozenset({"function_declaration", "generator_function_declaration", "method_definition"})
_JS_DESCEND = frozenset({"export_statement", "expression_statement", "ambient_declaration"})

SPAN_NODES: dict[str, SpanNodes] = {
    "python": SpanNodes(
        functions=frozenset({"function_definition"}), classes=frozenset({"class_definition"}),
        descend=frozenset({"if_statement", "elif_clause", "else_clause", "try_statement", "except_clause",
                           "except_group_clause", "finally_clause", "with_statement", "for_statement",
                           "while_statement", "block"}),
        leading_comments=False, docstrings=True, whole_file=True),
    "js": SpanNodes(functions=_JS_FUNCTIONS,
                    classes=frozenset({"class_declaration", "abstract_class_declaration", "interface_declaration"}),
                    namespaces=frozenset({"internal_module", "module"}), descend=_JS_DESCEND,
                    function_values=JS_FUNCTION_VALUES),
    "go": SpanNodes(functions=frozenset({"function_declaration", "method_declaration"}),
                    classes=frozenset({"type_spec"}), descend=frozenset({"type_declaration"}), receiver_methods=True),
    "java": SpanNodes(functions=frozenset({"method_declaration", "constructor_declaration"}),
                      classes=frozenset({"class_declaration", "interface_declaration", "enum_declaration",
                                         "record_declaration", "annotation_type_declaration"}),
                      descend=frozenset({"enum_body_declarations"})),
    "rust": SpanNodes(functions=frozenset({"function_item"}),
                      classes=frozenset({"struct_item", "enum_item", "trait_item", "union_item"}),
                      namespaces=frozenset({"impl_item", "mod_item"})),
    "c": SpanNodes(functions=frozenset({"function_definition"}), classes=C_CLASSES,
                   namespaces=frozenset({"namespace_definition"}), descend=C_DESCEND),
}


def source_lines(lines: Sequence[str], start: int, end: int) -> str:
    """Lines `start`..`end` (1-based, inclusive) of a file: a function's source as the commit pairs hold it and the
    dense channel encodes it (semantica/stores/localizer/dense.py `function_text`)."""
    return "\n".join(lines[start - 1: end])


@dataclass
class FunctionSpan:
    """One outer function or method (1-based inclusive lines) and its docstring lines, if any."""

    qualname: str
    start: int
    end: int
    docstring: str = ""
    doc_start: int = 0
    doc_end: int = 0

    def source(self, lines: list[str]) -> str:
        """The function's source, docstring included."""
        return source_lines(lines, self.start, self.end)

    def body(self, lines: list[str]) -> str:
        """The function's source with its docstring lines removed."""
        return "\n".join(line for n, line in enumerate(lines[self.start - 1: self.end], self.start)
                         if not self.doc_start <= n <= self.doc_end)


def span_nodes(language: str) -> tuple[str, SpanNodes] | None:
    """(grammar, node types) of a parsed language; None for one the parser does not read."""
    row = language_row(language)
    if row is None or not row.grammar or row.family not in SPAN_NODES:
        return None
    return row.grammar, SPAN_NODES[row.family]


def spans_language(path: str) -> bool:
    """Whether the file at `path` is of a language with function spans: the files the localizer ranks and the
    history reads. A declaration-only file (`DECLARATION_SUFFIXES`) is one of them, since fixes change type
    declarations too (`types.d.ts` beside the code), but it holds no function spans (`file_spans`)."""
    return span_nodes(language_of(path)) is not None


def is_declaration(path: str) -> bool:
    """A stub or type-declaration file (`.pyi`, `.d.ts`): signatures only, no bodies to change or rank."""
    return path.lower().endswith(DECLARATION_SUFFIXES)


def spans_key(path: str) -> str:
    """What a file's spans depend on besides its bytes: its language, and whether it is a declaration file."""
    return f"{language_of(path)}.d" if is_declaration(path) else language_of(path)


def span_suffixes() -> tuple[str, ...]:
    """File suffixes of every language with function spans (git pathspecs for the history reader)."""
    return tuple(sorted({s for name, row in ROWS.items() if span_nodes(name) is not None for s in row.suffixes}))


def strip_suffix(path: str) -> str:
    """`a/b/c.go` -> `a/b/c`: the path without its file's suffix (the localizer's path words and file stems)."""
    head, sep, name = path.rpartition("/")
    dot = name.rfind(".")
    return head + sep + (name[:dot] if dot > 0 else name)


_parsers_lock = threading.Lock()
_local = threading.local()


def _parser(grammar: str) -> Any:
    """A tree-sitter parser per grammar and thread (a parser is not shared between threads)."""
    cache = getattr(_local, "parsers", None)
    if cache is None:
        cache = _local.parsers = {}
    if grammar not in cache:
        from tree_sitter_language_pack import get_parser

        with _parsers_lock:
            cache[grammar] = get_parser(grammar)
    return cache[grammar]


def function_spans(text: str, language: str = "python") -> list[FunctionSpan]:
    """Outer functions and methods of one file of `language` (a language table name), in source order; [] for a
    language without spans. tree-sitter recovers from syntax errors: a broken file keeps the spans it still has,
    except in a `whole_file` family (Python: the spans the rankers were trained on come from `ast`, which reads
    none)."""
    found = span_nodes(language)
    if found is None:
        return []
    grammar, nodes = found
    tree = _parser(grammar).parse(text.encode("utf-8", "surrogatepass"))
    if nodes.whole_file and tree.root_node.has_error:
        return []
    walk = _SpanWalk(nodes)
    walk.visit(tree.root_node, "")
    return walk.spans


def file_spans(path: str, text: str) -> list[FunctionSpan]:
    """`function_spans` of the file at `path`, its language from the table; none in a declaration file."""
    return [] if is_declaration(path) else function_spans(text, language_of(path))


def _text(node: Any) -> str:
    return node.text.decode("utf-8", "replace") if node is not None else ""


def _code_end(node: Any) -> int:
    """Last row of `node` that holds code: comments at the end of a block (indented under a Python function)
    belong to no statement, as the stdlib `ast` has it."""
    while True:
        kids = [c for c in node.children if c.type not in COMMENTS]
        if not kids:
            return node.end_point[0]
        node = kids[-1]


class _SpanWalk:
    """One file's walk: definitions at module level, in classes, namespaces and the blocks `descend` names."""

    def __init__(self, nodes: SpanNodes) -> None:
        self.nodes = nodes
        self.spans: list[FunctionSpan] = []

    def visit(self, root: Any, root_prefix: str) -> None:
        stack = [(root, root_prefix)]  # iterative: a deep file must not exhaust Python's recursion limit
        while stack:
            node, prefix = stack.pop()
            pending = []
            for child in node.named_children:
                span, kind = child, child.type
                if kind in WRAPPERS:
                    inner = wrapped_definition(child)
                    if inner is None:
                        continue
                    child, kind = inner, inner.type
                hidden = macro_namespace(child) if kind in self.nodes.functions else None
                if hidden is not None:
                    name, body = hidden
                    pending.append((body, f"{prefix}{name}." if name else prefix))
                elif kind in self.nodes.functions:
                    self._function(child, span, prefix)
                elif kind in self.nodes.classes:
                    name, body = _text(class_name(child)), child.child_by_field_name("body")
                    if name and body is not None:
                        pending.append((body, f"{prefix}{name}."))
                elif kind in self.nodes.namespaces:
                    name, body = namespace_name(child), child.child_by_field_name("body")
                    if name is not None and body is not None:
                        pending.append((body, f"{prefix}{name}." if name else prefix))
                elif kind in JS_DECLARATIONS and self.nodes.function_values:
                    self._values(child, prefix)
                elif kind in self.nodes.descend:
                    pending.append((child, prefix))
            stack.extend(reversed(pending))
        self.spans.sort(key=lambda s: (s.start, s.end))

    def _start(self, node: Any) -> int:
        """0-based first row: decorators, and the doc comments right above where the family has them."""
        row = node.start_point[0]
        if not self.nodes.leading_comments:
            return row
        holder = node
        if holder.parent is not None and holder.parent.type == "export_statement":
            holder = holder.parent  # `/** doc */ export function f`
        prev = holder.prev_named_sibling
        while prev is not None and prev.type in COMMENTS and prev.end_point[0] >= row - 1:
            row = prev.start_point[0]
            prev = prev.prev_named_sibling
        return row

    def _add(self, qualname: str, span: Any, definition: Any) -> None:
        out = FunctionSpan(qualname, self._start(span) + 1, _code_end(span) + 1)
        if self.nodes.docstrings:
            _docstring(definition, out)
        self.spans.append(out)

    def _function(self, node: Any, span: Any, prefix: str) -> None:
        name = _text(node.child_by_field_name("name"))
        if not name:
            scope, name = declared_name(node)
            prefix += "".join(f"{part}." for part in scope)
        if not name:
            return
        if node.type == "method_declaration" and self.nodes.receiver_methods:
            receiver = IDENT.search(_text(node.child_by_field_name("receiver")).split(" ", 1)[-1].lstrip("(*"))
            if receiver is not None:
                prefix = f"{receiver.group(0)}."
        self._add(prefix + name, span, node)

    def _values(self, node: Any, prefix: str) -> None:
        declarators = [c for c in node.named_children if c.type == "variable_declarator"]
        for decl in declarators:
            value, name = decl.child_by_field_name("value"), decl.child_by_field_name("name")
            if value is None or value.type not in self.nodes.function_values or name is None \
                    or name.type != "identifier":
                continue
            self._add(prefix + _text(name), node if len(declarators) == 1 else decl, value)


def declared_name(definition: Any) -> tuple[list[str], str]:
    """C and C++: (scope, name) a `function_definition` declares through its declarator chain: `f`, `*f`, `&f`,
    `Foo<T>::grow` -> (["Foo"], "grow"), `~Foo`, `operator==`; ([], "") where it names nothing (a macro the grammar
    cannot expand)."""
    node = definition.child_by_field_name("declarator")
    while node is not None and node.type not in C_NAME_DECLARATORS:
        inner = node.child_by_field_name("declarator")
        if inner is None:  # `&f` and `&&f` hold their declarator as a plain child
            inner = next((c for c in node.named_children
                          if c.type.endswith("declarator") or c.type in C_NAME_DECLARATORS), None)
        node = inner
    scope: list[str] = []
    while node is not None and node.type == "qualified_identifier":
        match = IDENT.search(_text(node.child_by_field_name("scope")))  # `Foo<T>` -> Foo
        if match is not None:
            scope.append(match.group(0))
        node = node.child_by_field_name("name")
    if node is not None and node.type in ("template_function", "template_method"):
        node = node.child_by_field_name("name")
    return scope, " ".join(_text(node).split())


def _docstring(definition: Any, span: FunctionSpan) -> None:
    """A Python function's docstring (its text cleaned as `ast.get_docstring` does) and its lines."""
    body = definition.child_by_field_name("body")
    first = next((c for c in body.named_children if c.type not in COMMENTS), None) if body is not None else None
    if first is not None and first.type == "expression_statement" and first.named_child_count == 1:
        literal = first.named_children[0]
    else:
        literal = first  # the grammar puts a block's leading string in the block itself
    if literal is None or literal.type not in ("string", "concatenated_string"):
        return
    try:
        value = ast.literal_eval(_text(literal))  # a string literal only: never code
    except (SyntaxError, ValueError):
        return
    if isinstance(value, str) and value:
        span.docstring = inspect.cleandoc(value)
        span.doc_start, span.doc_end = first.start_point[0] + 1, first.end_point[0] + 1
