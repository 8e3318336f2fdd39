"""Go, Rust and C++ imports resolved to files through the real indexer, and a toy language (one table row plus
one family module) registered on a real index."""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import Any

import pytest

from pipelines.indexer import Indexer
from pipelines.parse import GraphResolver, ParsedFile
from pipelines.parse.facts import RawImport
from pipelines.parse.families import Family, register_family, unregister_family
from pipelines.parse.languages import LanguageSpec
from pipelines.parse.nodes import node_text
from semantica.config import Config
from semantica.languages import Language, language_of, register_language, unregister_language
from semantica.layout import IndexLayout
from semantica.schema import EdgeType, file_node_id
from tests.conftest import make_config
from tests.dated_git import one_commit_repo

pytestmark = pytest.mark.timeout(600)

GO_FILES = {
    "go.mod": "module example.com/shop\n\ngo 1.22\n",
    "main.go": 'package main\n\nimport (\n\t"fmt"\n\tc "example.com/shop/internal/cart"\n)\n\n'
               'func main() {\n\tfmt.Println(c.Total(c.New()))\n}\n',
    "internal/cart/cart.go": "package cart\n\n// Cart holds items.\ntype Cart struct{ Items []int }\n\n"
                             "func New() *Cart { return &Cart{} }\n",
    "internal/cart/total.go": 'package cart\n\nimport "example.com/shop/internal/money"\n\n'
                              "func Total(c *Cart) int { return money.Sum(c.Items) }\n",
    "internal/cart/cart_test.go": 'package cart\n\nimport "testing"\n\nfunc TestNew(t *testing.T) { New() }\n',
    "internal/money/money.go": "package money\n\nfunc Sum(xs []int) int {\n\ts := 0\n\tfor _, x := range xs "
                               "{\n\t\ts += x\n\t}\n\treturn s\n}\n",
}
RUST_FILES = {
    "Cargo.toml": '[package]\nname = "shop"\nversion = "0.1.0"\nedition = "2021"\n',
    "src/lib.rs": "pub mod cart;\npub mod util;\n\npub fn version() -> u32 { 1 }\n",
    "src/cart.rs": "use crate::util::money::{sum, Money as M};\nuse super::version;\nuse std::fmt;\n\n"
                   "pub struct Cart { pub items: Vec<M> }\n\npub fn total(c: &Cart) -> u64 { sum(&c.items) + "
                   "version() as u64 }\n",
    "src/util/mod.rs": "pub mod money;\nmod helpers;\n",
    "src/util/money.rs": "use super::helpers::round;\nuse self::inner::Cents;\n\npub mod inner;\n\n"
                         "pub struct Money(pub u64);\n\npub fn sum(xs: &[Money]) -> u64 { round(xs.iter().map(|m| m.0).sum()) }\n",
    "src/util/money/inner.rs": "pub type Cents = u64;\n",
    "src/util/helpers.rs": "pub fn round(x: u64) -> u64 { x }\n",
}
CPP_FILES = {
    "include/shop/cart.h": "#ifndef SHOP_CART_H\n#define SHOP_CART_H\n#include <vector>\n#include \"money.h\"\n\n"
                           "namespace shop {\n/** A cart of items. */\nclass Cart {\n public:\n"
                           "  int size() const { return static_cast<int>(items_.size()); }\n  int total() const;\n\n"
                           " private:\n  std::vector<Money> items_;\n};\n}  // namespace shop\n#endif\n",
    "include/shop/money.h": "#pragma once\nnamespace shop {\nstruct Money { int cents; };\n"
                            "template <typename T>\nT sum(const T* xs, int n) { T s{}; return s; }\n}\n",
    "src/cart.cpp": "#include <shop/cart.h>\n#include \"detail.h\"\n\nnamespace shop {\nnamespace {\n"
                    "int cents(const Money& m) { return m.cents; }\n}  // namespace\n\n"
                    "int Cart::total() const {\n  int t = 0;\n  for (const auto& m : items_) t += cents(m);\n"
                    "  return detail::round(t);\n}\n}  // namespace shop\n",
    "src/detail.h": "namespace shop::detail {\ninline int round(int x) { return x; }\n}\n",
    "src/util.c": "#include \"detail.h\"\nstatic int *first(int *xs) { return xs; }\n",
}


def _repo(root: Path, files: dict[str, str]) -> Path:
    return one_commit_repo(root / "repo", files)


def _index(root: Path, files: dict[str, str], name: str) -> Any:
    config: Config = make_config(root)
    Indexer(config, progress=False).index(str(_repo(root, files)), name)
    from semantica.snapshot import Snapshot

    return Snapshot.open(IndexLayout(config.paths.index_root).current(name), config)


