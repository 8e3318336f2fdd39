"""Fixtures shared by the encoder-runtime tests of this package."""

from __future__ import annotations

import pytest

from pipelines.parse import FileParser
from pipelines.source_files import SourceFile
from semantica.config import ChunkConfig
from tests.conftest import REPO_ROOT

REAL_FILES = ("semantica/runtime/encoder.py", "semantica/runtime/onnx_export.py", "pipelines/discover.py", "jobs/cli.py")
MIXED_CHUNKS = 24


@pytest.fixture(scope="module")
def mixed_chunks() -> list[str]:
    """Embedding texts of real chunks of this repository, of mixed lengths (so any batch of them pads)."""
    parser = FileParser(ChunkConfig())
    texts: list[str] = []
    for path in REAL_FILES:
        parsed = parser.parse("semantica/self", SourceFile(path, "0" * 40, "python", (REPO_ROOT / path).read_text()))
        texts += [c.embedding_text() for c in parsed.chunks]
    picked = texts[:: max(1, len(texts) // MIXED_CHUNKS)][:MIXED_CHUNKS]
    assert len({len(t) for t in picked}) > MIXED_CHUNKS // 2, "the chunks should differ in length"
    return picked
