"""The static-embedding study's encoder: a prepared model2vec directory encodes through the product's `Encoder`
path as the mean of its tokens' rows, and every other checkpoint still loads the transformer."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from lab.plugins.static_encoder import SPECIAL_TOKENS, StaticEncoder, install, is_static, prepare, uninstall
from semantica.config import EncoderConfig
from semantica.runtime.encoder import encoder_identity, resolve_model_path, shared_encoder

DIM = 8


@pytest.fixture(autouse=True, scope="module")
def routed():
    """The route lasts only for this module: the rest of the session builds encoders unrouted."""
    install()
    yield
    uninstall()


@pytest.fixture(scope="module")
def static_dir(tmp_path_factory) -> Path:
    """A model2vec-shaped directory (the shipped MiniLM vocabulary without [CLS]/[SEP], random rows), prepared."""
    from safetensors.numpy import save_file

    source = tmp_path_factory.mktemp("m2v")
    tokenizer = json.loads((resolve_model_path("") / "tokenizer.json").read_text())
    tokenizer["post_processor"] = None
    vocab = tokenizer["model"]["vocab"]
    for token in SPECIAL_TOKENS:  # model2vec drops them and renumbers: the last id takes the freed one
        freed, last = vocab.pop(token), max(vocab, key=vocab.get)
        vocab[last] = freed
    tokenizer["added_tokens"] = [t for t in tokenizer["added_tokens"] if t["content"] not in SPECIAL_TOKENS]
    (source / "tokenizer.json").write_text(json.dumps(tokenizer))
    rows = np.random.default_rng(0).normal(size=(len(vocab), DIM)).astype(np.float32)
    save_file({"embeddings": rows}, str(source / "model.safetensors"))
    (source / "config.json").write_text(json.dumps({"model_type": "model2vec", "hidden_dim": DIM}))
    return prepare(source, tmp_path_factory.mktemp("static"))


def config_of(path: Path) -> EncoderConfig:
    return EncoderConfig(model_path=str(path), model_id="static-test", runtime="torch")


def test_a_text_is_the_unit_mean_of_its_own_token_rows_and_its_token_vectors_are_those_rows(static_dir):
    encoder = shared_encoder(config_of(static_dir))
    assert isinstance(encoder, StaticEncoder) and encoder.dim == DIM
    text = "parse the config file"
    ids = encoder.tokenizer.encode([text], 64)[0][0]
    vocab = json.loads((static_dir / "tokenizer.json").read_text())["model"]["vocab"]
    assert [ids[0], ids[-1]] == [vocab[t] for t in SPECIAL_TOKENS]  # [CLS] ... [SEP] like the transformer's
    rows = encoder.forward_pass.embeddings[ids[1:-1]]
    vectors, tokens = encoder.encode_with_tokens([text, "an unrelated longer text about matrices"])
    expected = rows.mean(axis=0) / np.linalg.norm(rows.mean(axis=0))
    np.testing.assert_allclose(vectors[0], expected, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(tokens[0], rows / np.linalg.norm(rows, axis=1, keepdims=True), rtol=1e-5, atol=1e-6)
    alone = encoder.encode([text])[0]
    np.testing.assert_allclose(alone, vectors[0], rtol=1e-6, atol=1e-7)  # batch-invariant: a lookup, not a forward


def test_only_prepared_static_directories_are_routed_and_the_identity_is_their_own(static_dir):
    assert is_static(str(static_dir)) and not is_static(str(resolve_model_path(""))) and not is_static("")
    assert encoder_identity(config_of(static_dir)) == ("static-test", DIM)
    transformer = shared_encoder(EncoderConfig(runtime="torch"))
    assert not isinstance(transformer, StaticEncoder) and transformer.dim == 384
