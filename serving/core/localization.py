"""The localization tail of a search: retriever lists -> ranked files and functions.

Two steps: the fixed fusion (`Localizer`) and the learned
localizer's blend (`localizer.enabled`). The localize query stage and the offline replay
(jobs/eval/replay.py) both call `LocalizationTail.run`, so a replayed number is what the pipeline answers;
they differ only in where the learned ranking reads the repository (a snapshot, or a bare clone at the
instance's base commit), which they pass in.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from semantica.config import Config
from semantica.hits import RankedList
from serving.core.answer import attach_voters
from serving.core.intent import IntentResult
from serving.core.localize import Localizer

Ranked = list[dict[str, Any]]
LearnedBlend = Callable[[Ranked, Ranked], tuple[Ranked, Ranked]]
"""(files, functions) -> both blended with the learned localizer's ranking."""
Timed = Callable[[str, Callable[[], Any]], Any]
"""Runs one named step (the pipeline's `StageTimer.run`: timings and trace spans)."""


def untimed(_step: str, step: Callable[[], Any]) -> Any:
    return step()


@dataclass
class LocalizationInputs:
    """What one query brings to localization: its retriever lists, and who voted (history) for the answer."""

    lists: dict[str, RankedList]
    chunks: Mapping[str, Any]  # chunk id -> its Chunk (or any object with repo, path, symbol and kind)
    intent: IntentResult
    depth: int
    voters: dict[str, list[Any]] = field(default_factory=dict)  # past commits per file, for the answer


class LocalizationTail:
    """Fixed fusion, learned blend: the one localization path (see the module docstring)."""

    def __init__(self, config: Config, localizer: Localizer) -> None:
        self.config = config
        self.localizer = localizer

    def run(self, inputs: LocalizationInputs, learned: LearnedBlend, *,
            timed: Timed = untimed, on_learned_error: Callable[[Exception], None] | None = None) -> tuple[Ranked, Ranked]:
        """The files and functions. A failing learned blend raises, or, given `on_learned_error`, is reported
        there and the fixed-fusion lists stand (the pipeline degrades; a replay must not hide it)."""
        files, functions = timed("localize", lambda: self.localizer.localize(
            inputs.lists, inputs.chunks, inputs.intent, inputs.depth))
        attach_voters(files, inputs.voters)
        if self.config.localizer.enabled:
            try:
                files, functions = timed("localizer", lambda: learned(files, functions))
            except Exception as exc:
                if on_learned_error is None:
                    raise
                on_learned_error(exc)
        return files, functions
