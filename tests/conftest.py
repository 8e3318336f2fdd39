"""Shared fixtures: a real index of a fixed subset of this repository, built once per test session."""

from __future__ import annotations

import faulthandler
import json
import os
from dataclasses import dataclass
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("SEMANTICA__DAEMON__ENABLED", "false")  # CLI tests answer in-process: no daemon outlives a test

from semantica.config import Config, load_config  # noqa: E402

REPO_ROOT = Path(__file__).resolve().parent.parent
MIRRORS = Path(os.environ.get("SEMANTICA_MIRRORS", "/work/.mirror"))
REQUESTS_CLONE = MIRRORS / "psf+requests" / "repo"
REQUESTS_COMMIT = "a0df2cbb10419037d11d04352b3175405ab52941"
REQUESTS_NAME = "psf/requests"
SELF_NAME = "semantica/self"
# For a test that checks what an index holds (files, symbols, edges, lexical hits) and never reranks with
# late interaction: no stored token vectors, which roughly triple a build's time; tests/semantica/stores/test_token_vectors.py
# and the late-interaction reranker tests cover them.
WITHOUT_TOKEN_VECTORS = ("token_vectors.enabled=false", "late_interaction.enabled=false")
# For a build whose vectors no test reads (files, symbols, edges, lexical hits, recorded errors): each chunk is
# embedded from its first 16 tokens, not 256. Embedding is most of such a build's time (the nesting-limit file:
# 134 s -> 19 s under load); the embedding cache is keyed by this length, so no other test reuses these vectors.
SHORT_EMBEDDINGS = ("encoder.max_length=16",)
GOLDEN_SET = REPO_ROOT / "conf" / "golden" / "semantica.jsonl"


_SHARED_CACHE: list[Path] = []


def shared_cache_dir() -> Path:
    """One content-addressed cache for the whole session: a chunk embedded once is reused by every test."""
    if not _SHARED_CACHE:
        import tempfile

        # SEMANTICA_TEST_CACHE keeps the content-addressed caches across sessions (parallel worktrees,
        # repeated runs); the default is a fresh directory so a clean run proves a cold build works.
        persistent = os.environ.get("SEMANTICA_TEST_CACHE")
        if persistent:
            Path(persistent).mkdir(parents=True, exist_ok=True)
        _SHARED_CACHE.append(Path(persistent) if persistent else Path(tempfile.mkdtemp(prefix="semantica-test-cache-")))
    return _SHARED_CACHE[0]


# Serve's deployments on a busy 2-core machine (several suites at once) can take longer than the default 120 s to
# start; the tests that start Serve set this (`ray.startup_timeout_s`). A ceiling, not a wait: only a server that
# never comes up waits this long. Not in `make_config`: a daemon's socket is keyed by its config, which a CLI run
# started without the setting must match.
SERVE_STARTUP_S = 360.0


# A test server's port is drawn from below the kernel's ephemeral range (Linux: 32768-60999) and above the worker
# ports a `ray start` cluster uses (10002-19999). A port probed by binding port 0 lies inside the ephemeral range,
# where each of a local Ray's workers and every outgoing connection binds its own: under load one can take the
# probed port before Serve's proxy binds it ("Failed to bind to address"), and a whole module's fixture errors.
SERVER_PORTS_LOW = 20000
EPHEMERAL_PORTS_FILE = Path("/proc/sys/net/ipv4/ip_local_port_range")
EPHEMERAL_PORTS_LOW_DEFAULT = 32768
SERVER_PORT_PROBES = 200


def ephemeral_ports_low() -> int:
    """The first port of the kernel's ephemeral range (the Linux default where the kernel does not say)."""
    if EPHEMERAL_PORTS_FILE.exists():
        return int(EPHEMERAL_PORTS_FILE.read_text().split()[0])
    return EPHEMERAL_PORTS_LOW_DEFAULT


def free_port(host: str = "127.0.0.1") -> int:
    """A port no process holds now, drawn at random from `SERVER_PORTS_LOW` up to the ephemeral range."""
    import random
    import socket

    ephemeral_low = ephemeral_ports_low()
    if ephemeral_low <= SERVER_PORTS_LOW:
        raise RuntimeError(f"the ephemeral port range starts at {ephemeral_low}, at or below {SERVER_PORTS_LOW}: "
                           "no range is left for test servers")
    draw = random.Random()  # seeded from the OS: two suites at once draw different ports
    for _ in range(SERVER_PORT_PROBES):
        port = draw.randrange(SERVER_PORTS_LOW, ephemeral_low)
        with socket.socket() as probe:
            try:
                probe.bind((host, port))
            except OSError:
                continue
        return port
    raise RuntimeError(f"no free port among {SERVER_PORT_PROBES} drawn in {SERVER_PORTS_LOW}-{ephemeral_low - 1}")


