"""What a localizer model directory holds and which candidate settings it ranks: shared by the query-time
stage (serving/localizer/stage.py) and training (jobs/localizer), so neither imports the other's package for
a file name."""

from __future__ import annotations

from pathlib import Path

from semantica.config import LocalizerConfig
from semantica.stores.localizer.features import CandidateConfig

FILE_MODEL, FUNCTION_MODEL, META = "files.txt", "functions.txt", "meta.json"
SHIPPED_ROOT = Path(__file__).resolve().parents[3]  # the checkout whose models/ holds the shipped models


def model_root(model_dir: str | Path) -> Path:
    """`model_dir` as given when absolute or present under the working directory; else under the checkout that
    ships it (a relative default such as models/localizer-history, with a query run from another directory)."""
    root = Path(model_dir)
    return root if root.is_absolute() or root.exists() else SHIPPED_ROOT / root


def candidate_config(config: LocalizerConfig) -> CandidateConfig:
    return CandidateConfig(config.file_list_depth, config.function_list_depth, config.max_file_candidates,
                           config.max_function_candidates, config.top_files, config.test_factor, config.path_boost,
                           config.function_file_weight, config.function_file_rrf_k, config.function_name_boost,
                           config.function_file_order)
