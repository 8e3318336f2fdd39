"""The paths and stack frames a query quotes, in every parsed language (semantica.stores.localizer.query_signals), and
the patterns' cost: linear in the query's length (a same-run ratio, not a timing)."""

from __future__ import annotations

import time

from semantica.stores.localizer.features import FILE_FEATURES, CandidateConfig, CandidateGenerator
from semantica.stores.localizer.query_signals import QuerySignals, file_stem, module_paths, scoped_paths
from semantica.stores.localizer.table import LocalizerTableBuilder

TRACES = '''panic: runtime error
main.parse(...)
	/home/u/proj/flag/flag.go:123 +0x1d
    at normalize (src/utils/merge.ts:10:5)
    at async Ky.fetch (file:///app/source/core/Ky.js:3:1)
	at com.acme.Outer$Inner.run(Outer.java:7)
	at com.acme.Cls.method(Cls.java:42)
error[E0308]: mismatched types --> src/lib.rs:10:5
tests/test_x.py:3: AssertionError
'''


def test_frames_of_go_js_ts_java_and_rust():
    q = QuerySignals.parse(TRACES)
    assert q.frames == [("home/u/proj/flag/flag.go", ""), ("src/utils/merge.ts", "normalize"),
                        ("app/source/core/Ky.js", "fetch"), ("com/acme/Outer.java", "run"),
                        ("com/acme/Cls.java", "method"), ("src/lib.rs", "")]
    assert "src/utils/merge.ts" in q.paths and "src/lib.rs" in q.paths and "tests/test_x.py" in q.paths
    assert "com/acme/Cls.java" in module_paths("com.acme.Cls")


def test_a_python_query_reads_what_it_always_read():
    q = QuerySignals.parse('Traceback:\n  File "/usr/lib/pkg/core.py", line 3, in run\n'
                           'see pkg/util.py:12 and pkg.core.run')
    assert q.frames == [("/usr/lib/pkg/core.py", "run")]
    assert q.paths == ["pkg/util.py"]
    assert module_paths("pkg.core")[:2] == ("pkg/core.py", "pkg/core/__init__.py")
    assert QuerySignals.parse("tests/test_x.py:12: AssertionError").frames == []  # never a frame


def test_entry_files_of_other_languages_are_not_named_by_a_word():
    assert [file_stem(p) for p in ("source/index.ts", "src/lib.rs", "cmd/main.go", "src/parser/mod.rs")] == [""] * 4
    assert [file_stem(p) for p in ("pkg/main.py", "pkg/index.py", "clock/duration.go")] == ["main", "index", "duration"]


def test_rust_paths_name_the_files_of_their_modules():
    q = QuerySignals.parse("`tokio_util::sync::CancellationToken` hangs; std::vector<int> and tokio::main too")
    assert q.scoped == ["tokio_util::sync::CancellationToken", "std::vector", "tokio::main"]
    assert "src/sync/cancellation_token.rs" in scoped_paths("tokio_util::sync::CancellationToken")
    assert {"src/sync/watch.rs", "src/sync/watch/mod.rs"} <= set(scoped_paths("tokio::sync::watch::channel"))
    assert "src/sync/semaphore.rs" in scoped_paths("tokio::sync::Semaphore::MAX_PERMITS")  # a type's member
    assert scoped_paths("tokio::main") == ()  # an entry stem names no file


RUST_WORKSPACE = {
    "tokio/src/sync/watch.rs": "pub struct Receiver<T> { shared: Arc<T> }\nimpl<T> Receiver<T> {\n"
                               "    pub fn borrow(&self) -> Ref<T> { todo!() }\n}\n",
    "tokio/src/sync/mod.rs": "pub mod watch;\npub mod once_cell;\n",
    "tokio/src/sync/once_cell.rs": "pub struct OnceCell<T> { value: Option<T> }\n",
    "tokio-util/src/sync/cancellation_token.rs": "pub struct CancellationToken { inner: Arc<Node> }\n",
    "tokio/src/net/udp.rs": "pub struct UdpSocket { io: PollEvented }\n",
}


def test_a_rust_path_in_a_query_names_the_file_of_its_module_or_type():
    snapshot = LocalizerTableBuilder().build(RUST_WORKSPACE)
    cands = CandidateGenerator(CandidateConfig()).build(
        snapshot, "Calling borrow on a tokio::sync::watch::Receiver after tokio::sync::OnceCell::set blocks")
    named = FILE_FEATURES.index("module_named")
    flagged = {p for p, row in zip(cands.files, cands.file_features) if row[named] == 1.0}
    assert flagged == {"tokio/src/sync/watch.rs", "tokio/src/sync/once_cell.rs", "tokio/src/sync/mod.rs"}


def _parse_seconds(text: str) -> float:
    started = time.perf_counter()
    QuerySignals.parse(text)
    return time.perf_counter() - started


HOSTILE = (lambda n: "a::" * n + "B", lambda n: "at " + "a." * n, lambda n: "at x (" + "a/" * n, lambda n: "a/" * n + ".go:",
           lambda n: "at " + "a$" * n + "(", lambda n: "at x (" + ":1" * n, lambda n: "at " + "a." * n + "(x.java:1")


def test_the_patterns_are_linear_on_hostile_queries():
    """A hostile query costs about what prose of its length costs (a quadratic pattern: hundreds of times more)."""
    for make in HOSTILE:
        hostile = make(10000)
        prose = ("an issue " * (len(hostile) // 9 + 1))[: len(hostile)]
        _parse_seconds(prose)  # warm
        baseline = min(_parse_seconds(prose) for _ in range(3))
        assert min(_parse_seconds(hostile) for _ in range(3)) < 20 * baseline, hostile[:12]
