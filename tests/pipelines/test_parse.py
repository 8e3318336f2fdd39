"""Chunking, symbols and graph edges from real source: this repo, small fixtures, psf/requests."""

from __future__ import annotations

import pickle
import textwrap
from pathlib import Path

import pytest

from pipelines.discover import RepoSource
from pipelines.parse import FileParser, GraphResolver, ParsedFile
from pipelines.source_files import SourceFile, git_blob_sha
from semantica.config import ChunkConfig, DiscoverConfig
from semantica.languages import language_of
from semantica.schema import Edge, EdgeType
from semantica.stores.tokenizer import count_tokens

REPO_ROOT = Path(__file__).resolve().parents[2]
REQUESTS_MIRROR = Path("/work/.mirror/psf+requests/repo")
REQUESTS_COMMIT = "a0df2cbb10419037d11d04352b3175405ab52941"
REPO = "test/repo"


def source(path: str, text: str) -> SourceFile:
    text = textwrap.dedent(text).lstrip("\n")
    return SourceFile(path=path, blob_sha=git_blob_sha(text.encode()), language=language_of(path), text=text)


def parse_all(files: dict[str, str], config: ChunkConfig | None = None) -> tuple[list[ParsedFile], list[Edge]]:
    parser = FileParser(config or ChunkConfig())
    parsed = [parser.parse(REPO, source(path, text)) for path, text in files.items()]
    return parsed, GraphResolver().resolve(parsed)


def resolved(edges: list[Edge], etype: EdgeType) -> set[tuple[str, str]]:
    return {(e.src, e.dst) for e in edges if e.type == etype.value and e.resolved}


def symbol_ids(parsed: list[ParsedFile]) -> set[str]:
    return {s.symbol_id for pf in parsed for s in pf.symbols}


def own_file(relative: str) -> SourceFile:
    path = REPO_ROOT / relative
    data = path.read_bytes()
    return SourceFile(path=relative, blob_sha=git_blob_sha(data), language="python", text=data.decode())


# -- this repository's own code ---------------------------------------------------------------


def test_own_config_and_schema() -> None:
    parser = FileParser(ChunkConfig())
    parsed = [parser.parse(REPO, own_file("semantica/config/loader.py")), parser.parse(REPO, own_file("semantica/schema.py")),
              parser.parse(REPO, own_file("semantica/config/index.py"))]
    ids = symbol_ids(parsed)
    assert {"semantica/config/loader.py::load_config", "semantica/schema.py::Chunk.build",
            "semantica/schema.py::Chunk", "semantica/config/index.py::ChunkConfig"} <= ids
    edges = GraphResolver().resolve(parsed)
    calls = resolved(edges, EdgeType.CALLS)
    assert ("semantica/config/loader.py::load_config", "semantica/config/loader.py::load_sections") in calls
    assert ("semantica/config/loader.py::load_sections", "semantica/config/loader.py::_build") in calls
    assert ("semantica/config/loader.py::_build", "semantica/config/loader.py::_coerce") in calls
    contains = resolved(edges, EdgeType.CONTAINS)
    assert ("semantica/schema.py::Chunk", "semantica/schema.py::Chunk.build") in contains
    assert ("file:semantica/config/loader.py", "semantica/config/loader.py::load_config") in contains
    schema = parsed[1]
    build = next(s for s in schema.symbols if s.qualname == "Chunk.build")
    assert build.kind == "method" and build.module == "semantica.schema" and build.parent == "semantica/schema.py::Chunk"
    chunk = next(c for c in schema.chunks if c.chunk_id == build.chunk_id)
    assert chunk.kind == "method" and "def build(" in chunk.content and chunk.symbol == "Chunk.build"
    header = next(c for c in schema.chunks if c.kind == "class" and c.symbol == "Chunk")
    assert "class Chunk(_Row):" in header.content and "def build" not in header.content
    assert "chunk_id: str" in header.content  # attributes up to the first method
    module_chunks = [c for c in schema.chunks if c.kind == "module"]
    assert module_chunks and "import hashlib" in module_chunks[0].content
    assert all(c.symbol == "" for c in module_chunks)


