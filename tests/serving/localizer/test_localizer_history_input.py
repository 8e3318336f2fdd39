"""The localizer stage's history inputs equal the corpus miner's: on a real git repository indexed with its
history, the same commit and query give the stage the votes, priors and candidate features that mining gave
the training rows; the stage gives none when `localizer.history_features` is off or the snapshot stores no
history, and then (with the default config) answers as candidates-first instead of running the history model."""

from __future__ import annotations

import dataclasses
import subprocess
from pathlib import Path

import numpy as np
import pytest

from tests.conftest import make_config
from tests.dated_git import commit, git

R = "acme/widgets"
PARSER = 'def parse(text):\n    return text.split(",")\n\n\ndef render(rows):\n    return "\\n".join(rows)\n'
UTILS = "def helper():\n    return 1\n\n\ndef table(rows):\n    return list(rows)\n"
ROWS = ("def rows_of(text):\n    # rows parsed from text with whitespace kept\n    return text.split('\\n')\n\n\n"
        "def strip_rows(rows):\n    return [r.strip() for r in rows]\n")
WHITESPACE = "def drops_whitespace(text):\n    return ''.join(text.split())\n"
TEST_PARSER = "from pkg.parser import parse, render\n\n\ndef test_render():\n    assert render(parse('a,b')) == 'a\\nb'\n"
QUERY = "render drops whitespace when rows are parsed"
HISTORY = ("history.index=true", "history.min_message_chars=10")


@pytest.fixture(scope="module")
def widgets(tmp_path_factory) -> dict[str, object]:
    """A bare clone whose snapshot commit has three kept commits before it and one later commit after it."""
    root = tmp_path_factory.mktemp("widgets-history-input")
    work = root / "work"
    work.mkdir()
    git(work, "init", "-q", "-b", "main")
    commit(work, {"pkg/parser.py": PARSER, "pkg/utils.py": UTILS, "pkg/rows.py": ROWS, "pkg/whitespace.py": WHITESPACE,
                  "tests/test_parser.py": TEST_PARSER}, "Initial import of the parser package", 0)
    commit(work, {"pkg/parser.py": PARSER.replace("join(rows)", "join(r.strip() for r in rows)")},
           "Fix render dropping whitespace in rows", 10)
    commit(work, {"pkg/utils.py": UTILS.replace("return 1", "return 11")}, "Make helper return eleven for tables", 20)
    snapshot = commit(work, {"pkg/parser.py": PARSER.replace('split(",")', 'split(", ")')},
                      "Fix parse splitting rows on a comma and a space", 30)
    commit(work, {"pkg/parser.py": PARSER}, "Fix render whitespace in rows once more, the later answer", 40)
    bare = root / "repos" / "acme+widgets" / "repo"
    bare.parent.mkdir(parents=True)
    subprocess.run(["git", "clone", "-q", "--bare", str(work), str(bare)], check=True)
    return {"root": root, "bare": bare, "snapshot": snapshot}


def _served(widgets, name: str, *overrides: str):
    """The snapshot at the snapshot commit, indexed with `overrides`, opened as the query path opens it."""
    from pipelines.indexer import Indexer
    from semantica.layout import IndexLayout
    from semantica.snapshot import Snapshot

    config = make_config(Path(widgets["root"]) / name, *overrides)
    Indexer(config, progress=False).index(str(widgets["bare"]), R, widgets["snapshot"])
    return config, Snapshot.open(IndexLayout(config.paths.index_root).current(R), config)


@pytest.fixture(scope="module")
def with_history(widgets):
    return _served(widgets, "with-history", *HISTORY)


@pytest.fixture(scope="module")
def without_history(widgets):
    return _served(widgets, "no-history", "history.index=false")  # as a snapshot indexed before history was on


def _mined(widgets, config, tmp_path: Path):
    """The corpus miner's history at the snapshot commit, read as `mine-localizer` reads it."""
    from jobs.localizer.history import CorpusHistory

    history = CorpusHistory(dataclasses.replace(config.history, max_commits=config.localizer.history_max_commits),
                            tmp_path / "history.sqlite")
    past = history.at(widgets["bare"], widgets["snapshot"])
    history.close()
    return past


