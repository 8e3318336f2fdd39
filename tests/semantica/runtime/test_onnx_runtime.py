"""The ONNX Runtime encoder against PyTorch on this repository's own chunks and the golden queries.

The ONNX runtime is the default only because these hold: pooled vectors and the token outputs late
interaction stores agree to cosine >= 0.9999, and the dense top-10 of every golden query over a
corpus of real chunks is the same list. The corpus is a subset (the golden files plus a sample of the
rest): encoding the whole repository twice with torch is too slow for `make test` on 2 shared cores.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest

from jobs.eval.golden import load_golden_set
from pipelines.parse import FileParser
from pipelines.source_files import SourceFile
from semantica.config import ChunkConfig, EncoderConfig
from semantica.runtime.encoder import (
    Encoder,
    EncoderMismatchError,
    Runtime,
    encoder_identity,
    parse_model_id,
    shared_encoder,
    snapshot_encoder,
)
from semantica.runtime.onnx_export import ensure_export, export_directory
from tests.conftest import GOLDEN_SET, REPO_ROOT

MIN_COSINE = 0.9999
SAMPLED_FILES = ("semantica/runtime/encoder.py", "semantica/layout.py", "serving/rerankers/late_interaction.py", "jobs/cli.py",
                 "pipelines/discover.py")
CORPUS_CHUNKS = 100  # the least the corpus fixture accepts: encoding is most of this module's time
TOP_K = 10


def _chunks() -> list[str]:
    """Embedding texts of real chunks: every file the golden set labels, then a few others."""
    golden = load_golden_set(GOLDEN_SET)
    paths = sorted({p for q in golden for p in q.relevant_paths} | {s.split("::")[0] for q in golden
                                                                  for s in q.relevant_symbols})
    paths += [p for p in SAMPLED_FILES if p not in paths]
    parser = FileParser(ChunkConfig())
    texts: list[str] = []
    for path in paths:
        source = REPO_ROOT / path
        if not source.exists():
            continue
        language = "markdown" if path.endswith(".md") else "python"
        parsed = parser.parse("semantica/self", SourceFile(path, "0" * 40, language, source.read_text()))
        texts += [c.embedding_text() for c in parsed.chunks]
    step = max(1, len(texts) // CORPUS_CHUNKS)
    return texts[::step][:CORPUS_CHUNKS]


@pytest.fixture(scope="module")
def runtimes() -> tuple[Encoder, Encoder]:
    return shared_encoder(EncoderConfig(runtime="onnx")), shared_encoder(EncoderConfig(runtime="torch"))


def _cosines(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return (a * b).sum(axis=-1) / (np.linalg.norm(a, axis=-1) * np.linalg.norm(b, axis=-1))


def test_the_tokenizer_without_transformers_gives_transformers_ids(runtimes, corpus) -> None:
    from transformers import AutoTokenizer

    onnx, _ = runtimes
    reference = AutoTokenizer.from_pretrained(str(onnx.model_path))
    texts = [*corpus[:40], "", "x", "retry " * 400]
    expected = reference(texts, truncation=True, max_length=256)
    got = onnx.tokenizer.encode(texts, 256)
    assert [ids for ids, _ in got] == expected["input_ids"]
    assert [types for _, types in got] == expected["token_type_ids"]


@pytest.fixture(scope="module")
def encoded(runtimes, corpus) -> dict[str, dict[str, tuple[np.ndarray, list[np.ndarray]]]]:
    """Both runtimes' pooled vectors and token outputs for the corpus and the golden queries."""
    return encode_by_runtime(runtimes, corpus)


def encode_by_runtime(encoders, corpus: list[str]) -> dict[str, dict[str, tuple[np.ndarray, list[np.ndarray]]]]:
    """Pooled vectors and token outputs of the corpus and the golden queries, by each encoder's runtime name."""
    queries = [q.query for q in load_golden_set(GOLDEN_SET)]
    return {encoder.identity.runtime.value: {
        "corpus": encoder.encode_with_tokens(corpus, encoder.config.max_length),
        "queries": encoder.encode_with_tokens(queries, encoder.config.query_max_length)} for encoder in encoders}


