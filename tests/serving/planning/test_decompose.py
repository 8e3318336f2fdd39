"""Decomposition (issue 15): a real bug-report-like text's stack frames, and on a small real index the
traceback frame's file ranks first; with decomposition off, the answer is as before. The other sub-query kinds
left the product (issue 45): their settings are unknown keys now."""

from __future__ import annotations

from pathlib import Path

import pytest

from semantica.config import ConfigError, DecomposeConfig, MineConfig, PlanningConfig, load_config
from serving.planning.decompose import Frame, QueryDecomposer, SubQueryKind
from serving.planning.direct import PathSuffixIndex
from serving.planning.merge import DIRECT, MAIN_WEIGHT, ListMerger, SubQueryLists
from tests.conftest import make_config
from tests.dated_git import one_commit_repo

R = "acme/ledger"

REPORT = '''Posting a refund crashes with a KeyError when the account was archived

When I post a refund for an account that was archived last month, the whole batch stops.
I expected the refund to be skipped with a warning instead of a crash. This started after upgrading.

```python
from ledger.api import post_batch
post_batch([{"account": "acme-17", "amount": -20}])
```

Traceback (most recent call last):
  File "/home/me/jobs/nightly.py", line 12, in <module>
    post_batch(rows)
  File "/opt/venv/lib/python3.11/site-packages/ledger/api.py", line 9, in post_batch
    return [apply_entry(row) for row in rows]
  File "/opt/venv/lib/python3.11/site-packages/ledger/postings.py", line 5, in apply_entry
    balance = BALANCES[row["account"]]
KeyError: 'acme-17'

The AccountRegistry still lists the account, so maybe the balances table is rebuilt wrongly (see docs/ledger.md).
'''


def _decompose(text: str, **overrides):
    return QueryDecomposer(DecomposeConfig(**overrides)).decompose(text)


def test_bug_report_gives_its_frames_innermost_first_and_nothing_else():
    subs = _decompose(REPORT)
    assert [s.kind for s in subs] == [SubQueryKind.FRAME]
    frames = subs[0].frames
    assert frames[0] == Frame("/opt/venv/lib/python3.11/site-packages/ledger/postings.py", 5, "apply_entry")  # innermost
    assert [f.function for f in frames] == ["apply_entry", "post_batch", ""]  # <module> names no function
    assert subs[0].to_dict()["frames"][0] == "/opt/venv/lib/python3.11/site-packages/ledger/postings.py:5 in apply_entry"


def test_pytest_and_java_frames_and_queries_without_frames():
    pytest_style = "src/_pytest/main.py:123: in collect\n    raise Error\nE   ValueError: bad"
    frames = QueryDecomposer.frames(pytest_style)
    assert frames == [Frame("src/_pytest/main.py", 123, "collect")]
    java = "at com.acme.Ledger.post(Ledger.java:42)\nat com.acme.Main.run(Main.java:7)"
    assert [f.path for f in QueryDecomposer.frames(java)] == ["Ledger.java", "Main.java"]  # innermost first already
    assert _decompose("refund crashes on archived accounts") == []  # no traceback: not split
    assert _decompose(REPORT.split("Traceback")[0] * 3) == []  # issue-length prose without frames: nothing either
    assert [s.kind for s in _decompose(pytest_style)] == [SubQueryKind.FRAME]  # short but a trace
    assert _decompose(REPORT, enabled=False) == [] and _decompose(REPORT, frame_weight=0.0) == []


def test_the_kinds_left_off_are_gone_from_the_config():
    for key in ("weights={frame: 2.0}", "strategies={}", "routes={}", "min_query_chars=300"):
        with pytest.raises(ConfigError, match=r"planning\.decompose: unknown key"):
            load_config(None, [f"planning.decompose.{key}"])
    assert load_config(None, ["planning.decompose.frame_weight=1.0"]).planning.decompose.frame_weight == 1.0


