"""Change and fix frequency per file as of a snapshot (BugLocator's and Locus's priors)."""

from __future__ import annotations

from dataclasses import dataclass

from semantica.stores.history.index import SECONDS_PER_DAY
from semantica.stores.history.records import History


@dataclass
class Prior:
    """How often a file changed, how often in a fix-like commit, and how many days since the last."""

    changes: int = 0
    fixes: int = 0
    last_change_days: float = float("inf")


class Priors:
    """Priors of every file the kept history touched; all counted from commits at or before the snapshot, so
    nothing later can move them."""

    def __init__(self, history: History) -> None:
        self.as_of = history.commit_time
        self.files: dict[str, Prior] = {}
        for record in history.records:
            age = max(0.0, (self.as_of - record.author_time) / SECONDS_PER_DAY)
            fix = record.sha in history.fix_like
            for path in record.files:
                if history.live_files is not None and path not in history.live_files:
                    continue
                prior = self.files.setdefault(path, Prior())
                prior.changes += 1
                prior.fixes += int(fix)
                prior.last_change_days = min(prior.last_change_days, age)
