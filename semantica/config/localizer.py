"""The learned localizer's section of `Config` (docs/localizer.md): the query-time stage. Its corpus and training
settings are the training jobs' (`semantica.config.training`)."""

from __future__ import annotations

from dataclasses import dataclass, field

from semantica.config.errors import ConfigError
from semantica.languages.registry import ROWS

FUNCTION_FILE_ORDERS = ("fusion", "learned")  # which file order draws and ranks the function candidates


@dataclass
class LocalizerConfig:
    """The learned localizer: LightGBM rankers over cheap candidate lists (semantica/stores/localizer/, the stage in serving/localizer/)."""

    enabled: bool = True  # the learned file ranker with history alone by default (lab/notes/localizer.md "Decision")
    model_dir: str = "models/localizer-history"
    top_files: int = 20
    file_list_depth: int = 200
    function_list_depth: int = 200
    max_file_candidates: int = 100
    max_function_candidates: int = 300
    test_factor: float = 0.5  # the fixed fusion's test-file damping (as query.localize_test_factor)
    path_boost: float = 5.0  # ... and its boost for a file the query names (as query.localize_path_boost)
    function_file_weight: float = 1.0  # a function's score: this / (function_file_rrf_k + its file's rank) ...
    function_file_rrf_k: float = 20.0  # ... (lab/notes/localizer.md "Function candidates and order")
    function_name_boost: float = 1.0  # ... plus this many first places when the query names it (code-shaped identifier)
    function_file_order: str = "learned"  # where the file ranker runs, its order draws the `top_files` whose functions
                                          # are candidates and gives their file term; "fusion": the cheap lists' order
    max_file_bytes: int = 1000000
    blob_cache_file: str = ""  # per-file parses by blob sha: '' = <paths.cache_dir>/localizer-blobs.sqlite, 'off'
    learned_files: bool = True  # false: the cheap lists' fixed fusion ranks the candidates (candidates-first)
    today_weight: float = 1.0  # blend with today's fixed-fusion ranking: weight / (blend_rrf_k + rank) each
    learned_weight: float = 1.0
    blend_rrf_k: float = 60.0
    skip_identifier_queries: bool = True  # a query of 1-3 bare identifiers keeps today's order (docs/localizer.md)
    history_features: bool = True  # history votes and priors as features, mined and at query time; a snapshot
                                   # without stored history falls back to candidates-first (stage.py)
    history_max_commits: int = 3000  # ... from at most this many newest commits at or before each snapshot
    dense_model: str = "models/encoder-commits-v3"  # the dense function channel's encoder ('' = off; docs/localizer.md)
    dense_depth: int = 200  # ... re-ranks the top this many functions of the blended order
    dense_rrf_k: float = 10.0  # ... by 1/(dense_rrf_k + rank) + dense_weight/(dense_rrf_k + cosine rank)
    dense_weight: float = 0.5
    dense_file_depth: int = 30  # the top this many files re-ranked by their best cosine among ... (0 = off)
    dense_file_head: int = 30  # ... the top this many functions of the blended order
    dense_file_rrf_k: float = 30.0  # ... by 1/(dense_file_rrf_k + rank) + dense_file_weight/(dense_file_rrf_k + its rank)
    dense_file_weight: float = 1.0
    # ... for the files of these languages only: others keep their place (docs/localizer.md#the-dense-function-channel)
    dense_file_languages: list[str] = field(default_factory=lambda: ["python"])
    dense_max_length: int = 256  # ... encoding at most this many tokens of each function's source
    dense_query_max_length: int = 64  # ... and of the query (the fine-tuned model's training length)
    dense_cache_items: int = 50000  # ... function vectors kept in memory by source text (the oldest go first)
    dense_at_index: bool = True  # ... and every function encoded at index time (`function_vectors` index kind)

    def __post_init__(self) -> None:
        if self.function_file_order not in FUNCTION_FILE_ORDERS:
            raise ConfigError(f"localizer.function_file_order: expected one of {', '.join(FUNCTION_FILE_ORDERS)}, "
                              f"got {self.function_file_order!r}")
        unknown = sorted(set(self.dense_file_languages) - set(ROWS))
        if unknown:
            raise ConfigError(f"localizer.dense_file_languages: unknown language {', '.join(map(repr, unknown))} "
                              f"(the language table's names: {', '.join(sorted(ROWS))})")


@dataclass
class LocalizerSettings:
    """The learned localizer's sections of `Config`."""

    localizer: LocalizerConfig = field(default_factory=LocalizerConfig)