def test_chunks_lines_match_content_and_are_stable() -> None:
    parser = FileParser(ChunkConfig())
    file = own_file("semantica/config/loader.py")
    first, second = parser.parse(REPO, file), parser.parse(REPO, file)
    assert [c.chunk_id for c in first.chunks] == [c.chunk_id for c in second.chunks]
    lines = file.text.split("\n")
    for chunk in first.chunks:
        assert 1 <= chunk.start_line <= chunk.end_line <= len(lines)
        assert chunk.content == "\n".join(lines[chunk.start_line - 1 : chunk.end_line])
    restored = pickle.loads(pickle.dumps((parser, first)))
    assert restored[1] == first


# -- python resolution across files -----------------------------------------------------------

PY_FILES = {
    "pkg/__init__.py": """
        from .base import Base
        """,
    "pkg/util.py": """
        def tool():
            return 1
        """,
    "pkg/base.py": '''
        class Base:
            """A base."""

            kind = "base"

            def run(self):
                return self.step()

            def step(self):
                return 1

            @classmethod
            def make(cls):
                return cls.build()

            @classmethod
            def build(cls):
                return cls()
        ''',
    "pkg/child.py": """
        from .base import Base
        from . import util
        import pkg.util as u2
        from pkg import Base as Reexported


        class Child(Reexported):
            def step(self):
                helper()
                util.tool()
                u2.tool()
                return super().step()

            def go(self):
                return self.run()

            def again(self):
                return Child.make()


        class Grandchild(Child):
            def step(self):
                return super().step() + self.unknown()


        def helper():
            def inner():
                return tool_like()
            return inner()
        """,
}


def test_python_resolution() -> None:
    parsed, edges = parse_all(PY_FILES)
    calls = resolved(edges, EdgeType.CALLS)
    base, child = "pkg/base.py::", "pkg/child.py::"
    assert (base + "Base.run", base + "Base.step") in calls  # self.
    assert (base + "Base.make", base + "Base.build") in calls  # cls.
    assert (child + "Child.step", base + "Base.step") in calls  # super()
    assert (child + "Grandchild.step", child + "Child.step") in calls  # super() one level up
    assert (child + "Child.go", base + "Base.run") in calls  # inherited via self.
    assert (child + "Child.again", base + "Base.make") in calls  # Class.method, inherited
    assert (child + "Child.step", child + "helper") in calls  # same module
    assert (child + "Child.step", "pkg/util.py::tool") in calls  # from . import util; util.tool()
    inherits = resolved(edges, EdgeType.INHERITS)
    assert (child + "Child", base + "Base") in inherits  # through the package's re-export
    assert (child + "Grandchild", child + "Child") in inherits
    imports = resolved(edges, EdgeType.IMPORTS)
    assert {("file:pkg/child.py", "file:pkg/base.py"), ("file:pkg/child.py", "file:pkg/util.py"),
            ("file:pkg/child.py", "file:pkg/__init__.py"), ("file:pkg/__init__.py", "file:pkg/base.py")} <= imports
    unresolved = {(e.src, e.dst) for e in edges if not e.resolved}
    assert (child + "Grandchild.step", "name:unknown") in unresolved
    assert all(not e.dst.startswith("name:") for e in edges if e.resolved)
    # Nested functions are folded into their outer function, not symbols of their own.
    ids = symbol_ids(parsed)
    assert child + "helper" in ids and not any("inner" in s for s in ids)
    helper_chunk = next(c for pf in parsed for c in pf.chunks if c.symbol == "helper")
    assert "def inner" in helper_chunk.content
    header = next(c for pf in parsed for c in pf.chunks if c.symbol == "Base" and c.kind == "class")
    assert '"""A base."""' in header.content and 'kind = "base"' in header.content and "def run" not in header.content


def test_python_edges_say_how_they_were_resolved_and_are_deterministic() -> None:
    parsed, edges = parse_all(PY_FILES)
    how = {(e.src, e.dst): e.resolution for e in edges if e.type == EdgeType.CALLS.value}
    base, child = "pkg/base.py::", "pkg/child.py::"
    assert how[(base + "Base.run", base + "Base.step")] == "self"
    assert how[(child + "Child.go", base + "Base.run")] == "inheritance"  # self.run() found on the base
    assert how[(child + "Child.step", base + "Base.step")] == "inheritance"  # super()
    assert how[(child + "Child.step", child + "helper")] == "local"
    assert how[(child + "Child.step", "pkg/util.py::tool")] == "import"
    assert how[(child + "Grandchild.step", "name:unknown")] == "unresolved"
    assert {e.resolution for e in edges if e.type == EdgeType.CONTAINS.value} == {"syntax"}
    # nested calls start at the same byte; the facts (and the line kept per edge) must not depend on luck
    again = parse_all(PY_FILES)[1]
    assert [(e.src, e.dst, e.line) for e in again] == [(e.src, e.dst, e.line) for e in edges]


