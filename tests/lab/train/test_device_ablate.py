"""`lab/train/device_ablate.sh` on CPU with a tiny BERT: the GPU machine's script, run end to end before a lent
device spends its minutes on it."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

from transformers import AutoModel

from lab.train.transport import unpack_model
from tests.jobs.train.conftest import with_second_repo

SCRIPT = Path(__file__).resolve().parents[3] / "lab" / "train" / "device_ablate.sh"
COMMON = ["--set", "train_encoder.batch_size=4", "--set", "train_encoder.max_steps=2", "--set", "train_encoder.device=cpu",
          "--set", "train_encoder.checkpoint_every=2"]


def _run_script(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    """The script as the device tool runs it, with this checkout's code and a work folder under tmp_path."""
    env = {**os.environ, "PYTHON": sys.executable, "SEMANTICA_TRAIN_WORK": str(tmp_path / "work"),
           "PYTHONPATH": str(SCRIPT.parents[2])}
    return subprocess.run(["bash", str(SCRIPT), *args, *COMMON], env=env, capture_output=True, text=True, timeout=600)


def test_control_and_candidate_are_measured_held_out_and_the_candidate_comes_back(tiny_bert, pairs_dir, tmp_path):
    pairs = with_second_repo(pairs_dir, tmp_path)
    out = tmp_path / "out"
    run = _run_script(tmp_path, str(tiny_bert), str(pairs), str(out), "acme/cart", "train_encoder.query_max_length=16",
                      "train_encoder.query_max_length=32", "16 32")
    assert run.returncode == 0, run.stdout + run.stderr
    for length in (16, 32):
        report = json.loads((out / f"heldout_q{length}.json").read_text())
        assert report["query_max_length"] == length and report["repos"] == ["acme/cart"]
        assert set(report["models"]) == {"base", "control", "candidate"}
        assert all(m["per_repo"][0]["repo"] == "acme/cart" for m in report["models"].values())
    with tarfile.open(out / "meta.tar") as meta:
        meta.extractall(tmp_path / "meta", filter="data")
    cards = {name: json.loads((tmp_path / "meta" / f"train_card-{name}.json").read_text())
             for name in ("control", "candidate", "all")}
    assert cards["control"]["holdout_repos"] == cards["candidate"]["holdout_repos"] == ["acme/cart"]
    assert cards["all"]["holdout_repos"] == [] and set(cards["all"]["repos"]) == {"acme/shop", "acme/cart"}
    assert cards["control"]["settings"]["query_max_length"] == 16
    assert cards["candidate"]["settings"]["query_max_length"] == cards["all"]["settings"]["query_max_length"] == 32
    candidate = unpack_model(out, tmp_path / "candidate").parent  # the fp16 parts, widened; config, tokenizer: meta.tar
    for name in ("config.json", "tokenizer.json"):
        shutil.copy(tmp_path / "meta" / name, candidate / name)
    loaded = AutoModel.from_pretrained(str(candidate))
    assert loaded.config.hidden_size == 32  # the tiny BERT's width: the trained candidate, whole


def test_a_failed_training_fails_the_call(tiny_bert, pairs_dir, tmp_path):
    out = tmp_path / "out"
    run = _run_script(tmp_path, str(tiny_bert), str(pairs_dir), str(out), "acme/nowhere", "", "", "16")
    assert run.returncode == 1 and "a training or measurement failed" in run.stdout
