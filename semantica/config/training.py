"""The training jobs' own configuration, apart from the `Config` every build and query loads: mining pairs
(`semantica mine-pairs`), the learned localizer's corpus, features and rankers (`mine-pairs --labels`,
`mine-localizer`, `train-localizer`),
replays (`mine`, `eval swebench --mine`) and fine-tuning the encoder (`train-encoder`).

`load_train_config` reads `conf/train.yaml` with the loader `Config` uses: defaults < that file (or
`SEMANTICA_TRAIN_CONFIG`, or `--train-config FILE`) < `SEMANTICA_TRAIN__SECTION__FIELD` env < `section.field=value`
overrides (a training command's `--set` with a training section lands here)."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from semantica.config.loader import PACKAGE_CONF_DIR, load_sections

TRAIN_CONFIG_FILE = PACKAGE_CONF_DIR / "train.yaml"
TRAIN_ENV_PREFIX = "SEMANTICA_TRAIN__"


@dataclass
class PairsConfig:
    """`semantica mine-pairs`: training pairs from git history (jobs/train/pairs.py). `corpus` never holds
    a benchmark repository (the miner refuses them; tests/jobs/train/test_pairs.py guards the list)."""

    corpus: list[str] = field(default_factory=lambda: ["pallets/click", "python-attrs/attrs", "Textualize/rich"])
    min_docstring_chars: int = 20
    min_body_lines: int = 2
    max_document_chars: int = 4000
    max_commits: int = 2000
    min_message_chars: int = 15
    max_commit_files: int = 10
    max_commit_lines: int = 400
    bot_markers: list[str] = field(default_factory=lambda: ["[bot]", "dependabot", "pre-commit-ci", "renovate"])
    skip_subject_prefixes: list[str] = field(default_factory=lambda: ["revert", "bump", "release", "merge branch"])
    hard_negatives: int = 5
    commit_negatives: int = 5
    commit_batch: int = 250


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


@dataclass
class LocalizerMineConfig:
    """`semantica mine-localizer` (jobs/localizer/dataset.py): which labelled commits are answered on which snapshot."""

    snapshot_every: int = 10  # at most this many labelled commits answered on one snapshot,
    max_staleness: int = 60  # ... none more than this many first-parent commits after it
    max_queries_per_repo: int = 120  # the newest labelled commits of each repository


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
class MineConfig:
    """Mining labelled fused hits (`semantica mine`, `eval swebench --mine`): the lists the replays read."""

    depth: int = 50  # fused hits mined per query
    function_gain: int = 2  # label of a hit inside a gold function (SWE-bench)
    file_gain: int = 1  # label of a hit in a gold file but outside the gold functions


@dataclass
class TrainConfig:
    """Every training job's sections; none of them is in `Config` (tests/semantica/config/test_sections.py)."""

    pairs: PairsConfig = field(default_factory=PairsConfig)
    localizer_corpus: LocalizerCorpusConfig = field(default_factory=LocalizerCorpusConfig)
    localizer_mine: LocalizerMineConfig = field(default_factory=LocalizerMineConfig)
    localizer_train: LocalizerTrainConfig = field(default_factory=LocalizerTrainConfig)
    mine: MineConfig = field(default_factory=MineConfig)
    train_encoder: TrainEncoderConfig = field(default_factory=TrainEncoderConfig)


TRAIN_SECTIONS = tuple(TrainConfig.__dataclass_fields__)


def is_train_override(override: str) -> bool:
    """Whether `section.field=value` names a training section (a training command routes it here)."""
    return override.split("=", 1)[0].strip().split(".", 1)[0] in TRAIN_SECTIONS


def load_train_config(path: str | os.PathLike[str] | None = None, overrides: list[str] | None = None,
                      environ: dict[str, str] | None = None) -> TrainConfig:
    """Load defaults < YAML file < SEMANTICA_TRAIN__SECTION__FIELD env < `section.field=value` overrides."""
    config_path = Path(path) if path else Path(os.environ.get("SEMANTICA_TRAIN_CONFIG", TRAIN_CONFIG_FILE))
    return load_sections(TrainConfig, config_path, bool(path), overrides, environ, TRAIN_ENV_PREFIX)