def assert_outputs_agree(encoded, mine: str, theirs: str, token_min_cosine: float = MIN_COSINE) -> None:
    """Two runtimes' pooled vectors (to MIN_COSINE) and token outputs (to `token_min_cosine`) on every text."""
    for part in ("corpus", "queries"):
        pooled_mine, tokens_mine = encoded[mine][part]
        pooled_theirs, tokens_theirs = encoded[theirs][part]
        assert _cosines(pooled_mine, pooled_theirs).min() >= MIN_COSINE
        for ours, other in zip(tokens_mine, tokens_theirs):
            assert ours.shape == other.shape
            if len(ours):
                assert _cosines(ours, other).min() >= token_min_cosine


def test_pooled_and_token_outputs_match_pytorch_on_real_chunks_and_queries(encoded) -> None:
    assert_outputs_agree(encoded, "onnx", "torch")


def test_golden_queries_rank_the_same_top_10_in_both_runtimes(encoded) -> None:
    queries = [q.query for q in load_golden_set(GOLDEN_SET)]
    tops = []
    for runtime in ("onnx", "torch"):
        scores = encoded[runtime]["queries"][0] @ encoded[runtime]["corpus"][0].T
        tops.append(np.argsort(-scores, axis=1, kind="stable")[:, :TOP_K].tolist())
    differing = [q for q, a, b in zip(queries, *tops) if a != b]
    assert not differing, f"top-{TOP_K} differs between onnx and torch for {differing}"


def test_the_runtime_and_export_are_part_of_the_identity(runtimes) -> None:
    onnx, torch_encoder = runtimes
    identity = parse_model_id(onnx.model_id)
    assert identity.runtime is Runtime.ONNX and identity.checkpoint == torch_encoder.model_id
    exported = ensure_export(onnx.model_path, Path(onnx.config.export_dir or _default_root()))
    assert exported.sha.startswith(identity.export_sha) and len(identity.export_sha) >= 12
    assert encoder_identity(onnx.config) == (onnx.model_id, onnx.dim)  # what the Ray actors name their caches by
    assert parse_model_id(torch_encoder.model_id).runtime is Runtime.TORCH
    assert parse_model_id(onnx.model_id).model_id == onnx.model_id


def _default_root() -> Path:
    from semantica.runtime.onnx_export import default_export_dir

    return default_export_dir()


def test_a_snapshot_is_queried_with_its_own_runtime_or_refused(runtimes) -> None:
    onnx, torch_encoder = runtimes
    # a torch snapshot on an ONNX server: the torch runtime is loaded for it (documented fallback)
    assert snapshot_encoder(torch_encoder.model_id, torch_encoder.dim, "", onnx) is torch_encoder
    assert snapshot_encoder(onnx.model_id, onnx.dim, "", torch_encoder).model_id == onnx.model_id
    other_export = parse_model_id(onnx.model_id).checkpoint + "+onnx.0123456789ab"
    with pytest.raises(EncoderMismatchError, match="another numeric path"):
        snapshot_encoder(other_export, onnx.dim, "", onnx)


def test_an_unknown_runtime_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match="encoder.runtime must be one of"):
        Encoder(EncoderConfig(runtime="tensorrt"))


def test_the_export_is_reused_and_keyed_by_the_weights(runtimes, tmp_path) -> None:
    onnx, _ = runtimes
    root = _default_root()
    directory = export_directory(onnx.model_path, root)
    assert (directory / "model.onnx").exists() and (directory / "model.sha256").exists()
    memo = json.loads((root / "weights-sha.json").read_text())
    assert directory.name.split("-")[0] in {sha[:16] for sha in memo.values()}
    again = shared_encoder(dataclasses.replace(onnx.config, model_id="team/copy"))
    assert parse_model_id(again.model_id).export_sha == parse_model_id(onnx.model_id).export_sha
