"""The OpenVINO encoder (bf16 where the CPU has it) against ONNX Runtime's fp32 on this repository's own chunks and
the golden queries: pooled vectors agree to cosine >= 0.9999 and token outputs to 0.9995, every golden query's dense top-10
over real chunks is the same list, a text's vector barely depends on the batch it came in, and the precision is part
of the identity, so a snapshot is never queried through another numeric path."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from jobs.eval.golden import load_golden_set
from semantica.config import EncoderConfig
from semantica.runtime.encoder import (
    Encoder,
    EncoderMismatchError,
    Runtime,
    encoder_identity,
    parse_model_id,
    shared_encoder,
    snapshot_encoder,
)
from semantica.runtime.openvino_runtime import cpu_precision
from tests.conftest import GOLDEN_SET, REPO_ROOT
from tests.semantica.runtime.test_onnx_runtime import (
    TOP_K,
    _cosines,
    assert_outputs_agree,
    encode_by_runtime,
)

TOKEN_MIN_COSINE = 0.9995  # per-token outputs (stored as 64-byte PQ codes, whose own error is far larger)
NEAR_TIE = 2e-3  # a top-10 member bf16 swaps in scores within this of fp32's 10th (measured: at most 9e-4)
BATCH_MIN_COSINE = 0.99999  # a text alone against the same text inside a batch of others
ALONE = 20  # texts encoded one at a time for that check
FRESH_PROCESSES = 5  # without the warm-up about a third of these hung
HANG_S = 60
# a cold query's shape in a fresh process: the index encoder and the channel's load side by side, then both encode
# their first query at once while a prefetch thread imports a native extension (polars)
FIRST_INFERS_PROBE = """
import threading
from semantica.config import load_config
from semantica.runtime.encoder import Encoder
from semantica.stores.localizer.dense import channel_encoder_config
config = load_config(None, ["encoder.runtime=openvino"], environ={})
configs = [config.encoder, channel_encoder_config(config.localizer, config.encoder)]
encoders = [None, None]
loads = [threading.Thread(target=lambda i=i: encoders.__setitem__(i, Encoder(configs[i]))) for i in range(2)]
[t.start() for t in loads]; [t.join() for t in loads]
start = threading.Barrier(3)
def encode(i):
    start.wait()
    encoders[i].encode(["where is a ledger amount recorded"])
def load_polars():
    start.wait()
    import polars
