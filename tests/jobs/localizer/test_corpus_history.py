"""Corpus history features keep a strict time cut: a labelled commit whose own message gives its answer away
is never read for its query (votes, BM25 statistics or priors), on a real tiny git repository."""

from __future__ import annotations

import math
import subprocess
from pathlib import Path

import polars as pl

from jobs.localizer.corpus import LabelledCommit
from jobs.localizer.dataset import FeatureMiner
from jobs.localizer.history import CorpusHistory
from semantica.config import HistoryConfig, LocalizerConfig
from tests.dated_git import DAY, T0, commit, git

PARSER = 'def parse(text):\n    return text.split(",")\n\n\ndef render(rows):\n    return "\\n".join(rows)\n'
UTILS = "def helper():\n    return 1\n"
GIVEAWAY = "Fix zebra xylophone semicolon splitting in parse"








def _repo(tmp_path: Path) -> tuple[Path, str, str]:
    work = tmp_path / "work"
    work.mkdir()
    git(work, "init", "-q", "-b", "main")
    commit(work, {"pkg/parser.py": PARSER, "pkg/utils.py": UTILS}, "Initial import of the parser package", 0)
    commit(work, {"pkg/parser.py": PARSER.replace("join(rows)", "join(r.strip() for r in rows)")},
            "Fix render dropping whitespace in rows", 10)
    snapshot = commit(work, {"pkg/utils.py": UTILS.replace("return 1", "return 11")},
                       "Make helper return eleven for the tables", 30)
    later = commit(work, {"pkg/parser.py": PARSER.replace('split(",")', 'split(";")')}, GIVEAWAY, 40)
    bare = tmp_path / "repos" / "acme+widgets" / "repo"
    bare.parent.mkdir(parents=True)
    subprocess.run(["git", "clone", "-q", "--bare", str(work), str(bare)], check=True)
    return bare, snapshot, later


def test_labelled_commit_and_later_never_feed_its_history_features(tmp_path: Path) -> None:
    git_dir, snapshot, later = _repo(tmp_path)
    history = CorpusHistory(HistoryConfig(min_message_chars=10), tmp_path / "history.sqlite")

    leaky = history.at(git_dir, later)  # the control: read at the labelled commit, its message answers itself
    assert later in {v.sha for vote in leaky.searcher.index.votes(GIVEAWAY).files for v in vote.voters}
    assert leaky.priors["pkg/parser.py"][0] == 2  # an added file is no change: the fix and the labelled commit

    past = history.at(git_dir, snapshot)  # what the miner reads: the later commit is cached, still never used
    assert later not in past.shas and snapshot in past.shas
    assert later not in {v.sha for vote in past.searcher.index.votes(GIVEAWAY).files for v in vote.voters}
    assert past.priors["pkg/parser.py"][:2] == (1.0, 1.0)
    assert not any("::" in key for key in past.priors)  # the features' history is files-only

    labelled = LabelledCommit("acme/widgets", later, snapshot, T0 + 40 * DAY, "squash", GIVEAWAY,
                              ["pkg/parser.py"], ["pkg/parser.py::parse"])
    out = tmp_path / "features"
    miner = FeatureMiner(LocalizerConfig(), tmp_path / "repos", out, log=lambda _: None, history=history)
    assert miner.mine_repo("acme/widgets", [labelled], 0) == 1
    files = pl.read_parquet(out / "acme+widgets.files.parquet")
    parser = files.filter(pl.col("key") == "pkg/parser.py").row(0, named=True)
    assert parser["label"] == 1 and parser["history_count"] == 1.0 and parser["history_fixes"] == 1.0
    assert math.isclose(parser["history_age_days"], 20.0)
    queries = pl.read_parquet(out / "acme+widgets.queries.parquet")
    assert queries["history_commits"].to_list() == [len(past.shas)]


def test_dev_replay_reads_history_as_of_the_base_commit(tmp_path: Path) -> None:
    """The dev replay (`localizer-ablation --history-models`) gives an instance the history the miner gives a
    corpus snapshot at its base commit: a later commit (already in the sha cache) changes nothing."""
    from jobs.eval.instances import Instance
    from jobs.localizer.replay import LearnedReplay
    from semantica.config import load_config
    from semantica.stores.localizer.features import FILE_FEATURES

    git_dir, snapshot, later = _repo(tmp_path)
    config = load_config(None, [f"paths.cache_dir={tmp_path / 'cache'}", "localizer.enabled=true",
                                "localizer.history_features=true", "localizer.learned_files=false"])
    history = CorpusHistory.for_localizer(config)
    history.at(git_dir, later)  # the later commit is cached first, as in a replay of a later instance
    replay = LearnedReplay(config, tmp_path / "repos")
    cands = replay.candidates(Instance("acme__widgets-1", "acme/widgets", snapshot, GIVEAWAY))
    column = {name: n for n, name in enumerate(FILE_FEATURES)}
    parser = cands.file_features[cands.files.index("pkg/parser.py")]
    assert parser[column["history_count"]] == 1.0  # the fix of render only: the later commit is never read
    assert parser[column["history_rank"]] == 1.0  # that fix's message votes for it
    past = history.at(git_dir, snapshot)
    assert later not in past.shas
    assert cands.files[0] == past.signals(GIVEAWAY).file_votes[0][0] == "pkg/parser.py"
    history.close()