def _same(a: np.ndarray, b: np.ndarray) -> bool:
    return a.shape == b.shape and bool(np.all((a == b) | (np.isnan(a) & np.isnan(b))))


def test_a_stored_history_holding_functions_gives_the_stage_files_only(tmp_path):
    """A snapshot's history table written while history also read functions holds function rows: the model was
    mined files-only, and the stage's votes and priors are files only."""
    from semantica.config import HistoryConfig
    from semantica.stores.history import CommitRecord, HistorySearcher, load_history, save_history
    from semantica.stores.history.records import History
    from serving.localizer.history_input import SnapshotHistory
    from tests.old_history_table import rewrite_with_functions

    record = CommitRecord("a" * 40, "b" * 40, "dev <dev@example.com>", 100, "Fix render dropping whitespace in rows",
                          ["pkg/parser.py"], 2)
    save_history(History("c" * 40, 200, [record], {record.sha}, 1, 0, {}, 0.0, {"pkg/parser.py"}), tmp_path)
    rewrite_with_functions(tmp_path, {"pkg/parser.py": ["pkg/parser.py::render"]})
    inputs = SnapshotHistory(HistorySearcher(load_history(tmp_path), HistoryConfig(min_message_chars=10)))
    assert [k for k, _ in inputs.signals(QUERY).file_votes] == ["pkg/parser.py"]
    assert list(inputs.priors) == ["pkg/parser.py"]


def test_stage_history_inputs_equal_the_miners(widgets, with_history, tmp_path):
    from semantica.stores.localizer.features import FUNCTION_FEATURES, CandidateGenerator
    from serving.localizer.stage import LearnedStage, candidate_config

    config, served = with_history
    loc = dataclasses.replace(config.localizer, history_features=True)
    stage = LearnedStage(loc, str(tmp_path / "cache"))
    at_query = stage.history(served, QUERY)
    mined = _mined(widgets, config, tmp_path).signals(QUERY)

    assert at_query is not None and at_query.file_votes  # the fix of render votes for pkg/parser.py
    assert at_query.file_votes[0][0] == "pkg/parser.py"
    assert at_query.file_votes == mined.file_votes
    assert dict(at_query.priors) == dict(mined.priors)
    assert dict(at_query.priors)["pkg/parser.py"][:2] == (2.0, 2.0)  # two fixes before the snapshot, not the later
    assert not any("::" in key for key in at_query.priors)

    generator = CandidateGenerator(candidate_config(loc))
    snapshot = stage.snapshot(served)
    query_time, mining = generator.build(snapshot, QUERY, at_query), generator.build(snapshot, QUERY, mined)
    assert query_time.files == mining.files and query_time.functions == mining.functions
    assert _same(query_time.file_features, mining.file_features)
    assert _same(query_time.function_features, mining.function_features)
    history = {name: query_time.function_features[:, n] for n, name in enumerate(FUNCTION_FEATURES)
               if name.startswith("history_")}  # files only: no function is in a history list or has a prior
    assert len(history) == 6 and (history.pop("history_rr") == 0).all() and np.isnan(list(history.values())).all()
    without = generator.build(snapshot, QUERY, None)
    assert not _same(query_time.file_features, without.file_features)  # the history columns are filled in
    assert not np.isnan(query_time.file_features[:, -3]).all()  # history_count of the files history touched


def test_pipeline_hands_the_stage_its_snapshots_history(widgets, with_history):
    from serving.pipeline import SearchPipeline, SearchRequest

    config, _ = with_history
    on = dataclasses.replace(config, localizer=dataclasses.replace(config.localizer, enabled=True,
                                                                   history_features=True))
    pipeline = SearchPipeline(on)
    response = pipeline.search(SearchRequest(query=QUERY, k=5))
    assert not [d for d in response.degraded if d.get("stage") == "localizer"]
    inputs = list(pipeline.learned_localizer._histories.values())
    assert len(inputs) == 1 and inputs[0].searcher.history.commit == widgets["snapshot"]


