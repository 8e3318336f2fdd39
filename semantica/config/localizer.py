"""The learned localizer's sections of `Config` (docs/localizer.md): corpus mining, serving, training."""

from __future__ import annotations

from dataclasses import dataclass, field

from semantica.encoder_identity import Int8Scales


@dataclass
class LocalizerCorpusConfig:
    """The learned localizer's training corpus (jobs/localizer/corpus.py): issue-like commits of public
    repositories, never a SWE-bench repository (tests/jobs/localizer/test_corpus_guard.py)."""

    max_history: int = 20000
    max_per_repo: int = 500
    min_message_chars: int = 25
    min_message_words: int = 4
    max_query_chars: int = 1500
    max_commit_files: int = 10
    max_commit_lines: int = 600
    bot_markers: list[str] = field(default_factory=lambda: ["[bot]", "dependabot", "pre-commit-ci", "renovate"])
    skip_subject_prefixes: list[str] = field(default_factory=lambda: [
        "revert", "bump", "release", "merge branch", "prepare", "changelog", "update changelog", "version "])


FUNCTION_FILE_ORDERS = ("fusion", "learned")  # which file order draws and ranks the function candidates
FUNCTION_TIES = ("name", "body")  # what orders function candidates of equal score
QUERY_POOLINGS = ("max", "mean")  # how the dense channel joins a long query's window cosines


@dataclass
class LocalizerConfig:
    """The learned localizer: LightGBM rankers over cheap candidate lists (semantica/localizer/, the stage in serving/core/localizer/)."""

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
    function_ties: str = "name"  # functions of equal score (a file's functions no list reached): "name" = by key,
                                 # "body" = by their body's BM25 against the query, then by key
    max_file_bytes: int = 1000000
    blob_cache_file: str = ""  # per-file parses by blob sha: '' = <paths.cache_dir>/localizer-blobs.sqlite, 'off'
    learned_files: bool = True  # false: the cheap lists' fixed fusion ranks the candidates (candidates-first)
    learned_functions: bool = False
    today_weight: float = 1.0  # blend with today's fixed-fusion ranking: weight / (blend_rrf_k + rank) each
    learned_weight: float = 1.0
    blend_rrf_k: float = 60.0
    learned_files_alone: bool = True  # the learned file ranking replaces today's file order (no blend); functions
                                       # still blend. Corpus LOO with the fixed fusion as today's proxy: weight 0
    skip_identifier_queries: bool = True  # a query of 1-3 bare identifiers keeps today's order (docs/localizer.md)
    history_features: bool = True  # history votes and priors as features, mined and at query time; a snapshot
                                   # without stored history falls back to candidates-first (stage.py)
    history_max_commits: int = 3000  # ... from at most this many newest commits at or before each snapshot
    history_functions: bool = False  # ... and function-level ones (parses every changed file: CPU)
    snapshot_every: int = 10  # corpus features: at most this many labelled commits answered on one snapshot,
    max_staleness: int = 60  # ... none more than this many first-parent commits after it
    max_queries_per_repo: int = 120  # corpus features: the newest labelled commits of each repository
    dense_model: str = "models/encoder-commits-v3"  # the dense function channel's encoder ('' = off; docs/localizer.md)
    dense_depth: int = 200  # ... re-ranks the top this many functions of the blended order
    dense_rrf_k: float = 10.0  # ... by 1/(dense_rrf_k + rank) + dense_weight/(dense_rrf_k + cosine rank)
    dense_weight: float = 0.5
    dense_head_ranker: str = ""  # ... or a LambdaRank model over that head with the cosine as a feature (a directory
                                 # with head.txt; '' = the fusion; lab/notes/localizer.md "A learned ranker over the head")
    dense_tail_depth: int = 0  # ... and the functions below it down to this depth re-ranked among themselves (0 = off)
    dense_tail_rrf_k: float = 10.0  # ... by the same formula with these
    dense_tail_weight: float = 1.0
    dense_file_depth: int = 30  # the top this many files re-ranked by their best cosine among ... (0 = off)
    dense_file_head: int = 30  # ... the top this many functions of the blended order
    dense_file_rrf_k: float = 30.0  # ... by 1/(dense_file_rrf_k + rank) + dense_file_weight/(dense_file_rrf_k + its rank)
    dense_file_weight: float = 1.0
    dense_max_length: int = 256  # ... encoding at most this many tokens of each function's source
    dense_query_max_length: int = 64  # ... and of the query (the fine-tuned model's training length)
    dense_query_windows: int = 1  # ... a long query read as up to this many windows of that length (1 = the first)
    dense_query_pooling: str = "max"  # ... a function's cosine over the windows: their max or their mean
    dense_int8_scales: str = ""  # ... '' = the fp32 export; text | row: ORT int8 with those activation scales (docs/fast.md)
    dense_cache_items: int = 50000  # ... function vectors kept in memory by source text (the oldest go first)
    dense_at_index: bool = True  # ... and every function encoded at index time (`function_vectors` index kind)
    dense_tests: bool = False  # ... test code's functions (`TEST_PATH`) take part too (off: no cosine, never encoded)
    corpus: LocalizerCorpusConfig = field(default_factory=LocalizerCorpusConfig)

    def __post_init__(self) -> None:
        if self.function_file_order not in FUNCTION_FILE_ORDERS:
            from semantica.config.loader import ConfigError  # the loader imports this module

            raise ConfigError(f"localizer.function_file_order: expected one of {', '.join(FUNCTION_FILE_ORDERS)}, "
                              f"got {self.function_file_order!r}")
        if self.function_ties not in FUNCTION_TIES:
            from semantica.config.loader import ConfigError

            raise ConfigError(f"localizer.function_ties: expected one of {', '.join(FUNCTION_TIES)}, "
                              f"got {self.function_ties!r}")
        if self.dense_head_ranker and not self.dense_model:
            from semantica.config.loader import ConfigError

            raise ConfigError("localizer.dense_head_ranker orders the dense channel's head: it needs "
                              "localizer.dense_model (the channel's encoder)")
        if self.dense_query_windows < 1 or self.dense_query_pooling not in QUERY_POOLINGS:
            from semantica.config.loader import ConfigError

            raise ConfigError(f"localizer.dense_query_windows must be >= 1 (got {self.dense_query_windows}) and "
                              f"localizer.dense_query_pooling one of {', '.join(QUERY_POOLINGS)} "
                              f"(got {self.dense_query_pooling!r})")
        scales = {scale.value for scale in Int8Scales}
        if self.dense_int8_scales and self.dense_int8_scales not in scales:
            from semantica.config.loader import ConfigError

            raise ConfigError(f"localizer.dense_int8_scales: expected '' (fp32) or one of {', '.join(sorted(scales))}, "
                              f"got {self.dense_int8_scales!r}")