def make_config(tmp: Path, *overrides: str, private_cache: bool = False) -> Config:
    """The default config with the index under `tmp`; caches shared by the session unless `private_cache`."""
    cache = tmp / "cache" if private_cache else shared_cache_dir()
    return load_config(None, [f"paths.index_root={tmp / 'index'}", f"paths.cache_dir={cache}", *overrides],
                       environ={})


@dataclass
class IndexedRepo:
    config: Config
    name: str
    summary: object

# Files of this repository that tests query by name besides the golden set's labels, plus distractors
# next to the labelled modules (so a retriever still has to tell related code apart). Each has a "/": a
# glob without one matches a file name anywhere (discover.include_globs).
SELF_CORPUS_EXTRA = (
    "jobs/localizer/train.py", "jobs/localizer/dataset.py", "jobs/localizer/fit.py", "jobs/eval/mine.py", "lab/plugins/ltr.py",
    "semantica/hits.py", "semantica/ondisk/source.py", "pipelines/manifest.py", "docs/errors.md",
)


def self_corpus() -> list[str]:
    """The files `indexed_self` indexes: every file the golden set labels, and SELF_CORPUS_EXTRA.

    The whole repository (~3,500 chunks) took ~400 s to embed on a quiet 2-core machine and ran past
    the per-test timeout under load; this fixed subset (~700 chunks) keeps the golden set whole."""
    paths = set(SELF_CORPUS_EXTRA)
    for line in GOLDEN_SET.read_text().splitlines():
        if line.strip():
            query = json.loads(line)
            paths |= set(query["relevant_paths"]) | {s.split("::")[0] for s in query["relevant_symbols"]}
    return sorted(paths)


def build_indexed_self(base: Path) -> IndexedRepo:
    from pipelines.indexer import Indexer

    config = make_config(base, f"discover.include_globs={json.dumps(self_corpus())}")
    summary = Indexer(config, progress=False).index(str(REPO_ROOT), SELF_NAME)
    return IndexedRepo(config, SELF_NAME, summary)


HANG_EXIT_S = float(os.environ.get("SEMANTICA_TEST_HANG_EXIT_S", "1200"))
"""A test still running after this long is hung, not slow (pytest-timeout's --timeout is 900 s). pytest-timeout's
SIGALRM handler never runs while a thread blocks inside a JVM call holding the GIL; faulthandler's watchdog is a
C thread that needs no GIL: it prints every thread's stack to the terminal and ends the run, so a hang costs
minutes and leaves its stacks in the log instead of stalling CI until its own limit."""
_TERMINAL_FD: list[int] = []


@pytest.hookimpl(trylast=True)
def pytest_configure(config: pytest.Config) -> None:
    """Keep a descriptor of the real stderr (captured output is lost when the watchdog ends the process)."""
    capture = config.pluginmanager.getplugin("capturemanager")
    if capture is not None:
        capture.suspend_global_capture()
    try:
        _TERMINAL_FD.append(os.dup(2))
    finally:
        if capture is not None:
            capture.resume_global_capture()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None):
    if _TERMINAL_FD:
        faulthandler.dump_traceback_later(HANG_EXIT_S, exit=True, file=_TERMINAL_FD[0])
    try:
        yield
    finally:
        faulthandler.cancel_dump_traceback_later()


SELF_FIXTURE = "indexed_self"
SESSION_BUILD_BOUND_S = float(os.environ.get("SEMANTICA_TEST_SESSION_BUILD_S", "2700"))
_SESSION_BUILT: dict[str, IndexedRepo | BaseException] = {}


def pytest_collection_finish(session: pytest.Session) -> None:
    """Index this repository once, before the first test that needs it starts its per-test timeout clock.

    The build embeds ~3,500 chunks with MiniLM: on a busy 2-core machine it ran past the per-test
    timeout inside the first dependent test's setup, and every dependent test then errored. Here it
    runs under its own bound (SEMANTICA_TEST_SESSION_BUILD_S); a failure or overrun is kept and
    re-raised by the fixture, so each dependent test reports it."""
    if session.config.option.collectonly or not any(
            SELF_FIXTURE in getattr(item, "fixturenames", ()) for item in session.items):
        return
    import threading
    import time

    base = session.config._tmp_path_factory.mktemp("self")  # noqa: SLF001 (pytest's own factory, as the fixture uses)
    start = time.monotonic()

    def build() -> None:
        try:
            _SESSION_BUILT[SELF_FIXTURE] = build_indexed_self(base)
        except BaseException as exc:  # noqa: BLE001 - re-raised by the fixture
            _SESSION_BUILT[SELF_FIXTURE] = exc

    builder = threading.Thread(target=build, name="indexed-self", daemon=True)
    builder.start()
    builder.join(SESSION_BUILD_BOUND_S)
    if builder.is_alive():
        _SESSION_BUILT[SELF_FIXTURE] = TimeoutError(
            f"indexing this repository took over SEMANTICA_TEST_SESSION_BUILD_S={SESSION_BUILD_BOUND_S:.0f} s")
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None:
        reporter.write_line(f"{SELF_FIXTURE}: built before the tests in {time.monotonic() - start:.0f} s")