work = [threading.Thread(target=encode, args=(i,)) for i in range(2)] + [threading.Thread(target=load_polars)]
[t.start() for t in work]; [t.join() for t in work]
print("answered")
"""


@pytest.fixture(scope="module")
def runtimes() -> tuple[Encoder, Encoder]:
    return shared_encoder(EncoderConfig(runtime="openvino")), shared_encoder(EncoderConfig(runtime="onnx"))


@pytest.fixture(scope="module")
def encoded(runtimes, corpus) -> dict[str, dict[str, tuple[np.ndarray, list[np.ndarray]]]]:
    return encode_by_runtime(runtimes, corpus)


def test_pooled_and_token_outputs_match_onnx_runtime_on_real_chunks_and_queries(encoded) -> None:
    assert_outputs_agree(encoded, "openvino", "onnx", TOKEN_MIN_COSINE)


def test_golden_queries_rank_the_same_top_hit_and_top_10_as_onnx_runtime(encoded) -> None:
    """bf16 may swap near ties inside a top-10 (the golden set's NDCG@10 over a full index is equal: docs/results.md),
    so the list's order is not compared: its first hit is, and any member bf16 swaps in must be a near tie at fp32's
    cut (the corpus is this repository's own code, so which ties there are moves with it)."""
    queries = [q.query for q in load_golden_set(GOLDEN_SET)]
    tops, scores = [], {}
    for runtime in ("openvino", "onnx"):
        scores[runtime] = encoded[runtime]["queries"][0] @ encoded[runtime]["corpus"][0].T
        tops.append(np.argsort(-scores[runtime], axis=1, kind="stable")[:, :TOP_K].tolist())
    assert [q for q, a, b in zip(queries, *tops) if a[0] != b[0]] == []
    shared = [len(set(a) & set(b)) for a, b in zip(*tops)]
    assert min(shared) >= TOP_K - 1, shared
    fp32 = scores["onnx"]
    gaps = [float(fp32[row, b[-1]] - fp32[row, extra]) for row, (a, b) in enumerate(zip(*tops)) for extra in set(a) - set(b)]
    assert all(gap <= NEAR_TIE for gap in gaps), gaps


def test_a_text_encodes_the_same_alone_and_in_a_batch(runtimes, encoded, corpus) -> None:
    openvino, _ = runtimes
    in_batch = encoded["openvino"]["corpus"][0][:ALONE]
    alone = np.stack([openvino.encode([text])[0] for text in corpus[:ALONE]])
    assert _cosines(in_batch, alone).min() >= BATCH_MIN_COSINE


def test_the_runtime_export_and_precision_are_part_of_the_identity(runtimes) -> None:
    openvino, onnx = runtimes
    identity = parse_model_id(openvino.model_id)
    assert identity.runtime is Runtime.OPENVINO and identity.precision == cpu_precision()
    assert identity.export_sha == parse_model_id(onnx.model_id).export_sha  # the same export, another runtime
    assert identity.checkpoint == parse_model_id(onnx.model_id).checkpoint and openvino.model_id != onnx.model_id
    assert identity.model_id == openvino.model_id
    assert encoder_identity(openvino.config) == (openvino.model_id, openvino.dim)  # what caches are named by


def test_a_snapshot_is_queried_with_its_own_runtime_and_precision_or_refused(runtimes) -> None:
    openvino, onnx = runtimes
    assert snapshot_encoder(openvino.model_id, openvino.dim, "", onnx).model_id == openvino.model_id
    assert snapshot_encoder(onnx.model_id, onnx.dim, "", openvino).model_id == onnx.model_id
    other = "f32" if cpu_precision() == "bf16" else "bf16"
    elsewhere = openvino.model_id.replace(f"+openvino-{cpu_precision()}.", f"+openvino-{other}.")
    with pytest.raises(EncoderMismatchError, match="another numeric path"):
        snapshot_encoder(elsewhere, openvino.dim, "", onnx)


def test_openvino_refuses_a_gpu_device() -> None:
    from semantica.runtime.forward import EncoderLoadError

    with pytest.raises(EncoderLoadError, match="runs on CPU"):
        Encoder(EncoderConfig(runtime="openvino", device="cuda"))


def test_first_infers_on_two_threads_beside_an_import_never_deadlock() -> None:
    for _ in range(FRESH_PROCESSES):
        done = subprocess.run([sys.executable, "-c", FIRST_INFERS_PROBE], cwd=REPO_ROOT, capture_output=True, text=True,
                              timeout=HANG_S)
        assert done.returncode == 0 and "answered" in done.stdout, done.stderr[-2000:]


STARTED_AT_ONCE = 4  # passes begun before any is collected: each needs an infer request of its own


def test_a_started_pass_gives_the_blocking_passs_vectors_without_a_python_thread(corpus) -> None:
    """`start` on OpenVINO runs a one-batch pass on OpenVINO's own threads (no background thread is made) and gives
    exactly `encode_with_tokens`'s vectors, with several passes under way at once; texts that make several batches
    go to the background thread, with the same vectors too."""
    encoder = Encoder(EncoderConfig(runtime="openvino", torch_threads=1))  # its own: the background thread is checked
    queries = ["where is a ledger amount recorded", "who calls shared_encoder", "publish a snapshot", "MaxSim"]
    pending = [encoder.start([query], 64) for query in queries[:STARTED_AT_ONCE]]
    for query, started in zip(queries, pending):
        vectors, tokens = started.result()
        expected_vectors, expected_tokens = encoder.encode_with_tokens([query], 64)
        assert np.array_equal(vectors, expected_vectors) and np.array_equal(tokens[0], expected_tokens[0])
    assert encoder._background is None
    texts = corpus[:40]
    assert len(encoder.batches(texts, encoder.config.max_length)) > 1
    vectors, tokens = encoder.start(texts).result()
    expected_vectors, expected_tokens = encoder.encode_with_tokens(texts)
    assert np.array_equal(vectors, expected_vectors)
    assert all(np.array_equal(a, b) for a, b in zip(tokens, expected_tokens))
    assert encoder._background is not None