@dataclass
class LocalizerTrainConfig:
    """`semantica train-localizer` (jobs/localizer/train.py): LightGBM LambdaRank, files then functions."""

    folds: int = 3  # repositories split into this many folds; each repository is held out exactly once
    seed: int = 13
    num_rounds: int = 60
    learning_rate: float = 0.15
    num_leaves: int = 31
    min_data_in_leaf: int = 50
    feature_fraction: float = 0.8
    bagging_fraction: float = 0.8
    bagging_freq: int = 1
    num_threads: int = 2
    eval_at: list[int] = field(default_factory=lambda: [1, 3, 5, 10])
    train_file_depth: int = 30  # training rows per query: the top this many candidates by fixed fusion + positives
    train_function_depth: int = 50
    tail_every: int = 5  # ... and every this-many-th candidate below them (an unbiased sample of the tail)


@dataclass
class TrainEncoderConfig:
    """`semantica train-encoder` (jobs/train/encoder.py): contrastive fine-tuning of the bi-encoder on mined pairs."""

    base_model: str = ""  # a local checkpoint directory; '' = the configured encoder (encoder.model_path)
    batch_size: int = 32  # queries per step: each one's positive is every other query's in-batch negative
    learning_rate: float = 2e-5
    epochs: int = 1
    max_steps: int = 0  # optimizer steps in all, overriding epochs (0 = epochs x pairs // batch_size)
    temperature: float = 0.05  # InfoNCE: cosine similarities are divided by this before the softmax
    hard_negatives: int = 1  # mined BM25 negatives per query added to the batch's documents
    query_max_length: int = 64
    max_length: int = 256  # document tokens
    seed: int = 13
    checkpoint_every: int = 200  # steps between resumable checkpoints (one is also written when the run stops)
    log_every: int = 10  # steps between progress lines
    eval_pairs: int = 256  # the first this many pairs measure the start and final loss (no dropout)
    kinds: list[str] = field(default_factory=lambda: ["docstring", "commit"])  # which mined pair kinds to train on
    device: str = "auto"  # auto: cuda when torch sees a GPU (bf16 autocast there), else cpu
    holdout_repos: list[str] = field(default_factory=list)  # left out of training, measured on (lab.train.encoder_eval)


@dataclass
class LocalizerSettings:
    """The learned localizer's sections of `Config`."""

    localizer: LocalizerConfig = field(default_factory=LocalizerConfig)
    localizer_train: LocalizerTrainConfig = field(default_factory=LocalizerTrainConfig)
    train_encoder: TrainEncoderConfig = field(default_factory=TrainEncoderConfig)