def test_frame_paths_match_indexed_files_by_trailing_segments():
    index = PathSuffixIndex(["ledger/postings.py", "ledger/api.py", "tools/api.py", "api.py"])
    assert index.match("/opt/venv/site-packages/ledger/postings.py", 2) == ["ledger/postings.py"]
    assert index.match("/usr/lib/python3.11/json/api.py", 2) == []  # one shared segment is not enough
    assert index.match("api.py", 2) == ["api.py", "ledger/api.py", "tools/api.py"]  # a bare name: all (<= 3)


def test_merge_folds_direct_lists_into_voters_and_keeps_untouched_strategies():
    merger = ListMerger(PlanningConfig(decompose=DecomposeConfig(frame_weight=MAIN_WEIGHT)))  # equal weights
    main = {"vector": [("a", 1), ("b", 2)], "symbol": [("s", 1)]}
    frame = SubQueryLists(SubQueryKind.FRAME, "x.py:1", {DIRECT: [("b", 1), ("c", 2)]})
    merged = merger.merge(main, [frame])
    assert merged["symbol"] == main["symbol"]
    assert [c for c, _ in merged["vector"]] == ["b", "a", "c"]  # b: main 2 + frame 1 beats a: main 1
    assert merger.merge(main, []) == main


LEDGER = {
    "ledger/__init__.py": "",
    "ledger/api.py": "from ledger.postings import apply_entry\n\n\n"
                     "def post_batch(rows):\n    \"\"\"Post every row of a batch.\"\"\"\n"
                     "    return [apply_entry(row) for row in rows]\n",
    "ledger/postings.py": "BALANCES = {}\n\n\n"
                          "def apply_entry(row):\n    balance = BALANCES[row['account']]\n"
                          "    return balance + row['amount']\n",
    "ledger/accounts.py": "class AccountRegistry:\n    \"\"\"Accounts, archived or not: a refund is posted to an account.\"\"\"\n\n"
                          "    def archived(self, account):\n        return account.endswith('-old')\n\n"
                          "    def refund(self, account, amount):\n        \"\"\"Post a refund; archived accounts crash.\"\"\"\n"
                          "        return -amount\n",
    "ledger/report.py": "def batch_report(batch):\n    \"\"\"A refund batch crashed: print every refund of the batch.\"\"\"\n"
                        "    return '\\n'.join(str(row) for row in batch)\n",
}


@pytest.fixture(scope="module")
def ledger_index(tmp_path_factory):
    from pipelines.indexer import Indexer

    repo = one_commit_repo(tmp_path_factory.mktemp("ledger") / "repo", LEDGER)
    root = tmp_path_factory.mktemp("ledger-index")
    config = make_config(root, "token_vectors.enabled=false")
    Indexer(config, progress=False).index(str(repo), R, "HEAD")
    return root


def _search(root: Path, query: str, *overrides: str):
    from serving.pipeline import SearchPipeline, SearchRequest

    config = make_config(root, "token_vectors.enabled=false", "late_interaction.enabled=false", *overrides)
    return SearchPipeline(config).search(SearchRequest(query=query, k=5))


def test_traceback_frame_file_ranks_first_and_plan_records_sub_queries(ledger_index):
    assert [s["kind"] for s in _search(ledger_index, REPORT).plan["sub_queries"]] == ["frame"]  # the default
    # planning's own order: the localizer's dense channel, which re-ranks functions and files after it by their
    # cosine to the report (its own test), is left out
    on = _search(ledger_index, REPORT, "localizer.dense_model=")
    assert not on.degraded
    assert on.files[0]["path"] == "ledger/postings.py"
    assert on.functions[0]["function"] == "ledger/postings.py::apply_entry"
    assert [s["kind"] for s in on.plan["sub_queries"]] == ["frame"]
    frame = on.plan["sub_queries"][0]
    assert frame["hits"] == {"direct": 2}  # postings.py and api.py; the user's nightly.py is not indexed
    assert "planning" in on.timings_ms


