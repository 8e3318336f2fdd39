"""The Ray runner files its workers' vectors under the same encoder identity as the encoder that makes them, so
another runtime's vectors never land in this model's cache or manifest id. No Ray is started here: the identity
is computed without it."""

from __future__ import annotations

import pytest

from pipelines.ray_job import EmbedActor, RayRunner
from semantica.config import config_to_dict
from semantica.runtime.encoder import encoder_identity, shared_encoder
from tests.conftest import make_config

pytestmark = pytest.mark.timeout(300)


@pytest.mark.parametrize("runtime", ["torch", "onnx"])
def test_ray_runner_and_workers_use_the_loaded_encoders_identity(tmp_path, runtime: str) -> None:
    config = make_config(tmp_path, "encoder.device=cpu", f"encoder.runtime={runtime}")
    loaded = shared_encoder(config.encoder)
    assert ("+onnx." in loaded.model_id) == (runtime == "onnx")
    assert encoder_identity(config.encoder) == (loaded.model_id, loaded.dim)
    assert RayRunner(config).identity() == (loaded.model_id, loaded.dim)  # the manifest's model id
    actor = EmbedActor(config_to_dict(config))  # the workers' embedding cache key
    assert (actor.model_id, actor.dim) == (loaded.model_id, loaded.dim)