def _imports(snapshot: Any, path: str) -> dict[str, set[str]]:
    """Resolved import targets (paths) and unresolved names of one file, from the snapshot's edges."""
    found: dict[str, set[str]] = {"resolved": set(), "unresolved": set()}
    for e in snapshot.edges:
        if e.type == EdgeType.IMPORTS.value and e.src == file_node_id(path):
            if e.resolved:
                found["resolved"].add(e.dst.removeprefix("file:"))
            else:
                found["unresolved"].add(e.dst)
    return found


def test_go_imports_resolve_to_the_package_files_under_the_module_path(tmp_path):
    snapshot = _index(tmp_path, GO_FILES, "families/go")
    main = _imports(snapshot, "main.go")
    assert main["resolved"] == {"internal/cart/cart.go", "internal/cart/total.go"}  # not cart_test.go
    assert main["unresolved"] == {"name:fmt"}
    assert _imports(snapshot, "internal/cart/total.go")["resolved"] == {"internal/money/money.go"}
    lines = {e.line for e in snapshot.edges if e.type == EdgeType.IMPORTS.value and e.path == "main.go"}
    assert lines == {4, 5}  # each spec of an import block has its own line


def test_rust_use_and_mod_resolve_to_module_files(tmp_path):
    snapshot = _index(tmp_path, RUST_FILES, "families/rust")
    assert _imports(snapshot, "src/lib.rs")["resolved"] == {"src/cart.rs", "src/util/mod.rs"}
    cart = _imports(snapshot, "src/cart.rs")
    assert cart["resolved"] == {"src/util/money.rs", "src/lib.rs"}  # crate::util::money::{..}, super::version
    assert cart["unresolved"] == {"name:std::fmt"}
    assert _imports(snapshot, "src/util/mod.rs")["resolved"] == {"src/util/money.rs", "src/util/helpers.rs"}
    assert _imports(snapshot, "src/util/money.rs")["resolved"] == {"src/util/helpers.rs",
                                                                   "src/util/money/inner.rs"}


def test_cpp_definitions_are_symbols_and_includes_resolve_to_the_repositorys_headers(tmp_path):
    snapshot = _index(tmp_path, CPP_FILES, "families/cpp")
    symbols = {(s.path, s.qualname, s.kind, s.language) for s in snapshot.symbols}
    assert {("include/shop/cart.h", "shop.Cart", "class", "cpp"),
            ("include/shop/cart.h", "shop.Cart.size", "method", "cpp"),
            ("include/shop/money.h", "shop.sum", "function", "cpp"),
            ("src/cart.cpp", "shop.cents", "function", "cpp"),  # an anonymous namespace adds no name
            ("src/cart.cpp", "shop.Cart.total", "method", "cpp"),  # defined out of its class
            ("src/detail.h", "shop.detail.round", "function", "cpp"),
            ("src/util.c", "first", "function", "c")} <= symbols
    cart = next(s for s in snapshot.symbols if s.qualname == "shop.Cart")
    assert cart.start_line == 7  # its doc comment belongs to it
    assert _imports(snapshot, "include/shop/cart.h") == {"resolved": {"include/shop/money.h"},
                                                         "unresolved": {"name:vector"}}
    assert _imports(snapshot, "src/cart.cpp")["resolved"] == {"include/shop/cart.h", "src/detail.h"}
    assert _imports(snapshot, "src/util.c")["resolved"] == {"src/detail.h"}
    calls = {(e.src, e.dst) for e in snapshot.edges if e.type == EdgeType.CALLS.value and e.resolved}
    assert {("src/cart.cpp::shop.Cart.total", "src/cart.cpp::shop.cents"),
            ("src/cart.cpp::shop.Cart.total", "src/detail.h::shop.detail.round")} <= calls


JAVA_MODULES = 40  # a Spring-like tree: spring-<module>/src/{main,test}/java/org/acme/<module>/<package>/<Class>.java
JAVA_PACKAGES = 10
JAVA_CLASSES = 10
JAVA_IMPORTS = 8  # per file, each naming a class of another module
JAVA_RESOLVE_BUDGET_S = 5.0  # a lookup per import resolves the tree in well under a second; a scan per import ~ a minute