def test_switch_off_answers_as_before(ledger_index):
    off = _search(ledger_index, REPORT, "planning.decompose.enabled=false")
    assert not (off.plan or {}).get("sub_queries")  # the planner's mode may be recorded; no sub-queries
    assert off.files[0]["path"] != "ledger/postings.py"  # without the frames the words point elsewhere
    short_on = _search(ledger_index, "post a refund")  # no frames: planning does nothing
    short_off = _search(ledger_index, "post a refund", "planning.decompose.enabled=false")
    assert not (short_on.plan or {}).get("sub_queries")
    assert [h.chunk_id for h in short_on.hits] == [h.chunk_id for h in short_off.hits]
    assert short_on.files == short_off.files and short_on.functions == short_off.functions


def test_mined_plan_lists_replay_what_the_pipeline_answered(ledger_index, tmp_path):
    """`mine` keeps each sub-query's lists; `eval localize` replays decomposition on and off exactly."""
    from jobs.eval.instances import Instance
    from jobs.eval.mine import HitMiner
    from jobs.eval.replay import LocalizationReplay
    from serving.pipeline import SearchPipeline

    overrides = ("token_vectors.enabled=false", "late_interaction.enabled=false")
    overrides = (*overrides, "localizer.enabled=false")  # its replay reads a bare clone (jobs/localizer/replay.py)
    config = make_config(ledger_index, *overrides)
    HitMiner(MineConfig(), tmp_path).mine(SearchPipeline(config), "ledger-1", REPORT, R, "swebench",
                                               lambda path, symbol: int(path == "ledger/postings.py"))
    inst = Instance("ledger-1", R, "HEAD", REPORT, ["ledger/postings.py"])
    for switch in ("true", "false"):
        planning = (f"planning.decompose.enabled={switch}",)
        replayed = LocalizationReplay(make_config(ledger_index, *overrides, *planning), tmp_path).predict(inst)
        answered = _search(ledger_index, REPORT, *planning, "localizer.enabled=false")
        assert replayed.files == [f["path"] for f in answered.files]
        assert replayed.functions == [f["function"] for f in answered.functions]


def test_conf_names_are_checked_against_the_retriever_registry():
    with pytest.raises(ConfigError, match=r"planning\.decompose\.direct_into: unknown strategy 'vectr'.*vector"):
        ListMerger(PlanningConfig(decompose=DecomposeConfig(direct_into=["vectr"])))
    # a registered retriever that owns no fusion feature (history) takes the frame list like a built-in
    config = PlanningConfig(decompose=DecomposeConfig(frame_weight=MAIN_WEIGHT, direct_into=["History"]))
    main = {"history": [("a", 1), ("b", 2)], "symbol": [("s", 1)]}
    frame = SubQueryLists(SubQueryKind.FRAME, "x.py:1", {DIRECT: [("b", 1)]})
    merged = ListMerger(config).merge(main, [frame])
    assert [c for c, _ in merged["history"]] == ["b", "a"] and merged["symbol"] == main["symbol"]


def test_lists_mined_with_the_kinds_left_off_replay_their_frames_only(tmp_path):
    import polars as pl

    from jobs.eval.plan_lists import PLAN_LISTS_DIR, SCHEMA, SUB, load_plan

    rows = [{"query_id": "q", "source": SUB, "sub_index": index, "kind": kind, "text": kind, "strategy": strategy,
             "rank": 1, "chunk_id": chunk, "path": "a.py", "symbol": "", "chunk_kind": ""}
            for index, kind, strategy, chunk in ((0, "frame", DIRECT, "c1"), (1, "gist", "vector", "c2"))]
    (tmp_path / PLAN_LISTS_DIR).mkdir()
    pl.DataFrame(rows, schema=SCHEMA).write_parquet(tmp_path / PLAN_LISTS_DIR / "q.parquet")
    trace, fields = load_plan(tmp_path, "q.parquet")
    assert [(s.kind, s.lists) for s in trace.sub_queries] == [(SubQueryKind.FRAME, {DIRECT: [("c1", 1)]})]
    assert set(fields) == {"c1", "c2"}