def test_python_receivers_typed_by_light_inference() -> None:
    _, edges = parse_all({
        "lib/auth.py": """
            class Digest:
                def build(self):
                    return 1

                def fluent(self):
                    return self

                def twice(self):
                    return self.fluent().build()


            def make() -> "Digest":
                return Digest()


            DEFAULT: Digest = Digest()
            """,
        "lib/client.py": """
            from typing import Optional

            from lib import auth
            from lib.auth import DEFAULT, Digest, make


            class Client:
                store: Digest

                def __init__(self, digest: Optional[Digest] = None, held: Digest = None):
                    self.digest = auth.Digest()
                    self.held = held

                def from_param(self):
                    return self.held.build()

                def local(self):
                    d = Digest()
                    return d.build()

                def param(self, d: "Digest | None"):
                    return d.build()

                def attr(self):
                    return self.digest.build() + self.store.build()

                def returned(self):
                    x = make()
                    return x.build() + Digest().build()

                def unknown(self, d):
                    return d.build()

                def chain(self) -> "Client":
                    return self

                def chained(self):
                    c = Client()
                    return c.chain().local()

                @property
                def current(self) -> Digest:
                    return self.digest

                def through_property(self):
                    return self.current.build()

                def through_global(self):
                    return DEFAULT.build() + auth.DEFAULT.build()

                def branches(self, flag, d: Digest):
                    e = Digest() if flag else None
                    f = d.fluent()
                    return e.build() + f.build()
            """,
    })
    how = {(e.src, e.dst): e.resolution for e in edges if e.type == EdgeType.CALLS.value}
    build, c = "lib/auth.py::Digest.build", "lib/client.py::Client."
    for method in ("local", "param", "attr", "returned", "from_param", "branches", "through_property", "through_global"):
        assert how[(c + method, build)] == "type", method
    assert how[("lib/auth.py::Digest.twice", build)] == "type"  # `return self`: fluent() gives a Digest
    assert (c + "unknown", "name:build") in how  # no annotation, no assignment: stays a name
    assert how[(c + "chained", c + "local")] == "type"  # c.chain() returns Client (annotation), then .local()
    assert how[(c + "__init__", "lib/auth.py::Digest")] == "import"  # auth.Digest(): module attribute, no __init__


def test_unparsed_regions_are_reported_not_silent() -> None:
    from pipelines.parse import parse_problems

    deep = "".join(" " * i + f"class C{i}:\n" for i in range(1201)) + " " * 1201 + "pass\n"
    parsed, _ = parse_all({"deep.py": deep, "ok.py": "def ok():\n    return 1\n",
                           "broken.py": "def ok():\n    return 1\n\ndef broken(:\n    pass\n"})
    by_path = {pf.path: pf for pf in parsed}
    kept = len(by_path["deep.py"].symbols)
    assert 0 < kept < 1201 and f"{1201 - kept} definition(s) not extracted" in by_path["deep.py"].lost
    assert by_path["ok.py"].lost == "" and by_path["broken.py"].lost == ""  # recovered: every def is a symbol
    problems = parse_problems(parsed)
    assert [(p.path, p.stage) for p in problems] == [("deep.py", "parse")]


def test_other_languages_resolve_by_name_and_say_so() -> None:
    _, edges = parse_all({
        "a/one.go": "package a\nfunc Solo() {}\nfunc Dup() {}\n",
        "b/two.go": "package b\nfunc Dup() {}\nfunc Use() { Solo(); Dup() }\n",
    })
    how = {(e.src, e.dst): e.resolution for e in edges if e.type == EdgeType.CALLS.value}
    assert how[("b/two.go::Use", "a/one.go::Solo")] == "unique"  # the only Solo in the repo
    assert how[("b/two.go::Use", "b/two.go::Dup")] == "name"  # two Dup: the same file's wins, by name


