"""`semantica train-encoder` on CPU: a tiny BERT (MiniLM's vocabulary) trained on pairs in the miner's format, measured on
held-out repositories left out (their measurement and the GPU transfers: tests/lab/train)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import polars as pl
import pytest
import torch

from jobs.cli import main
from jobs.train.encoder import CARD_FILE, EncoderTrainer, TrainEncoderError, pairs_hash
from semantica.config import EncoderConfig, load_config, load_train_config
from semantica.runtime.encoder import Encoder
from tests.jobs.train.conftest import FUNCTIONS, with_second_repo


def _config(base: Path, *overrides: str):
    """The product config and the `train_encoder` settings an `EncoderTrainer` takes."""
    settings = load_train_config(None, [f"train_encoder.base_model={base}", "train_encoder.batch_size=4",
                                        "train_encoder.learning_rate=0.001", "train_encoder.checkpoint_every=2",
                                        "train_encoder.device=cpu", *overrides], environ={}).train_encoder
    return load_config(None, [], environ={}), settings


def test_training_lowers_the_loss_and_the_output_serves_through_the_encoder(tiny_bert, pairs_dir, tmp_path):
    out = tmp_path / "model"
    card = EncoderTrainer(*_config(tiny_bert, "train_encoder.max_steps=12"), pairs_dir, out, log=lambda _m: None).run()
    assert card["steps"] == 12 and card["pairs"] == len(FUNCTIONS) and card["hard_negatives"] == len(FUNCTIONS)
    assert card["final_loss"] < card["start_loss"] * 0.8
    assert json.loads((out / CARD_FILE).read_text())["pairs_sha256"] == card["pairs_sha256"]

    encoder = Encoder(EncoderConfig(model_path=str(out), runtime="torch", device="cpu", model_id="tiny-trained"))
    queries, documents = list(FUNCTIONS), list(FUNCTIONS.values())
    vectors = encoder.encode(queries + documents)
    assert vectors.shape == (2 * len(FUNCTIONS), 32)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    # the trainer's pooling is the served one: the same text gives the same vector both ways
    trainer = EncoderTrainer(*_config(out), pairs_dir, tmp_path / "again", log=lambda _m: None)
    trainer.model.eval()
    with torch.no_grad():
        trained = trainer._embed(queries, 64).numpy()
    assert np.allclose(trained, encoder.encode(queries, 64), atol=1e-4)


def test_a_stopped_run_resumes_to_the_uninterrupted_result(tiny_bert, pairs_dir, tmp_path):
    whole = EncoderTrainer(*_config(tiny_bert, "train_encoder.max_steps=4"), pairs_dir, tmp_path / "whole",
                           log=lambda _m: None)
    whole.run()
    lines: list[str] = []
    first = EncoderTrainer(*_config(tiny_bert, "train_encoder.max_steps=2"), pairs_dir, tmp_path / "split", log=lines.append)
    assert first.run()["steps"] == 2
    second = EncoderTrainer(*_config(tiny_bert, "train_encoder.max_steps=4"), pairs_dir, tmp_path / "split",
                            log=lines.append)
    card = second.run()
    assert card["steps"] == 4 and any(line.startswith("resumed from") and "step 2" in line for line in lines)
    assert any(line.startswith("step 4/4 loss") and "pairs/s" in line for line in lines)
    assert second.optimizer.state_dict()["state"][0]["step"] == whole.optimizer.state_dict()["state"][0]["step"] == 4
    for (name, mine), (_, theirs) in zip(second.model.state_dict().items(), whole.model.state_dict().items()):
        assert torch.equal(mine, theirs), name


def test_cli_trains_and_refuses_bad_input_in_one_line(tiny_bert, pairs_dir, tmp_path, capsys):
    out = tmp_path / "cli"
    common = ["--set", f"train_encoder.base_model={tiny_bert}", "--set", "train_encoder.max_steps=2",
              "--set", "train_encoder.batch_size=4", "--set", "train_encoder.device=cpu"]
    assert main(["train-encoder", "--pairs", str(pairs_dir), "--out", str(out), *common]) == 0
    assert f"encoder.model_path={out}" in capsys.readouterr().out
    assert json.loads((out / CARD_FILE).read_text())["command"].startswith("semantica train-encoder --pairs")
    assert (out / "config.json").is_file() and (out / "tokenizer.json").is_file()

    empty = tmp_path / "empty"
    empty.mkdir()
    for pairs, target in ((empty, tmp_path / "x"), (tmp_path / "missing", tmp_path / "x"), (pairs_dir, out / CARD_FILE)):
        assert main(["train-encoder", "--pairs", str(pairs), "--out", str(target), *common]) != 0
        err = capsys.readouterr().err.strip()
        assert err.startswith("semantica train-encoder: error:") and "\n" not in err
    with pytest.raises(TrainEncoderError, match="no commit pairs"):
        EncoderTrainer(*_config(tiny_bert, "train_encoder.kinds=[commit]"), pairs_dir, tmp_path / "y")


def test_pairs_from_a_swebench_repository_are_refused(tiny_bert, pairs_dir, tmp_path):
    frame = pl.read_parquet(pairs_dir / "acme+shop" / "docstring.parquet").with_columns(pl.lit("django/django").alias("repo"))
    (tmp_path / "django+django").mkdir()
    frame.write_parquet(tmp_path / "django+django" / "docstring.parquet")
    with pytest.raises(TrainEncoderError, match="must not train a shipped model: django/django"):
        EncoderTrainer(*_config(tiny_bert), tmp_path, tmp_path / "out")


def test_held_out_repositories_are_left_out_of_training_and_measured(tiny_bert, pairs_dir, tmp_path):
    both = with_second_repo(pairs_dir, tmp_path)
    trainer = EncoderTrainer(*_config(tiny_bert, "train_encoder.max_steps=12", "train_encoder.holdout_repos=[acme/cart]"),
                             both, tmp_path / "held", log=lambda _m: None)
    assert {p.repo for p in trainer.pairs} == {"acme/shop"} and len(trainer.pairs) == len(FUNCTIONS)
    card = trainer.run()
    assert card["holdout_repos"] == ["acme/cart"] and card["repos"] == {"acme/shop": len(FUNCTIONS)}
    assert card["pairs_sha256"] != pairs_hash(both)  # a checkpoint of another hold-out never resumes here
    with pytest.raises(TrainEncoderError, match="without pairs: acme/nowhere"):
        EncoderTrainer(*_config(tiny_bert, "train_encoder.holdout_repos=[acme/nowhere]"), both, tmp_path / "z")



def test_the_gpu_path_imports_nothing_the_gpu_machine_lacks():
    """The GPU machine has torch, transformers, pyarrow, numpy and PyYAML, not polars, bm25s or the serving stack."""
    import subprocess
    import sys

    probe = ("import sys, jobs.cli, jobs.commands.train_encoder, jobs.train.encoder; "
             "print(sorted({m.split('.')[0] for m in sys.modules}))")
    loaded = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    for absent in ("polars", "bm25s", "pyserini", "faiss", "ray", "lightgbm", "serving", "pipelines"):
        assert f"'{absent}'" not in loaded, absent


def test_the_shipped_fine_tuned_encoder_never_saw_a_benchmark_repository():
    """The channel's model as shipped (the default `localizer.dense_model`): its card names only corpus repositories,
    none of the twelve SWE-bench ones, with counts that add up; and it encodes."""
    from jobs.benchmark_repos import is_benchmark_repo
    from semantica.config import LocalizerConfig

    shipped = Path(__file__).resolve().parents[3] / LocalizerConfig.dense_model
    card = json.loads((shipped / CARD_FILE).read_text())
    corpus = {line.strip() for line in (shipped.parents[1] / "bench" / "corpus" / "REPOS.txt").read_text().splitlines()
              if line.strip() and not line.startswith("#")}
    assert card["repos"] and not [r for r in [*card["repos"], *card["holdout_repos"]] if is_benchmark_repo(r)]
    assert set(card["repos"]) <= corpus
    assert not set(card["repos"]) & set(card["holdout_repos"]) and sum(card["repos"].values()) == card["pairs"]
    encoder = Encoder(EncoderConfig(model_path=str(shipped), runtime="torch", device="cpu", model_id="shipped"))
    queries, documents = list(FUNCTIONS), list(FUNCTIONS.values())
    similarity = encoder.encode(queries, 64) @ encoder.encode(documents, 256).T
    assert (similarity.argmax(axis=1) == np.arange(len(FUNCTIONS))).mean() >= 0.75
