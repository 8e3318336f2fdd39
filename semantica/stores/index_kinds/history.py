"""The history index (`history/`, semantica.stores.history): the past commits at or before the snapshot's commit,
stored whole (not partitioned) for git sources when `history.index` is on."""

from __future__ import annotations

from typing import Any

from semantica.ondisk.snapshot_paths import HISTORY_DIR
from semantica.stores.history import HistorySearcher, save_history
from semantica.stores.index_kinds.base import KindWritten, WriteContext

KIND = "history"
HISTORY_FILE = "history.json"


class HistoryKind:
    name = KIND
    directories = (HISTORY_DIR,)

    def write(self, context: WriteContext) -> KindWritten:
        history = context.inputs.history
        if history is None:
            return KindWritten()
        save_history(history, context.root / HISTORY_DIR)
        return KindWritten(counts={"history_commits": len(history.records)})

    def open(self, snapshot: Any) -> Any:
        """The snapshot's `semantica.stores.history.HistorySearcher`, or None when it stores none."""
        if not (snapshot.paths.history / HISTORY_FILE).is_file():
            return None
        return HistorySearcher.open(snapshot.paths.history, snapshot.config.history)
