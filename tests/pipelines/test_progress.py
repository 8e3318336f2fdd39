"""Build progress without a terminal: one line per stage with the count done, the total, the time and the rate
(`semantica index` in CI or `kubectl logs` used to print nothing until the summary)."""

from __future__ import annotations

import io
import re
import time
from pathlib import Path

import pytest

from pipelines.progress import StageProgress
from tests.conftest import make_config
from tests.dated_git import one_commit_repo

FILES = {"shop/cart.py": "class Cart:\n    def add(self, item):\n        return item\n",
         "shop/prices.py": "def price_of(name):\n    return 3\n"}
LINE = re.compile(r"^  (\w+): (\d+)/(\d+) (\w+) in [\d.]+s \([\d.]+ \w+/s\)$")


def test_a_stage_without_a_terminal_prints_one_line_when_it_ends() -> None:
    out = io.StringIO()
    stage = StageProgress("embed", "chunks", enabled=True, stream=out)
    stage.total = 5
    for _ in range(5):
        stage.update()
    assert out.getvalue() == ""  # nothing per item
    stage.close()
    [line] = out.getvalue().splitlines()
    assert LINE.match(line).groups() == ("embed", "5", "5", "chunks")
    quiet = io.StringIO()
    off = StageProgress("parse", "files", 3, enabled=False, stream=quiet)
    off.update(3)
    off.close()
    assert quiet.getvalue() == ""


def test_index_reports_each_stage_on_a_pipe(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from pipelines.indexer import Indexer

    repo = one_commit_repo(tmp_path / "repo", FILES)
    summary = Indexer(make_config(tmp_path), progress=True).index(str(repo), "t/progress")
    lines = {m.group(1): m.groups() for m in map(LINE.match, capsys.readouterr().err.splitlines()) if m}
    assert lines["parse"][1:] == ("2", "2", "files")
    assert lines["embed"][1] == lines["embed"][2] and lines["embed"][3] == "chunks"
    assert int(lines["embed"][1]) == summary.chunks


def _child_reports(path: str, steps: int, pause_s: float) -> None:
    """A child process doing work in steps (as the Ray driver does while Ray Data hands rows back)."""
    from pipelines.progress import ProgressFile

    counts = ProgressFile(path)
    for _ in range(steps):
        counts.add(1, 3)
        counts.flush()
        time.sleep(pause_s)


def test_bars_follow_another_process_while_it_runs(tmp_path: Path) -> None:
    """The Ray driver runs in its own process: its rows move the parent's bars before the job ends."""
    import multiprocessing

    from pipelines.progress import POLL_S, ProgressWatcher

    path = tmp_path / "counts"
    files = StageProgress("ray", "files", 3, enabled=True, stream=io.StringIO())
    chunks = StageProgress("embed", "chunks", enabled=True, stream=io.StringIO())
    child = multiprocessing.get_context("spawn").Process(target=_child_reports, args=(str(path), 3, 6 * POLL_S))
    seen_while_running = set()
    with ProgressWatcher(path, files, chunks):
        child.start()
        while child.is_alive():
            seen_while_running.add(files._done)
            time.sleep(POLL_S / 4)
        child.join()
    assert seen_while_running & {1, 2}, seen_while_running  # partial counts reached the parent mid-run
    assert (files._done, chunks._done, chunks.total) == (3, 9, 9)