# -- other languages ---------------------------------------------------------------------------


def test_javascript() -> None:
    parsed, edges = parse_all({
        "web/util.js": "export function helper(x) { return x; }\n",
        "web/app.js": """
            import { helper } from './util';
            class Animal {
              speak() { return this.sound(); }
              sound() { return 'x'; }
            }
            class Dog extends Animal {
              bark() { return helper(this.speak()); }
            }
            const run = () => new Dog().bark();
            """,
    })
    ids = symbol_ids(parsed)
    assert {"web/app.js::Animal.speak", "web/app.js::Dog.bark", "web/app.js::run", "web/util.js::helper"} <= ids
    calls = resolved(edges, EdgeType.CALLS)
    assert ("web/app.js::Animal.speak", "web/app.js::Animal.sound") in calls
    assert ("web/app.js::Dog.bark", "web/util.js::helper") in calls
    assert ("web/app.js::run", "web/app.js::Dog.bark") in calls
    assert ("web/app.js::Dog", "web/app.js::Animal") in resolved(edges, EdgeType.INHERITS)
    assert ("file:web/app.js", "file:web/util.js") in resolved(edges, EdgeType.IMPORTS)


def test_typescript() -> None:
    parsed, edges = parse_all({
        "src/shapes.ts": """
            interface Shape { area(): number }
            export class Square implements Shape {
              area(): number { return this.side() * this.side(); }
              side(): number { return 2; }
            }
            export function total(s: Square): number { return s.area(); }
            """,
    })
    assert {"src/shapes.ts::Shape", "src/shapes.ts::Square.area", "src/shapes.ts::total"} <= symbol_ids(parsed)
    calls = resolved(edges, EdgeType.CALLS)
    assert ("src/shapes.ts::Square.area", "src/shapes.ts::Square.side") in calls
    assert ("src/shapes.ts::total", "src/shapes.ts::Square.area") in calls
    assert ("src/shapes.ts::Square", "src/shapes.ts::Shape") in resolved(edges, EdgeType.INHERITS)


def test_go() -> None:
    parsed, edges = parse_all({
        "server/server.go": """
            package server

            import "fmt"

            // Server serves.
            type Server struct{ port int }

            // Serve runs the loop.
            func (s *Server) Serve() { s.handle(); fmt.Println("x") }

            func (s *Server) handle() {}

            func NewServer() *Server { return &Server{} }

            func Main() { NewServer().Serve() }
            """,
    })
    assert {"server/server.go::Server", "server/server.go::Server.Serve", "server/server.go::Main"} <= symbol_ids(parsed)
    calls = resolved(edges, EdgeType.CALLS)
    assert ("server/server.go::Server.Serve", "server/server.go::Server.handle") in calls
    assert ("server/server.go::Main", "server/server.go::NewServer") in calls
    assert ("server/server.go::Main", "server/server.go::Server.Serve") in calls
    serve = next(c for c in parsed[0].chunks if c.symbol == "Server.Serve")
    assert serve.content.startswith("// Serve runs the loop.") and serve.kind == "method"


def test_java() -> None:
    parsed, edges = parse_all({
        "src/Greeter.java": """
            package demo;

            class Greeter {
                String greet() { return format("hi"); }
                String format(String s) { return s; }
            }

            class Loud extends Greeter {
                String greet() { return super.greet().toUpperCase(); }
            }
            """,
    })
    assert {"src/Greeter.java::Greeter.greet", "src/Greeter.java::Loud.greet"} <= symbol_ids(parsed)
    calls = resolved(edges, EdgeType.CALLS)
    assert ("src/Greeter.java::Greeter.greet", "src/Greeter.java::Greeter.format") in calls
    assert ("src/Greeter.java::Loud.greet", "src/Greeter.java::Greeter.greet") in calls
    assert ("src/Greeter.java::Loud", "src/Greeter.java::Greeter") in resolved(edges, EdgeType.INHERITS)


