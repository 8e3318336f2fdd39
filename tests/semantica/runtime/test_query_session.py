"""The export `make install` makes is the one the encoder then loads (no first query exports), and encoders of
two lengths stay two encoders."""

from __future__ import annotations

import dataclasses
import subprocess
import sys

from semantica.config import EncoderConfig, load_config
from semantica.runtime.encoder import Encoder, encoder_identity
from semantica.stores.localizer.dense import channel_encoder_config
from tests.conftest import REPO_ROOT


def test_the_install_time_export_is_the_one_the_encoder_loads(tmp_path) -> None:
    config = EncoderConfig()
    done = subprocess.run([sys.executable, "-m", "semantica.runtime.export_encoders"], cwd=REPO_ROOT, capture_output=True,
                          text=True, check=True)
    dense = channel_encoder_config(load_config(None, [], environ={}).localizer, config)  # the dense channel's too
    assert done.stdout.strip().splitlines() == [f"ONNX export ready: {encoder_identity(config)[0]}",
                                                f"ONNX export ready: {encoder_identity(dense)[0]}"]
    assert Encoder(dataclasses.replace(config)).model_id == encoder_identity(config)[0]

    bad = subprocess.run([sys.executable, "-m", "semantica.runtime.export_encoders", "--set", f"encoder.model_path={tmp_path}"],
                         cwd=REPO_ROOT, capture_output=True, text=True)
    assert bad.returncode == 1 and bad.stdout.startswith("error: ") and len(bad.stdout.strip().splitlines()) == 1


def test_shared_encoders_of_two_lengths_are_two_encoders() -> None:
    """A process comparing two configs (a benchmark, a test) gets each its own lengths, never the first one's."""
    from semantica.runtime.encoder import shared_encoder

    long_text = "def f(x):\n" + "    y = x + 1\n" * 200
    default, capped = shared_encoder(EncoderConfig()), shared_encoder(EncoderConfig(max_length=128))
    assert shared_encoder(EncoderConfig()) is default and capped is not default
    assert len(default.encode_tokens([long_text])[0]) == EncoderConfig().max_length - 2  # [CLS] and [SEP] dropped
    assert len(capped.encode_tokens([long_text])[0]) == 128 - 2
