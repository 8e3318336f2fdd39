"""The LTR models a study trained (lab/results/ltr; the `ltr` plug-in, lab/plugins/ltr.py) still load under today's feature schema."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from lab.plugins.ltr import LTR_FEATURE_NAMES, SCHEMA_KEY, LtrModel
from semantica.feature_schema import FEATURE_SCHEMA_VERSION


@pytest.mark.parametrize("name", ["model", "model-no-self"])
def test_shipped_models_load_under_the_current_schema(name):
    directory = Path(__file__).resolve().parents[3] / "lab" / "results" / "ltr" / name
    model = LtrModel.load(directory)
    assert model.meta[SCHEMA_KEY] == FEATURE_SCHEMA_VERSION and model.feature_names == LTR_FEATURE_NAMES
    assert model.predict(np.zeros((2, len(LTR_FEATURE_NAMES)))).shape == (2,)
