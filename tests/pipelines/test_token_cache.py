"""The token-vector cache shared by processes: a codec fitted from a sample before the Ray workers start,
and codes other processes wrote picked up by `refresh` (real model, real code of this repository)."""

from __future__ import annotations

from pathlib import Path

import pytest

from pipelines.parse import FileParser
from pipelines.source_files import SourceFile, git_blob_sha
from pipelines.token_cache import new_token_builder
from semantica.config import ChunkConfig
from semantica.runtime.encoder import shared_encoder
from tests.conftest import make_config

pytestmark = pytest.mark.timeout(300)
ROOT = Path(__file__).resolve().parents[2]


def _chunks(relative: str) -> list:
    data = (ROOT / relative).read_bytes()
    file = SourceFile(path=relative, blob_sha=git_blob_sha(data), language="python", text=data.decode())
    return FileParser(ChunkConfig()).parse("semantica/self", file).chunks


def test_a_codec_fitted_from_a_sample_is_the_one_a_second_process_loads(tmp_path) -> None:
    # PQ needs a fitted codec; a small sample so that the first batches fit it
    config = make_config(tmp_path, "token_vectors.fit_sample_tokens=600", "token_vectors.pq_m=16",
                         private_cache=True)
    encoder = shared_encoder(config.encoder)
    dim, length = encoder.dim, config.late_interaction.doc_max_length
    driver = new_token_builder(config, encoder.model_id, dim)
    assert driver is not None and driver.codec is None  # a fresh cache has no codec yet
    chunks = _chunks("serving/core/fusion.py")  # enough chunks that the sample stops before the last
    driver.sample_for_codec(chunks, lambda texts: encoder.encode_tokens(texts, length), 4)
    driver.fit_now()
    assert driver.codec is not None
    sampled = [c.content_sha for c in chunks if driver.has(c.content_sha)]
    assert 0 < len(sampled) < len(chunks)  # stopped once the codec existed

    worker = new_token_builder(config, encoder.model_id, dim)  # what a Ray worker builds from the same config
    assert worker is not None and worker.codec is not None and worker.codec.sha == driver.codec.sha
    assert all(worker.has(sha) for sha in sampled)  # the sample's codes were written: nobody encodes them again

    rest = [c for c in chunks if not worker.has(c.content_sha)]
    worker.fill(rest, lambda texts: encoder.encode_tokens(texts, length), 8)
    worker.flush()
    assert not any(driver.has(c.content_sha) for c in rest)  # written by another process, not seen yet
    driver.refresh()
    assert all(driver.has(c.content_sha) for c in chunks)
    assert driver.codes([rest[0].content_sha])[0][0].shape[0] > 0


def test_no_builder_when_token_vectors_are_off(tmp_path) -> None:
    config = make_config(tmp_path, "token_vectors.enabled=false", private_cache=True)
    assert new_token_builder(config, "m", 384) is None


def test_a_background_fit_on_one_thread_gives_the_same_codec_and_codes(tmp_path) -> None:
    chunks = _chunks("serving/core/fusion.py")
    results = []
    for name, settings in (("inline", ("token_vectors.fit_background=false", "token_vectors.fit_threads=0")),
                           ("background", ())):  # the defaults: a fit thread with one OpenMP thread
        config = make_config(tmp_path / name, "token_vectors.fit_sample_tokens=600", "token_vectors.pq_m=16",
                             *settings, private_cache=True)
        encoder = shared_encoder(config.encoder)
        builder = new_token_builder(config, encoder.model_id, encoder.dim)
        assert builder is not None
        builder.fill(chunks, lambda texts: encoder.encode_tokens(texts, config.late_interaction.doc_max_length), 4)
        codes = builder.codes([c.content_sha for c in chunks])
        assert builder.codec is not None
        results.append((builder.codec.sha, codes))
    (inline_sha, inline_codes), (background_sha, background_codes) = results
    assert background_sha == inline_sha
    assert all((a[0] == b[0]).all() and len(a[0]) > 0 for a, b in zip(inline_codes, background_codes))