def test_no_history_inputs_when_off_or_not_indexed(with_history, without_history, tmp_path):
    from serving.localizer.stage import LearnedStage

    config, served = with_history
    off = dataclasses.replace(config.localizer, history_features=False)
    assert LearnedStage(off, str(tmp_path / "a")).history(served, QUERY) is None
    plain_config, plain = without_history
    assert plain.history is None
    on = dataclasses.replace(plain_config.localizer, history_features=True)
    assert LearnedStage(on, str(tmp_path / "b")).history(plain, QUERY) is None


def _file_order(config, *overrides: str) -> list[str]:
    """The files the real query pipeline answers for QUERY over `config`'s index, with `overrides` on top."""
    from semantica.config import load_config
    from serving.pipeline import SearchPipeline, SearchRequest

    index, cache = config.paths.index_root, config.paths.cache_dir
    response = SearchPipeline(load_config(None, [f"paths.index_root={index}", f"paths.cache_dir={cache}",
                                                 *overrides], environ={})).search(SearchRequest(query=QUERY, k=5))
    assert not [d for d in response.degraded if d.get("stage") == "localizer"]
    return [f["path"] for f in response.files]


def test_default_runs_the_history_model_alone_only_over_a_snapshot_with_history(with_history, without_history,
                                                                                 tmp_path):
    from serving.localizer.stage import LearnedStage, stores_history

    config, served = with_history
    loc = config.localizer
    assert loc.learned_files and loc.history_features  # the defaults under test
    stage = LearnedStage(loc, str(tmp_path / "with"))
    assert stores_history(served) and stage.runs_learned_files(served)
    ranked = stage.localizer().rank(stage.snapshot(served), QUERY, stage.history(served, QUERY))
    assert stage.localizer().models.files is not None
    learned = [key for key, _ in ranked.files]
    no_dense_files = "localizer.dense_file_depth=0"  # which ranking answers; the dense file order has its own test
    answered = _file_order(config, no_dense_files)
    assert answered == learned[: len(answered)]  # the learned ranking alone: today's order is not blended in

    plain_config, plain = without_history
    assert not stores_history(plain) and not LearnedStage(plain_config.localizer).runs_learned_files(plain)
    fallback = _file_order(plain_config, no_dense_files)
    assert fallback == _file_order(plain_config, no_dense_files, "localizer.learned_files=false")  # candidates-first
    # not the model over NaN history
    assert fallback != _file_order(plain_config, no_dense_files, "localizer.history_features=false")


def test_prefetch_loads_the_models_only_for_a_snapshot_that_will_run_them(with_history, without_history):
    """The CLI's prefetch thread imports lightgbm and loads the history model where a query will run it, and
    leaves both alone for a snapshot without history (its queries run no model) and for an identifier lookup
    (the stage keeps today's order for it)."""
    from serving.pipeline import SearchPipeline

    for (config, _), query, loads in ((with_history, QUERY, True), (without_history, QUERY, False),
                                      (with_history, "render", False), (with_history, None, True)):
        pipeline = SearchPipeline(config)
        assert pipeline.prefetch([R], query=query).wait(timeout=600) == {}
        assert (pipeline.learned_localizer._localizer is not None) is loads, (config.paths.index_root, query)


def test_default_answers_name_the_past_commits_that_voted_and_never_a_later_one(with_history):
    """History informs the default file order through the learned ranker, so the answer says which commits
    voted (sha, subject, date) without `explain`; the commit after the snapshot's is never one of them."""
    from semantica.config import load_config
    from serving.pipeline import SearchPipeline, SearchRequest

    config, _ = with_history
    index, cache = config.paths.index_root, config.paths.cache_dir
    response = SearchPipeline(load_config(None, [f"paths.index_root={index}", f"paths.cache_dir={cache}"],
                                          environ={})).search(SearchRequest(query=QUERY, k=5))
    voted = {f["path"]: f["history"] for f in response.files if f.get("history")}
    assert "pkg/parser.py" in voted
    subjects = {v["subject"] for voters in voted.values() for v in voters}
    assert "Fix render dropping whitespace in rows" in subjects
    assert not any("later answer" in subject for subject in subjects)
    assert all({"sha", "subject", "date"} <= set(v) for voters in voted.values() for v in voters)