@pytest.fixture(scope="session")
def indexed_self(tmp_path_factory) -> IndexedRepo:
    """This repository's working tree, indexed for real (tree-sitter, MiniLM, FAISS, Lucene); built by
    `pytest_collection_finish` before the tests when collected tests need it."""
    built = _SESSION_BUILT.get(SELF_FIXTURE)
    if built is None:  # collected without the hook's build (e.g. requested dynamically)
        built = _SESSION_BUILT[SELF_FIXTURE] = build_indexed_self(tmp_path_factory.mktemp("self"))
    if isinstance(built, BaseException):
        raise built
    return built


@pytest.fixture(scope="session")
def requests_clone() -> Path:
    if not (REQUESTS_CLONE / "HEAD").exists():
        pytest.skip(f"SKIPPED LOUDLY: no psf/requests clone at {REQUESTS_CLONE} (set SEMANTICA_MIRRORS to a "
                    "directory holding psf+requests/repo to run this test)")
    return REQUESTS_CLONE


@pytest.fixture(scope="session")
def indexed_requests(requests_clone, tmp_path_factory) -> IndexedRepo:
    """psf/requests at REQUESTS_COMMIT indexed once per session, without token vectors and with short
    embeddings: the tests that check its files, symbols, edges, lexical hits and plan share this one build."""
    from pipelines.indexer import Indexer

    config = make_config(tmp_path_factory.mktemp("requests"), *WITHOUT_TOKEN_VECTORS, *SHORT_EMBEDDINGS)
    summary = Indexer(config, progress=False).index(str(requests_clone), REQUESTS_NAME, REQUESTS_COMMIT)
    return IndexedRepo(config, REQUESTS_NAME, summary)


EXACT_COMMIT = "62d4d5ebd4e7b428be2c04dcbf14420067377850"  # this repository, read from git objects (no checkout)
EXACT_NAME = "semantica/stores/exact"
# Code and text files (Markdown, YAML, TOML, a Makefile): the exact index holds every kept file, not only chunked code
EXACT_CORPUS = ("semantica/errors.py", "semantica/api.py", "semantica/languages/table.py", "pipelines/discover.py",
                "docs/errors.md", "docs/http.md", "README.md", "conf/default.yaml", "pyproject.toml", "Makefile")


@pytest.fixture(scope="session")
def indexed_exact(tmp_path_factory) -> IndexedRepo:
    """EXACT_CORPUS of this repository at EXACT_COMMIT, indexed for real with short embeddings and no token
    vectors or history: the exact-search tests read its `exact` shards (and rg reads the same files)."""
    from pipelines.indexer import Indexer

    config = make_config(tmp_path_factory.mktemp("exact"), *WITHOUT_TOKEN_VECTORS, *SHORT_EMBEDDINGS,
                         "history.index=false", f"discover.include_globs={json.dumps(list(EXACT_CORPUS))}")
    summary = Indexer(config, progress=False).index(str(REPO_ROOT), EXACT_NAME, EXACT_COMMIT)
    return IndexedRepo(config, EXACT_NAME, summary)


@dataclass
class MinedGolden:
    directory: Path
    queries: int


@pytest.fixture(scope="session")
def mined_golden(indexed_self, tmp_path_factory) -> MinedGolden:
    """The golden set's fused hits over `indexed_self`, mined with labels through the real CLI."""
    from jobs.cli import main
    from jobs.eval.golden import load_golden_set
    from semantica.feature_schema import FEATURE_STRATEGIES

    out = tmp_path_factory.mktemp("mined-golden")
    root = Path(indexed_self.config.paths.index_root)
    # the retrievers the fusion features describe (semantica.feature_schema.FEATURE_STRATEGIES): a model learns
    # their ranks, so the mined lists hold those and no others
    strategies = ",".join(FEATURE_STRATEGIES)
    args = ["mine", "golden", "--golden", str(GOLDEN_SET), "--repo", indexed_self.name, "--out", str(out),
            "--index-root", str(root), "--set", f"paths.cache_dir={indexed_self.config.paths.cache_dir}",
            "--set", f"retrieval.retrievers=[{strategies}]"]
    assert main(args) == 0
    return MinedGolden(out, len(load_golden_set(GOLDEN_SET)))


@pytest.fixture()
def spans():  # noqa: ANN201 - an InMemorySpanExporter (opentelemetry loads only for the tests that trace)
    """Tracing on for the test, every finished span kept in memory; off again afterwards."""
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from semantica.runtime import observability

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    observability.enable(provider)
    yield exporter
    observability.disable()
