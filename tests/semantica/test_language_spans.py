"""Function spans for every parsed language (semantica.languages.spans): the walk's node types are the parser's own
(the family specs), Python's spans are the stdlib `ast`'s (this repository's files, the rankers' training spans),
and Go, TypeScript, JavaScript, Java, Rust, C and C++ files give their functions and methods with qualified names."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from pipelines.parse.families import FAMILIES
from semantica.languages import parsed_languages
from semantica.languages.spans import SPAN_NODES, file_spans, function_spans, span_suffixes, spans_language
from tests.conftest import MIRRORS

REPO = Path(__file__).resolve().parents[2]

GO = '''package flag

// Parse parses the command line.
func Parse(args []string) error {
	return nil
}

type FlagSet struct {
	name string
}

// Lookup finds a flag.
func (f *FlagSet) Lookup(name string) *Flag {
	inner := func() int { return 1 }
	_ = inner
	return nil
}
'''
TS = '''/** Merges two option objects. */
export function mergeOptions(a: Options, b: Options): Options {
  return {...a, ...b};
}

export const retryDelay = (attempt: number): number => 0.3 * 2 ** attempt;

export class Ky {
  fetch(input: string) {
    return input;
  }
}

namespace util {
  export function noop() {}
}
'''
JAVA = '''package com.acme;

public class Cls {
    /** Builds one. */
    public Cls() {}

    public int method(int x) {
        return x;
    }
}
'''
RUST = '''/// Adds two numbers.
pub fn add(a: i32, b: i32) -> i32 {
    a + b
}

struct Point { x: i32 }

impl Point {
    fn norm(&self) -> i32 {
        self.x
    }
}

mod inner {
    fn helper() {}
}
'''


def _ast_spans(text: str) -> list[tuple[str, int, int, str, int, int]]:
    """The stdlib `ast` reading of a module's outer functions (the localizer's spans before tree-sitter)."""
    out = []

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.ClassDef):
                visit(child, f"{prefix}{child.name}.")
            elif isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                start = min([d.lineno for d in child.decorator_list] + [child.lineno])
                doc = ast.get_docstring(child) or ""
                first = child.body[0]
                lines = (first.lineno, first.end_lineno) if doc and isinstance(first, ast.Expr) else (0, 0)
                out.append((f"{prefix}{child.name}", start, child.end_lineno, doc, *lines))
            elif not isinstance(child, ast.Lambda):
                visit(child, prefix)

    visit(ast.parse(text), "")
    return sorted(out, key=lambda s: (s[1], s[2]))


def test_the_walk_reads_the_parsers_node_types():
    """One walk per family reads the union of its grammars' node types (a JavaScript file has no namespaces)."""
    for name, row in parsed_languages().items():
        family = FAMILIES[row.family]
        specs = [family.spec, *family.grammar_specs.values()]
        nodes = SPAN_NODES[row.family]
        assert nodes.functions == family.spec_for(row.grammar).functions, name
        assert nodes.descend == family.spec_for(row.grammar).descend, name
        assert nodes.namespaces == frozenset().union(*(s.namespaces for s in specs)), name
        assert nodes.classes <= frozenset().union(*(s.classes for s in specs)), name
        assert nodes.function_values == family.spec_for(row.grammar).function_values, name
        assert nodes.receiver_methods == family.spec_for(row.grammar).receiver_methods, name


def test_python_spans_are_the_stdlib_ast_spans_on_this_repository():
    files = sorted(p for package in ("semantica", "pipelines", "serving", "jobs") for p in (REPO / package).rglob("*.py"))
    assert len(files) > 200
    compared = 0
    for path in files:
        text = path.read_text(encoding="utf-8")
        got = [(s.qualname, s.start, s.end, s.docstring, s.doc_start, s.doc_end) for s in function_spans(text)]
        assert got == _ast_spans(text), path
        compared += len(got)
    assert compared > 2000


def test_python_trailing_comments_and_decorators_as_ast_has_them():
    text = "@cache\nasync def f(x):\n    '''Doc.\n\n    More.'''\n    return x\n    # trailing note\n\n\nclass A:\n" \
           "    if True:\n        def m(self):\n            def inner():\n                pass\n"
    spans = function_spans(text)
    assert [(s.qualname, s.start, s.end) for s in spans] == [("f", 1, 6), ("A.m", 12, 14)]
    assert (spans[0].docstring, spans[0].doc_start, spans[0].doc_end) == ("Doc.\n\nMore.", 3, 5)


