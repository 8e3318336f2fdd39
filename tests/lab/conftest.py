"""Fixtures the lab's tests share over the product's real indexes (tests/conftest.py)."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def ltr_model_dir(mined_golden, tmp_path_factory) -> Path:  # noqa: ANN001
    """A LightGBM ranker trained on the mined golden hits through the trainer's own command line."""
    from lab.train.ltr import main

    out = tmp_path_factory.mktemp("ltr-model")
    assert main(["--data", str(mined_golden.directory), "--out", str(out)]) == 0
    return out
