"""The runtime tests' shared corpus: real chunks of this repository (the runtimes are compared on them)."""

from __future__ import annotations

import pytest

from tests.semantica.runtime.test_onnx_runtime import _chunks


@pytest.fixture(scope="module")
def corpus() -> list[str]:
    texts = _chunks()
    assert len(texts) >= 100, "too few real chunks to compare on"
    return texts
