"""The query path is the declared stage list: it runs in the declared order, and a stage registered through
the registry runs in every pipeline built after it, with no edit to the pipeline (a real index of a small
repository: tree-sitter, MiniLM, FAISS, Lucene)."""

from __future__ import annotations

import dataclasses
import time

import pytest

from semantica.api import QueryDeadlineExceeded, SearchRequest
from semantica.errors import ErrorKind, kind_of
from serving.pipeline import SearchPipeline
from serving.query.registry import QUERY_STAGES, register_query_stage, unregister_query_stage
from serving.query.state import QueryState
from tests.conftest import make_config
from tests.dated_git import one_commit_repo

pytestmark = pytest.mark.timeout(600)

REPO = "t/ledger"
FILES = {
    "ledger/__init__.py": "",
    "ledger/entries.py": 'def post_entry(ledger, account, amount):\n    """Append one entry to the ledger."""\n'
                         '    ledger.append((account, amount))\n\n\ndef reconcile_ledger(ledger):\n'
                         '    """The sum of every entry."""\n    return sum(amount for _, amount in ledger)\n',
    "ledger/interest.py": 'def compound_interest(principal, rate, years):\n    """Interest compounded yearly."""\n'
                          '    return principal * (1 + rate) ** years\n',
}
DECLARED = ["encode_query", "intent", "scope", "plan", "retrieve", "encode_localizer_query", "expand", "fuse", "rerank", "finish_plan",
            "graph_route", "token_vector_warning", "history", "localize", "knowledge", "context",
            "answer"]


@pytest.fixture(scope="module")
def config(tmp_path_factory):
    from pipelines.indexer import Indexer

    root = tmp_path_factory.mktemp("query-stages")
    config = make_config(root, "token_vectors.enabled=false", "late_interaction.enabled=false",
                         "freshness.enabled=false")
    Indexer(config, progress=False).index(str(one_commit_repo(root / "ledger", FILES)), REPO)
    return config


class AuditStage:
    """A plug-in stage: it records the reranked hits it saw and says so in the answer's warnings."""

    name = "audit"

    def __init__(self, stages) -> None:
        self.seen: list[list[str]] = []
        AuditStage.built.append(self)

    built: list[AuditStage] = []

    def run(self, state: QueryState) -> QueryState:
        self.seen.append([h.chunk_id for h in state.hits])
        state.warnings.append(f"audited {len(state.hits)} hits")
        return state


def test_the_stages_run_in_the_declared_order(config):
    pipeline = SearchPipeline(config)
    assert [s.name for s in pipeline.query_stages] == DECLARED == [f.name for f in QUERY_STAGES]
    response = pipeline.search(SearchRequest("compound interest", repos=[REPO], k=2))
    timed = [name for name in response.timings_ms if name in {"intent", "planning", "fusion", "localize", "context"}]
    assert timed == ["intent", "planning", "fusion", "localize", "context"]  # the clocks start in stage order


def test_a_registered_stage_runs_without_editing_the_pipeline(config):
    before = SearchPipeline(config).search(SearchRequest("reconcile the ledger", repos=[REPO], k=3))
    register_query_stage("audit", AuditStage, after="rerank")
    try:
        pipeline = SearchPipeline(config)
        names = [s.name for s in pipeline.query_stages]
        assert names.index("audit") == names.index("rerank") + 1
        response = pipeline.search(SearchRequest("reconcile the ledger", repos=[REPO], k=3))
    finally:
        unregister_query_stage("audit")
    audit = AuditStage.built[-1]
    assert "audited" in response.warnings[-1] and len(audit.seen) == 1
    assert audit.seen[0][:3] == [h.chunk_id for h in response.hits]  # it saw the reranked order the answer keeps
    assert [h.chunk_id for h in before.hits] == [h.chunk_id for h in response.hits]
    assert "audit" not in [s.name for s in SearchPipeline(config).query_stages]  # unregistered: gone again


def test_registering_needs_a_known_place_and_a_new_name():
    with pytest.raises(ValueError, match="unknown query stage 'nowhere'; known query stages: encode_query"):
        register_query_stage("audit", AuditStage, after="nowhere")
    with pytest.raises(ValueError, match="already registered"):
        register_query_stage("fuse", AuditStage, after="rerank")
    with pytest.raises(ValueError, match="built in"):
        unregister_query_stage("fuse")


class EncodedSoFarStage:
    """A plug-in stage right after `encode_query`: how many texts the chunk encoder had taken in by then."""

    name = "encoded_so_far"
    counts: list[int] = []

    def __init__(self, stages) -> None:
        self.encoder = stages.encoder_factory()

    def run(self, state: QueryState) -> QueryState:
        EncodedSoFarStage.counts.append(self.encoder.texts_encoded)
        return state


def test_the_query_encoding_begins_before_intent_and_retrieval(config):
    """The chunk encoder's pass for the query starts in the first stage (OpenVINO: on its own threads), and the vector
    retriever collects that pass rather than encoding again; a request without the vector retriever starts none."""
    register_query_stage("encoded_so_far", EncodedSoFarStage, after="encode_query")
    try:
        pipeline = SearchPipeline(config)
        encoder = pipeline.stages.encoder_factory()
        EncodedSoFarStage.counts.clear()
        before = encoder.texts_encoded
        answered = pipeline.search(SearchRequest("compound interest over the years", repos=[REPO], k=2))
        assert EncodedSoFarStage.counts == [before + 1] and encoder.texts_encoded == before + 1
        assert answered.hits and not answered.degraded
        lexical_only = pipeline.search(SearchRequest("post an entry to the ledger", repos=[REPO], k=2,
                                                     strategies=["lexical"]))
        assert EncodedSoFarStage.counts[-1] == before + 1 and lexical_only.hits
    finally:
        unregister_query_stage("encoded_so_far")


class BurnStage:
    """A plug-in stage that spends `BURN_S` of CPU (a stage stuck in pure Python, as the old identifier regex was)."""

    name = "burn"
    runs = 0

    def __init__(self, stages) -> None:
        pass

    def run(self, state: QueryState) -> QueryState:
        BurnStage.runs += 1
        started = time.thread_time()
        while time.thread_time() - started < BURN_S:
            pass
        return state


class AfterBurnStage(AuditStage):
    name = "after_burn"


BURN_S = 0.5


def test_a_query_past_its_deadline_stops_before_the_next_stage(config):
    slow = dataclasses.replace(config, query=dataclasses.replace(config.query, deadline_s=BURN_S / 2))
    register_query_stage("burn", BurnStage, after="retrieve")
    register_query_stage("after_burn", AfterBurnStage, after="burn")
    AuditStage.built.clear()
    try:
        pipeline = SearchPipeline(slow)
        with pytest.raises(QueryDeadlineExceeded, match=r"query.deadline_s \(0.25 s\)") as raised:
            pipeline.search(SearchRequest("reconcile the ledger", repos=[REPO], k=3))
        assert kind_of(raised.value) is ErrorKind.DEADLINE_EXCEEDED  # 504 over HTTP, a tool error over MCP
        assert BurnStage.runs <= 1 and all(not stage.seen for stage in AuditStage.built)  # nothing ran after it
        answered = SearchPipeline(config).search(SearchRequest("reconcile the ledger", repos=[REPO], k=3))
        assert answered.hits  # the shipped deadline lets the same slow stage finish
    finally:
        unregister_query_stage("burn")
        unregister_query_stage("after_burn")
