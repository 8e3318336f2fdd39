"""A one-text batch (a query) runs on its own single-thread ONNX session over the same graph: the same
numbers as the batch session, so query vectors and stored vectors stay one numeric path. And the export
`make install` makes is the one the encoder then loads (no first query exports)."""

from __future__ import annotations

import dataclasses
import subprocess
import sys

import numpy as np

from jobs.eval.golden import load_golden_set
from semantica.config import EncoderConfig, load_config
from semantica.encoder import Encoder, encoder_identity
from semantica.localizer.dense import channel_encoder_config
from tests.conftest import GOLDEN_SET, REPO_ROOT

QUERIES = 12


def test_one_query_session_gives_the_batch_sessions_vectors() -> None:
    queries = [q.query for q in load_golden_set(GOLDEN_SET)][:QUERIES] + ["WeightedRRF", "TokenCodec.encode_many"]
    single = Encoder(EncoderConfig(query_threads=1))
    shared = Encoder(EncoderConfig(query_threads=0))
    assert single.model_id == shared.model_id  # threads are not part of the identity: the numbers are the same
    for query in queries:
        vector, tokens = single.encode_with_tokens([query], single.config.query_max_length)
        reference, reference_tokens = shared.encode_with_tokens([query], shared.config.query_max_length)
        np.testing.assert_allclose(vector, reference, atol=1e-5)
        np.testing.assert_allclose(tokens[0], reference_tokens[0], atol=1e-5)
    assert single.forward_pass._query_session is not None  # the one-row batches went to the query session
    assert shared.forward_pass._query_session is None
    batch, _ = single.encode_with_tokens(queries[:4], single.config.query_max_length)  # batches: the shared session
    alone = np.stack([single.encode_query(q) for q in queries[:4]])
    np.testing.assert_allclose(batch, alone, atol=1e-5)


def test_the_install_time_export_is_the_one_the_encoder_loads(tmp_path) -> None:
    config = EncoderConfig()
    done = subprocess.run([sys.executable, "-m", "semantica.onnx_export"], cwd=REPO_ROOT, capture_output=True,
                          text=True, check=True)
    dense = channel_encoder_config(load_config(None, [], environ={}).localizer, config)  # the dense channel's too
    assert done.stdout.strip().splitlines() == [f"ONNX export ready: {encoder_identity(config)[0]}",
                                                f"ONNX export ready: {encoder_identity(dense)[0]}"]
    assert Encoder(dataclasses.replace(config)).model_id == encoder_identity(config)[0]

    bad = subprocess.run([sys.executable, "-m", "semantica.onnx_export", "--set", f"encoder.model_path={tmp_path}"],
                         cwd=REPO_ROOT, capture_output=True, text=True)
    assert bad.returncode == 1 and bad.stdout.startswith("error: ") and len(bad.stdout.strip().splitlines()) == 1


def test_shared_encoders_of_two_lengths_are_two_encoders() -> None:
    """A process comparing two configs (a benchmark, a test) gets each its own lengths, never the first one's."""
    from semantica.encoder import shared_encoder

    long_text = "def f(x):\n" + "    y = x + 1\n" * 200
    default, capped = shared_encoder(EncoderConfig()), shared_encoder(EncoderConfig(max_length=128))
    assert shared_encoder(EncoderConfig()) is default and capped is not default
    assert len(default.encode_tokens([long_text])[0]) == EncoderConfig().max_length - 2  # [CLS] and [SEP] dropped
    assert len(capped.encode_tokens([long_text])[0]) == 128 - 2
