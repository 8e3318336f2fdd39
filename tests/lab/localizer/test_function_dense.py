"""The dense channel's corpus study reads each function's source at the query's snapshot commit (never a later
one) and encodes each (snapshot, function) once across reruns, with the real installed encoder."""

from __future__ import annotations

import json

import numpy as np

from lab.localizer.function_dense import SnapshotVectors, snapshot_texts, trained_repos
from semantica.config import EncoderConfig
from semantica.runtime.encoder import Encoder
from tests.dated_git import commit, git, one_commit_repo

FIRST = 'def total(items):\n    return sum(items)\n\n\nclass Cart:\n    def add(self, item):\n        self.items.append(item)\n'


def test_sources_come_from_the_snapshot_commit_and_vectors_are_encoded_once(tmp_path):
    repo = one_commit_repo(tmp_path / "repo", {"shop/cart.py": FIRST})
    snapshot = git(repo, "rev-parse", "HEAD").strip()
    commit(repo, {"shop/cart.py": FIRST.replace("sum(items)", "sum(items) * 2")}, "double", 1)
    keys = ["shop/cart.py::total", "shop/cart.py::Cart.add", "shop/gone.py::nothing"]
    texts = snapshot_texts(repo / ".git", snapshot, keys)
    assert texts == {"shop/cart.py::total": "def total(items):\n    return sum(items)",
                     "shop/cart.py::Cart.add": "    def add(self, item):\n        self.items.append(item)"}

    encoder = Encoder(EncoderConfig())
    file = tmp_path / "vectors" / "snap.npz"
    SnapshotVectors(file).ensure(encoder, texts, 64)
    again = SnapshotVectors(file)
    assert set(again.vectors) == set(texts)
    before = file.stat().st_mtime_ns
    again.ensure(encoder, texts, 64)  # nothing new: the file is not rewritten
    assert file.stat().st_mtime_ns == before
    assert np.allclose(again.vectors["shop/cart.py::total"], encoder.encode([texts["shop/cart.py::total"]], 64)[0],
                       atol=1e-5)


def test_the_encoders_training_repositories_are_left_out(tmp_path):
    (tmp_path / "train_card.json").write_text(json.dumps({"repos": {"pallets/click": 10, "psf/black": 3}}))
    assert trained_repos(tmp_path) == {"pallets/click", "psf/black"}
    assert trained_repos(tmp_path / "none") == set()


def test_a_recording_run_notes_every_text_by_group_and_writes_no_vector_cache(tmp_path):
    """`--record`: the study asks for vectors as usual, nothing is encoded or cached, and the texts land in one
    Parquet file by group and token limit, for the GPU machine."""
    import pyarrow.parquet as pq

    from lab.localizer.function_dense import StudyEncoders

    encoders = StudyEncoders("", str(tmp_path / "texts.parquet"), None)
    assert not encoders.caches
    store = SnapshotVectors(None)
    store.ensure(encoders.for_group("acme/shop"), {"a.py::f": "def f(): pass", "a.py::g": "def g(): pass"}, 256)
    encoders.for_group("acme/shop").encode(["f is broken"], 64)
    encoders.for_group("dev").encode(["def f(): pass"], 256)
    assert set(store.vectors) == {"a.py::f", "a.py::g"} and not list(tmp_path.glob("*.npz"))
    encoders.finish()
    rows = pq.read_table(tmp_path / "texts.parquet").to_pylist()
    assert sorted((r["group"], r["max_length"], r["text"]) for r in rows) == [
        ("acme/shop", 64, "f is broken"), ("acme/shop", 256, "def f(): pass"), ("acme/shop", 256, "def g(): pass"),
        ("dev", 256, "def f(): pass")]
