"""Answers over a first `index.dense_later` snapshot encode no candidate: the chunk-vector retriever, late
interaction and the dense function channel use what the snapshot stores (nothing yet) and the answer names the
kinds still building; over the complete successor the same stages run from the stored vectors as ever."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest

from pipelines.indexer import DENSE_KINDS, Indexer
from pipelines.runner import LocalRunner
from semantica.api import SearchRequest
from semantica.config import Config
from semantica.runtime.encoder import Encoder, query_encoder_config, shared_encoder
from semantica.stores.localizer.dense import channel_encoder_config
from serving.pipeline import PENDING, SearchPipeline
from tests.conftest import EXACT_COMMIT, REPO_ROOT, make_config

pytestmark = pytest.mark.timeout(600)
REPO = "semantica/pending"
CORPUS = ("semantica/api.py", "semantica/errors.py", "semantica/hits.py", "semantica/freshness.py")
QUERY = "stop a query that ran past its deadline"  # words, not an identifier: every stage re-ranks it


def model_encoders(config: Config) -> list[Encoder]:
    """The query path's encoder (query vectors, late interaction) and the dense channel's, as the pipeline shares them."""
    query = query_encoder_config(config.encoder)
    return [shared_encoder(query), shared_encoder(channel_encoder_config(config.localizer, query))]


def encoded_while(config: Config, ask: Callable[[], Asked]) -> tuple[Asked, list[int]]:
    """`ask()`'s answer and how many texts each model encoded meanwhile."""
    encoders = model_encoders(config)
    before = [e.texts_encoded for e in encoders]
    response = ask()
    return response, [e.texts_encoded - b for e, b in zip(encoders, before)]


class Asked:
    """One query through a new pipeline after its prefetch (what the CLI and the daemon start with): the loads
    the prefetch started, and the answer."""

    def __init__(self, config: Config) -> None:
        pipeline = SearchPipeline(config)
        prefetch = pipeline.prefetch([REPO], query=QUERY)
        assert prefetch.wait() == {}
        self.loads = set(prefetch.futures)
        self.response = pipeline.search(SearchRequest(QUERY, k=10, repos=[REPO], explain=True))


class FirstSnapshotQuery(LocalRunner):
    """The in-process runner, answering the query over the first snapshot before the model passes run."""

    first: tuple[Asked, list[int]] | None = None

    def run(self, tasks, tokens=None):  # noqa: ANN001, ANN201
        self.first = encoded_while(self.config, lambda: Asked(self.config))
        return super().run(tasks, tokens)


def test_a_first_snapshot_encodes_no_candidate_and_its_successor_answers_from_stored_vectors(tmp_path):
    config = make_config(tmp_path, "index.dense_later=true", "token_vectors.quantization=int8",
                         "token_vectors.dim=384", "history.index=false",
                         f"discover.include_globs={json.dumps(list(CORPUS))}", private_cache=True)
    runner = FirstSnapshotQuery(config, progress=False)
    Indexer(config, runner, progress=False).index(str(REPO_ROOT), REPO, EXACT_COMMIT)

    asked, encoded = runner.first
    first = asked.response
    assert "encoder" not in asked.loads and f"{REPO}:vector" in asked.loads  # nothing will encode a query
    assert first.hits and {h.path for h in first.hits} <= set(CORPUS)  # the lexical and symbol indexes answer
    assert {d["stage"] for d in first.degraded if d["error"] == PENDING} == set(DENSE_KINDS)
    assert encoded == [0, 0]  # no candidate chunk, token or function encoded (nor the query, for nothing)
    assert not [h for h in first.hits if "late MaxSim" in (h.explanation or "")]
    assert not [w for w in first.warnings if "token vectors" in w]

    asked, encoded = encoded_while(config, lambda: Asked(config))
    done = asked.response
    assert "encoder" in asked.loads
    assert not [d for d in done.degraded if d["error"] == PENDING]
    assert encoded == [1, 1]  # the query once per model; every candidate's vectors are stored
    assert [h for h in done.hits if "late MaxSim" in h.explanation and "(stored)" in h.explanation]
    assert {"late_interaction", "localizer"} <= set(done.timings_ms)
