"""Texts recorded by a study, encoded elsewhere, read back: the cosines a study computes from what came back equal
the cosines of the real vectors, per group and model, and nothing unrecorded is ever scored."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from lab.train.encoder_eval import PooledEncoder
from lab.train.text_vectors import StoredTextVectors, TextRecorder, encode_file, model_for_groups, split_file
from semantica.config import load_train_config
from semantica.stores.localizer.dense import cosines
from tests.jobs.train.conftest import make_tiny_bert

QUERY_LENGTH, DOCUMENT_LENGTH = 16, 64
QUERIES = {"acme/shop": ["total price of the cart", "send the receipt by email"],
           "dev": ["date parsing fails on ISO strings"]}
DOCUMENTS = {"acme/shop": ["def cart_total(items):\n    return sum(i.price for i in items)",
                           "def send_email(to, body):\n    smtp.sendmail(SENDER, to, body)",
                           "def thumbnail(image):\n    return image.resize((64, 64))"],
             "dev": ["def parse_date(text):\n    return datetime.fromisoformat(text)",
                     "def read_config(path):\n    return yaml.safe_load(open(path))"]}


def _record(path: Path) -> None:
    recorder = TextRecorder()
    for group in QUERIES:
        encoder = recorder.for_group(group)
        assert encoder.encode(DOCUMENTS[group], DOCUMENT_LENGTH).shape == (len(DOCUMENTS[group]), 1)
        encoder.encode(QUERIES[group], QUERY_LENGTH)
        encoder.encode(DOCUMENTS[group][:1], DOCUMENT_LENGTH)  # asked twice, recorded once
    assert recorder.write(path) == sum(len(QUERIES[g]) + len(DOCUMENTS[g]) for g in QUERIES)


def test_cosines_read_back_equal_the_real_vectors_cosines(tiny_bert, tmp_path):
    """Each group is encoded by its own model (two tiny models of different weights), and the stand-in vectors a
    study gets give `cosines` equal to those of that model's real vectors, not the other's."""
    texts, out = tmp_path / "texts.parquet", tmp_path / "cosines.npz"
    _record(texts)
    other = make_tiny_bert(tmp_path / "other", 1)
    counts = encode_file(texts, out, model_for_groups([f"acme/shop={tiny_bert}", f"*={other}"]),
                         QUERY_LENGTH, batch_size=2)
    assert counts == {"acme/shop": 5, "dev": 3}
    stored = StoredTextVectors(out)
    assert stored.models == {"acme/shop": str(tiny_bert), "dev": str(other)}
    settings = load_train_config(None, ["train_encoder.device=cpu"], environ={}).train_encoder
    models = {"acme/shop": PooledEncoder(str(tiny_bert), settings, 4), "dev": PooledEncoder(str(other), settings, 4)}
    for group in QUERIES:
        real, wrong = models[group], models["dev" if group == "acme/shop" else "acme/shop"]
        documents = DOCUMENTS[group]
        want_docs = real.encode(documents, DOCUMENT_LENGTH).numpy()
        got_docs = stored.for_group(group).encode(documents, DOCUMENT_LENGTH)
        for query in QUERIES[group]:
            want = cosines(real.encode([query], QUERY_LENGTH).numpy()[0], documents, want_docs)
            got = cosines(stored.for_group(group).encode([query], QUERY_LENGTH)[0], documents, got_docs)
            assert got == pytest.approx(want, abs=1e-5)
            assert max(got, key=got.get) == max(want, key=want.get)
            other_model = cosines(wrong.encode([query], QUERY_LENGTH).numpy()[0], documents,
                                  wrong.encode(documents, DOCUMENT_LENGTH).numpy())
            assert got != pytest.approx(other_model, abs=1e-3)


def test_an_unrecorded_text_or_group_is_an_error_not_a_zero(tiny_bert, tmp_path):
    texts, out = tmp_path / "texts.parquet", tmp_path / "cosines.npz"
    _record(texts)
    encode_file(texts, out, model_for_groups([f"*={tiny_bert}"]), QUERY_LENGTH, batch_size=8)
    stored = StoredTextVectors(out)
    with pytest.raises(KeyError, match="never encoded"):
        stored.for_group("acme/shop").encode(["def unseen(): pass"], DOCUMENT_LENGTH)
    with pytest.raises(KeyError, match="never encoded"):
        stored.for_group("acme/shop").encode(DOCUMENTS["acme/shop"][:1], QUERY_LENGTH)  # recorded at another length
    with pytest.raises(KeyError, match="never encoded"):
        stored.for_group("other/repo")
    table = stored.for_group("acme/shop")  # what a study asks before it skips a text (`--unrecorded skip`)
    assert table.recorded(DOCUMENTS["acme/shop"][0], DOCUMENT_LENGTH)
    assert not table.recorded(DOCUMENTS["acme/shop"][0], QUERY_LENGTH) and not table.recorded("x", DOCUMENT_LENGTH)
    with pytest.raises(ValueError, match="no model"):
        encode_file(texts, tmp_path / "x.npz", model_for_groups([f"dev={tiny_bert}"]), QUERY_LENGTH, batch_size=8)
    with pytest.raises(ValueError, match="named twice"):
        model_for_groups(["a/b=x", "a/b,c/d=y"])
    assert np.load(out)["groups"].tolist() == ["acme/shop", "dev"]


def test_a_recording_split_by_group_reads_back_as_the_whole(tiny_bert, tmp_path):
    """The GPU machine encodes the parts of a split recording at once; read back together they equal the whole."""
    texts = tmp_path / "texts.parquet"
    _record(texts)
    assert split_file(texts, {"shop": {"acme/shop"}}) == {"shop": 5, "rest": 3}
    models = model_for_groups([f"*={tiny_bert}"])
    encode_file(texts, tmp_path / "whole.npz", models, QUERY_LENGTH, batch_size=8)
    for name in ("shop", "rest"):
        encode_file(tmp_path / f"texts.{name}.parquet", tmp_path / f"{name}.npz", models, QUERY_LENGTH, batch_size=8)
    whole = StoredTextVectors(tmp_path / "whole.npz")
    parts = StoredTextVectors(f"{tmp_path / 'shop.npz'},{tmp_path / 'rest.npz'}")
    assert parts.models == whole.models
    for group in QUERIES:
        vectors = [source.for_group(group).encode(DOCUMENTS[group], DOCUMENT_LENGTH) for source in (whole, parts)]
        np.testing.assert_allclose(vectors[0], vectors[1], atol=1e-6)
    with pytest.raises(ValueError, match="more than one vectors file"):
        StoredTextVectors([tmp_path / "whole.npz", tmp_path / "rest.npz"])
