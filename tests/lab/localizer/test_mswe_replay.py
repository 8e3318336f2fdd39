"""The Multi-SWE-bench replay study's configs: each row ranks with its own model directory over the instance
languages' files; the fusion row with no ranker."""

from __future__ import annotations

from lab.localizer.mswe_replay import FUSION, replay_config


def test_each_row_reads_its_model_directory_and_the_languages_files(tmp_path):
    config = replay_config("lab/models/localizer-polyglot", str(tmp_path), {"go", "rust"})
    assert config.localizer.model_dir == "lab/models/localizer-polyglot"
    assert config.localizer.learned_files and config.paths.cache_dir == str(tmp_path)
    globs = set(config.discover.include_globs)
    assert {"*.go", "*.rs"} <= globs and "*.py" not in globs
    fusion = replay_config(FUSION, str(tmp_path), {"java"})
    assert not fusion.localizer.learned_files
    assert "*.java" in set(fusion.discover.include_globs)
