"""Training studies' tools on a tiny BERT: held-out retrieval (lab.train.encoder_eval) and the GPU machine's transfer
packing (lab.train.transport)."""

from __future__ import annotations

from jobs.train.encoder import EncoderTrainer
from jobs.train.pair_parts import read_pair_rows
from lab.train.encoder_eval import PooledEncoder, build_tasks
from lab.train.transport import pack_model, pack_pairs, unpack_model
from semantica.config import load_config, load_train_config
from tests.jobs.train.conftest import FUNCTIONS, with_second_repo


def _config(base, *overrides: str):
    """The product config and the `train_encoder` settings an `EncoderTrainer` takes."""
    settings = load_train_config(None, [f"train_encoder.base_model={base}", "train_encoder.batch_size=4",
                                        "train_encoder.learning_rate=0.001", "train_encoder.checkpoint_every=2",
                                        "train_encoder.device=cpu", *overrides], environ={}).train_encoder
    return load_config(None, [], environ={}), settings


def test_model_and_pairs_survive_the_transfer_packing(tiny_bert, pairs_dir, tmp_path):
    parts = pack_model(tiny_bert, tmp_path / "packed", part_bytes=1_000_000)
    assert len(parts) > 1 and all(p.stat().st_size <= 1_000_000 for p in parts)
    assert (tmp_path / "packed" / "tokenizer.json").is_file()
    unpack_model(tmp_path / "packed", tmp_path / "unpacked")
    texts = list(FUNCTIONS) + list(FUNCTIONS.values())
    settings = _config(tiny_bert)[1]
    original = PooledEncoder(str(tiny_bert), settings, 8).encode(texts, 64)
    restored = PooledEncoder(str(tmp_path / "unpacked"), settings, 8).encode(texts, 64)
    assert float((original * restored).sum(dim=1).min()) >= 0.9999

    assert pack_pairs(pairs_dir, tmp_path / "pairs", max_chars=20, negatives=0) == len(FUNCTIONS)
    rows = read_pair_rows(tmp_path / "pairs", ["query", "positive_documents", "negative_documents"])
    assert [r["query"] for r in rows] == list(FUNCTIONS)
    assert all(len(r["positive_documents"][0]) <= 20 and r["negative_documents"] == [] for r in rows)


def test_a_held_out_repository_measures_better_after_training(tiny_bert, pairs_dir, tmp_path):
    both = with_second_repo(pairs_dir, tmp_path)
    EncoderTrainer(*_config(tiny_bert, "train_encoder.max_steps=12", "train_encoder.holdout_repos=[acme/cart]"),
                   both, tmp_path / "held", log=lambda _m: None).run()
    (task,) = build_tasks(both, ["acme/cart"], ["docstring"])
    assert task.queries == list(FUNCTIONS) and len(task.documents) == len(FUNCTIONS)  # negatives are other positives
    assert all(len(r) == 1 and task.documents[next(iter(r))] == code for r, code in zip(task.relevant, FUNCTIONS.values()))
    settings = _config(tiny_bert)[1]
    before = PooledEncoder(str(tiny_bert), settings, 4).score(task, 3)
    after = PooledEncoder(str(tmp_path / "held"), settings, 4).score(task, 3)
    assert after.mrr > before.mrr and after.acc_at_k >= before.acc_at_k
    everything = PooledEncoder(str(tiny_bert), settings, 4).score(task, len(task.documents))
    assert everything.acc_at_k == 1.0 and 0 < everything.mrr <= 1


def test_the_gpu_path_imports_nothing_the_gpu_machine_lacks():
    """The GPU machine has torch, transformers, pyarrow, numpy and PyYAML, not polars, bm25s or the serving stack."""
    import subprocess
    import sys

    probe = ("import sys, lab.train.encoder_eval, lab.train.transport, lab.train.text_vectors; "
             "print(sorted({m.split('.')[0] for m in sys.modules}))")
    loaded = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    for absent in ("polars", "bm25s", "pyserini", "faiss", "ray", "lightgbm", "serving", "pipelines"):
        assert f"'{absent}'" not in loaded, absent