def test_rust() -> None:
    parsed, edges = parse_all({
        "src/lib.rs": """
            use std::fmt;

            pub struct Counter { n: u32 }

            impl Counter {
                pub fn new() -> Self { Counter { n: 0 } }
                pub fn inc(&mut self) { self.bump(); }
                fn bump(&mut self) { self.n += 1; }
            }

            pub fn main() {
                let mut c = Counter::new();
                c.inc();
            }
            """,
    })
    ids = symbol_ids(parsed)
    assert {"src/lib.rs::Counter", "src/lib.rs::Counter.new", "src/lib.rs::Counter.inc", "src/lib.rs::main"} <= ids
    calls = resolved(edges, EdgeType.CALLS)
    assert ("src/lib.rs::Counter.inc", "src/lib.rs::Counter.bump") in calls
    assert ("src/lib.rs::main", "src/lib.rs::Counter.new") in calls
    assert ("src/lib.rs::Counter", "src/lib.rs::Counter.inc") in resolved(edges, EdgeType.CONTAINS)


# -- documents, windows, splitting, bad input --------------------------------------------------


def test_markdown_and_rst_sections() -> None:
    parsed, _ = parse_all({
        "docs/guide.md": """
            Intro text before any heading.

            # Install

            Run pip.

            ```bash
            # not a heading
            pip install x
            ```

            ## Usage

            Call it.
            """,
        "docs/index.rst": """
            =====
            Title
            =====

            Hello.

            Section
            -------

            Body text here.
            """,
    })
    md, rst = parsed
    assert [(c.symbol, c.kind) for c in md.chunks] == [("", "section"), ("Install", "section"), ("Usage", "section")]
    install = md.chunks[1]
    assert "# not a heading" in install.content and (install.start_line, install.end_line) == (3, 10)
    assert [c.symbol for c in rst.chunks] == ["Title", "Section"]
    assert rst.chunks[0].start_line == 1


def test_long_function_is_split_with_overlap() -> None:
    body = "\n".join(f"    value_{i} = compute(value_{i - 1}, {i})" for i in range(1, 1000))
    config = ChunkConfig()
    parsed, _ = parse_all({"big.py": f"def huge():\n{body}\n    return value_999\n"}, config)
    chunks = [c for c in parsed[0].chunks if c.symbol == "huge"]
    assert len(chunks) > 3 and all(c.kind == "function" for c in chunks)
    assert chunks[0].start_line == 1 and chunks[-1].end_line == 1001
    for prev, nxt in zip(chunks, chunks[1:]):
        assert nxt.start_line <= prev.end_line, "consecutive pieces overlap"
        assert nxt.start_line > prev.start_line
    assert all(count_tokens(c.content) <= config.max_tokens for c in chunks)
    assert parsed[0].symbols[0].chunk_id == chunks[0].chunk_id


def test_windows_for_text_and_broken_code() -> None:
    config = ChunkConfig(window_lines=10, window_overlap_lines=2)
    yaml_text = "\n".join(f"key_{i}: value {i}" for i in range(35))
    parsed, _ = parse_all({
        "conf/app.yaml": yaml_text,
        "broken.py": "def ok():\n    return 1\n\ndef broken(:\n    x = = 2\n    ((((\n",
        "empty.py": "",
    }, config)
    windows, broken, empty = parsed
    assert all(c.kind == "window" and c.symbol == "" for c in windows.chunks)
    assert [(c.start_line, c.end_line) for c in windows.chunks] == [(1, 10), (9, 18), (17, 26), (25, 34), (33, 35)]
    assert "broken.py::ok" in {s.symbol_id for s in broken.symbols}
    assert broken.chunks and not broken.error
    assert empty.chunks == [] and empty.symbols == []


# -- a real repository --------------------------------------------------------------------------


@pytest.mark.skipif(not REQUESTS_MIRROR.exists(), reason=f"bare clone of psf/requests absent at {REQUESTS_MIRROR}")
def test_requests_at_commit() -> None:
    src = RepoSource(str(REQUESTS_MIRROR), REQUESTS_COMMIT, DiscoverConfig())
    entries, _ = src.entries()
    entries = [e for e in entries if e.path.startswith("requests/")]
    parser = FileParser(ChunkConfig())
    parsed = [parser.parse(src.repo, f) for f in src.read(entries) if isinstance(f, SourceFile)]
    assert "requests/models.py::Request.register_hook" in symbol_ids(parsed)
    calls = resolved(GraphResolver().resolve(parsed), EdgeType.CALLS)
    assert ("requests/models.py::Request.__init__", "requests/models.py::Request.register_hook") in calls
