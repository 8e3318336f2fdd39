"""The history studies' inputs (lab/eval/history_lists.py, moved out of the product's `semantica mine`): a mined
instance votes exactly as the live history index does at its base commit, and the product CLI has no such source."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from jobs.cli import main as cli_main
from lab.eval.history_lists import MinedHistory, main
from pipelines.history.reader import HistoryReader
from semantica.config import load_config
from semantica.stores.history import HistorySearcher
from tests.dated_git import commit, git

REPO = "shop/cart"
ISSUE = "the cart total ignores the coupon discount"


def _clone(root: Path) -> tuple[Path, str]:
    work = root / "work"
    work.mkdir()
    git(work, "init", "-q")
    commit(work, {"shop/cart.py": "def total(items):\n    return sum(items)\n"}, "Initial cart", day=0)
    commit(work, {"shop/cart.py": "def total(items, coupon=0):\n    return sum(items) - coupon\n"},
           "Fix the cart total: apply the coupon discount (#12)", day=3)
    commit(work, {"shop/ship.py": "def cost(weight):\n    return 2 * weight\n"}, "Add shipping cost", day=5)
    base = git(work, "rev-parse", "HEAD")
    repos = root / "repos"
    git(root, "clone", "-q", "--bare", str(work), str(repos / REPO.replace("/", "+") / "repo"))
    return repos, base


def test_a_mined_instance_votes_as_the_live_index(tmp_path: Path) -> None:
    repos, base = _clone(tmp_path)
    instances = tmp_path / "instances.jsonl"
    instances.write_text(json.dumps({"instance_id": "shop-1", "repo": REPO, "base_commit": base,
                                     "problem_statement": ISSUE, "patch": ""}) + "\n")
    settings = [f"paths.cache_dir={tmp_path / 'cache'}"]
    args = ["--instances", str(instances), "--repos-dir", str(repos), "--out", str(tmp_path / "out")]
    assert main([*args, *sum((["--set", s] for s in settings), [])]) == 0
    mined = MinedHistory(tmp_path / "out", "shop-1")
    config = load_config(None, settings)
    history = HistoryReader(config.history, str(tmp_path / "cache" / "live.sqlite")).read(
        str(repos / REPO.replace("/", "+") / "repo"), base)
    live = HistorySearcher(history, config.history).index.votes(ISSUE)
    replayed = mined.votes(config.history)
    assert [v.key for v in replayed.files] == [v.key for v in live.files] and replayed.files[0].key == "shop/cart.py"
    assert [v.score for v in replayed.files] == pytest.approx([v.score for v in live.files])


def test_the_product_cli_mines_no_history(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        cli_main(["mine", "history", "--instances", "x.jsonl", "--repos-dir", ".", "--out", "o"])
    assert exit_info.value.code == 2 and "invalid choice: 'history'" in capsys.readouterr().err
