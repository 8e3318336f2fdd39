"""Configuration of the history signal (semantica/stores/history, serving/retrievers/history.py): which past
commits are read, which are dropped, and how their messages vote.
Mirrors the `history` block of conf/default.yaml."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class HistoryConfig:
    """Reading: the first-parent history of the snapshot's commit, at most `max_commits` commits, never a
    later one. Filters (the pair miner's `pairs.*` filters in conf/train.yaml are the start): bot authors, subjects that start
    with a skipped prefix, messages shorter than `min_message_chars`, and commits changing more than
    `max_commit_files` Python files or `max_commit_lines` lines. Voting: the `top_commits` most similar
    messages (BM25) vote for the files they changed with weight
    `(score / best score) ** similarity_power * 0.5 ** (age_days / half_life_days)` (half-life 0 = no age
    decay), divided by `changed ** share_exponent` (a commit that changed many files votes less for each);
    the best `k` files are kept."""

    index: bool = True  # on: the learned file ranker reads the stored history (lab/notes/localizer.md "Decision")
    max_commits: int = 3000  # as the shipped models/localizer-history was mined (localizer.history_max_commits)
    min_message_chars: int = 15
    max_commit_files: int = 10
    max_commit_lines: int = 1000
    bot_markers: list[str] = field(default_factory=lambda: ["[bot]", "dependabot", "pre-commit-ci", "renovate"])
    skip_subject_prefixes: list[str] = field(
        default_factory=lambda: ["revert", "bump", "release", "merge branch", "prepare release", "version "])
    fix_pattern: str = r"\b(?:fix(?:e[sd]|ing)?|bug|regression|crash(?:es)?|broken|wrong|incorrect|error)\b|#\d+"
    top_commits: int = 30
    similarity_power: float = 1.0
    half_life_days: float = 0.0
    share_exponent: float = 0.0
    k: int = 200
    cache_file: str = ""


@dataclass
class HistorySettings:
    """The history section of `Config` (semantica/stores/history, serving/retrievers/history.py)."""

    history: HistoryConfig = field(default_factory=HistoryConfig)
