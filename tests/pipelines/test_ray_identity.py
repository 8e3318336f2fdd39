"""The Ray runner files its workers' vectors under the same encoder identity as the encoder that makes them
(`+int8pc` for the int8 runtime), so int8 vectors never land in the float model's cache or manifest id.
No Ray is started here: the identity is computed without it."""

from __future__ import annotations

import pytest

from pipelines.ray_job import EmbedActor, RayRunner
from semantica.config import config_to_dict
from semantica.encoder import encoder_identity, shared_encoder
from semantica.encoder_identity import INT8_SUFFIX
from tests.conftest import make_config

pytestmark = pytest.mark.timeout(300)


@pytest.mark.parametrize("int8", [False, True], ids=["fp32", "int8"])
def test_ray_runner_and_workers_use_the_loaded_encoders_identity(tmp_path, int8: bool) -> None:
    # the torch runtime's int8 (`+int8pc`); the ONNX runtime's identities: tests/semantica/test_onnx_runtime.py
    config = make_config(tmp_path, f"encoder.quantize_int8={str(int8).lower()}", "encoder.device=cpu",
                         "encoder.runtime=torch")
    loaded = shared_encoder(config.encoder)
    assert loaded.model_id.endswith(INT8_SUFFIX) == int8
    assert encoder_identity(config.encoder) == (loaded.model_id, loaded.dim)
    assert RayRunner(config).identity() == (loaded.model_id, loaded.dim)  # the manifest's model id
    actor = EmbedActor(config_to_dict(config))  # the workers' embedding cache key
    assert (actor.model_id, actor.dim) == (loaded.model_id, loaded.dim)