CPP = '''#ifndef FMT_FORMAT_H_
#define FMT_FORMAT_H_
#include "base.h"
FMT_BEGIN_NAMESPACE
namespace detail {
/** Counts. */
template <typename T>
inline auto count(T x) -> int {
  return 1; }
}  // namespace detail
class buffer {
 public:
  void push_back(int v) { grow(v); }
  template <typename U> U get() const { return U(); }
  ~buffer() {}
  friend bool operator==(const buffer& a, const buffer& b) { return true; }
};
template <typename T> void basic_memory_buffer<T>::grow(size_t size) {}
template <> struct formatter<buffer> {
  auto format(const buffer& b) const -> int { return 0; }
};
FMT_END_NAMESPACE
namespace {
int hidden() { return 0; }
}
const char* ptr() { return ""; }
extern "C" { int cfun(void) { return 0; } }
#endif
'''


@pytest.mark.parametrize(("path", "text", "expected"), [
    ("flag/flag.go", GO, [("Parse", 3, 6), ("FlagSet.Lookup", 12, 17)]),
    ("source/index.ts", TS, [("mergeOptions", 1, 4), ("retryDelay", 6, 6), ("Ky.fetch", 9, 11), ("util.noop", 15, 15)]),
    ("source/index.js", "function a() {\n  return 1;\n}\nconst b = function () {};\n", [("a", 1, 3), ("b", 4, 4)]),
    ("src/main/java/com/acme/Cls.java", JAVA, [("Cls.Cls", 4, 5), ("Cls.method", 7, 9)]),
    ("src/lib.rs", RUST, [("add", 1, 4), ("Point.norm", 9, 11), ("inner.helper", 15, 15)]),
    ("include/fmt/format.h", CPP, [("detail.count", 6, 9), ("buffer.push_back", 13, 13), ("buffer.get", 14, 14),
                                   ("buffer.~buffer", 15, 15), ("buffer.operator==", 16, 16),
                                   ("basic_memory_buffer.grow", 18, 18), ("formatter.format", 20, 20),
                                   ("hidden", 24, 24), ("ptr", 26, 26), ("cfun", 27, 27)]),
    ("src/os.c", "static int *first(int *xs) {\n  return xs;\n}\n", [("first", 1, 3)]),
])
def test_every_parsed_language_gives_its_functions(path, text, expected):
    assert spans_language(path)
    assert [(s.qualname, s.start, s.end) for s in file_spans(path, text)] == expected


def test_files_without_spans():
    assert file_spans("README.md", "# x\n") == [] and not spans_language("README.md")
    # declarations are the localizer's and history's files (a fix may change them), with no function spans
    assert spans_language("types/index.d.ts") and spans_language("pkg/stub.pyi")
    assert file_spans("pkg/stub.pyi", "def f(x: int) -> int: ...\n") == []
    assert function_spans("def f(x: int) -> int: ...\n", "python") != []
    assert {".go", ".java", ".js", ".py", ".pyi", ".rs", ".ts", ".tsx"} <= set(span_suffixes())
    assert function_spans("func broken( {\n", "go") == []  # a broken file parses without raising


FMT = MIRRORS / "fmtlib+fmt" / "repo"


def _show(mirror: Path, commit: str, path: str) -> str:
    import subprocess

    return subprocess.run(["git", "--git-dir", str(mirror), "show", f"{commit}:{path}"], capture_output=True,
                          text=True, check=True).stdout


def test_cpp_spans_cover_the_function_definitions_of_a_real_library():
    """fmt's headers hide their namespaces behind macros (`FMT_BEGIN_NAMESPACE`), which tree-sitter reads as ERROR
    nodes or as a function named `namespace`; the walk still finds nearly every function with a body (the rest sit
    behind a macro before their return type, which the grammar reads as something else)."""
    import subprocess

    from tree_sitter_language_pack import get_parser

    from semantica.languages.spans import macro_namespace

    if not FMT.exists():
        pytest.skip(f"SKIPPED LOUDLY: no fmtlib/fmt mirror at {FMT} (set SEMANTICA_MIRRORS to a folder holding one)")
    tree = "fcd3e1e19c8d2df94bb6cb40d7f1c97a9872cf2b"  # 2024-05-31
    listing = subprocess.run(["git", "--git-dir", str(FMT), "ls-tree", "-r", "--name-only", tree, "include", "src"],
                             capture_output=True, text=True)
    if listing.returncode != 0:
        pytest.skip(f"SKIPPED LOUDLY: the fmt mirror at {FMT} lacks commit {tree}")
    definitions = found = 0
    for path in [p for p in listing.stdout.split() if p.endswith((".h", ".cc"))]:
        text = _show(FMT, tree, path)
        spans = file_spans(path, text)
        assert not [s for s in spans if s.qualname.endswith("namespace")], path
        ends = {s.end for s in spans}
        stack = [get_parser("cpp").parse(text.encode()).root_node]
        while stack:
            node = stack.pop()
            if node.type == "function_definition" and macro_namespace(node) is None \
                    and node.child_by_field_name("body") is not None:
                definitions += 1
                found += node.end_point[0] + 1 in ends
            else:
                stack.extend(node.named_children)
    assert definitions > 1000
    assert found >= 0.95 * definitions  # 96.8% here
