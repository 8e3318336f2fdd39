"""The `localizer` stage in the real query pipeline over this repository's index (shipped models)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from semantica.api import SearchRequest
from serving.pipeline import SearchPipeline

MODELS = Path(__file__).resolve().parents[3] / "models" / "localizer"
TRAINING_MODULES = ("jobs/localizer/fit.py", "jobs/localizer/train.py")


def test_enabled_localizer_reranks_files_and_functions_and_is_timed(indexed_self):
    if not (MODELS / "meta.json").is_file():
        pytest.skip("SKIPPED LOUDLY: no shipped localizer model in models/localizer")
    base = indexed_self.config
    config = dataclasses.replace(base, localizer=dataclasses.replace(  # candidates-first, as it was written for
        base.localizer, enabled=True, model_dir=str(MODELS), learned_files=False, history_features=False))
    response = SearchPipeline(config).search(SearchRequest(
        query="LambdaRank training rows sample the tail of candidates by fixed fusion", repos=[indexed_self.name]))
    assert "localizer" in response.timings_ms and not [d for d in response.degraded if "localizer" in str(d)]
    # training_rows lives in jobs/localizer/fit.py; jobs/localizer/train.py trains with it
    assert response.files and response.files[0]["path"] in TRAINING_MODULES
    assert any(f["function"].endswith("training_rows") for f in response.functions[:10])


def test_an_identifier_lookup_keeps_the_defining_file_first(indexed_self):
    """The cheap text lists rank files that mention `snapshot` and `writer` often above the one file that defines
    `SnapshotWriter`; a bare identifier lookup therefore keeps today's file order (skip_identifier_queries)."""
    request = SearchRequest(query="SnapshotWriter", repos=[indexed_self.name], k=3)
    kept = SearchPipeline(indexed_self.config).search(request)
    assert indexed_self.config.localizer.enabled and indexed_self.config.localizer.skip_identifier_queries
    assert kept.files[0]["path"] == "pipelines/write.py"
    base = indexed_self.config
    blended_config = dataclasses.replace(base, localizer=dataclasses.replace(base.localizer,
                                                                             skip_identifier_queries=False))
    blended = SearchPipeline(blended_config).search(request)
    assert [f["path"] for f in blended.files] != [f["path"] for f in kept.files]  # the switch is what keeps it