def _java_tree() -> list[ParsedFile]:
    """Java files as the parser leaves them (imports extracted, resolution pending), over many source roots.
    `Names.java` sits in one package of two modules, so its import names two files and stays unresolved."""
    files: list[ParsedFile] = []
    classes = [(m, p, c) for m in range(JAVA_MODULES) for p in range(JAVA_PACKAGES) for c in range(JAVA_CLASSES)]
    for number, (m, p, c) in enumerate(classes):
        root = f"spring-m{m}/src/{'test' if c == 0 else 'main'}/java"
        imports = [RawImport(f"org.acme.m{om}.p{op}.C{om}x{op}x{oc}", "", "", line + 1)
                   for line, (om, op, oc) in enumerate(classes[(number + 97 * k) % len(classes)]
                                                       for k in range(1, JAVA_IMPORTS + 1))]
        files.append(ParsedFile("families/java", f"{root}/org/acme/m{m}/p{p}/C{m}x{p}x{c}.java", "java", f"{number:040x}",
                                imports=[*imports, RawImport("org.acme.shared.Names", "", "", 0)]))
    for m in (0, 1):
        files.append(ParsedFile("families/java", f"spring-m{m}/src/main/java/org/acme/shared/Names.java", "java",
                                f"{m:040x}"))
    return files


def test_java_imports_resolve_by_tail_across_source_roots_in_time_linear_in_the_imports():
    parsed = _java_tree()
    start = time.perf_counter()
    edges = GraphResolver().resolve(parsed)
    seconds = time.perf_counter() - start
    imports = [e for e in edges if e.type == EdgeType.IMPORTS.value]
    first = file_node_id("spring-m0/src/test/java/org/acme/m0/p0/C0x0x0.java")
    targets = [(0, 9, 7), (1, 9, 4), (2, 9, 1), (3, 8, 8), (4, 8, 5), (5, 8, 2), (6, 7, 9), (7, 7, 6)]
    assert {e.dst for e in imports if e.src == first and e.resolved} == {  # classes 97, 194, ... of the tree
        file_node_id(f"spring-m{m}/src/main/java/org/acme/m{m}/p{p}/C{m}x{p}x{c}.java") for m, p, c in targets}
    resolved = [e for e in imports if e.resolved]
    assert len(resolved) == len(parsed[:-2]) * JAVA_IMPORTS  # every class import names exactly one file
    assert {e.dst for e in imports if not e.resolved} == {"name:org.acme.shared.Names"}  # two files: ambiguous
    assert seconds < JAVA_RESOLVE_BUDGET_S, f"resolving {len(imports)} imports took {seconds:.1f} s"


# -- a toy language: Starlark (Bazel's .bzl files), one row + one family module --

_LOAD = re.compile(r"^load\(\s*\"([^\"]+)\"")


def _starlark_imports(node: Any, line: int) -> list[RawImport]:
    """`load("//pkg:defs.bzl", "sym")` at the top level is Starlark's import."""
    match = _LOAD.match(node_text(node))
    return [RawImport(match.group(1), "", "", line)] if match else []


def _starlark_resolve(repo: Any, path: str, imp: RawImport) -> list[str]:
    """`//pkg:defs.bzl` -> pkg/defs.bzl; `:defs.bzl` -> beside the loading file."""
    package, _, name = imp.module.partition(":")
    directory = package.removeprefix("//") if package.startswith("//") else path.rpartition("/")[0]
    target = f"{directory}/{name}" if directory else name
    return [target] if target in repo.paths else []


STARLARK = Family("starlark", LanguageSpec(
    family="starlark", functions=frozenset({"function_definition"}), classes=frozenset(),
    imports=frozenset({"call"}), call_query="(call) @call"), _starlark_imports, _starlark_resolve)
STARLARK_ROW = Language("starlark", (".bzl",), grammar="python", family="starlark")


@pytest.fixture
def starlark():
    register_language(STARLARK_ROW)
    register_family(STARLARK)
    yield
    unregister_family("starlark")
    unregister_language("starlark")


def test_a_toy_language_is_one_row_and_one_family_module(tmp_path, starlark):
    files = {"rules/defs.bzl": 'def shop_binary(name, srcs):\n    """Build a shop binary."""\n'
                               '    native.genrule(name = name, srcs = srcs)\n',
             "app/build.bzl": 'load("//rules:defs.bzl", "shop_binary")\n\n\ndef app():\n    shop_binary("app", [])\n'}
    assert language_of("app/build.bzl") == "starlark"
    snapshot = _index(tmp_path, files, "families/starlark")
    symbols = {(s.path, s.name, s.language) for s in snapshot.symbols}
    assert {("rules/defs.bzl", "shop_binary", "starlark"), ("app/build.bzl", "app", "starlark")} <= symbols
    assert _imports(snapshot, "app/build.bzl")["resolved"] == {"rules/defs.bzl"}
    calls = {(e.src, e.dst) for e in snapshot.edges if e.type == EdgeType.CALLS.value and e.resolved}
    assert ("app/build.bzl::app", "rules/defs.bzl::shop_binary") in calls
