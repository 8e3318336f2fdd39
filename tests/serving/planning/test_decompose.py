"""Decomposition (issue 15): sub-queries from a real bug-report-like text, and on a small real index the
traceback frame's file ranks first; with decomposition off, the answer is as before."""

from __future__ import annotations

from pathlib import Path

import pytest

from semantica.config import ConfigError, DecomposeConfig, LtrTrainConfig, PlanningConfig
from serving.core.intent import IntentClassifier
from serving.planning import decompose
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


EVERY_KIND = {kind.value: 0.5 for kind in SubQueryKind}  # the default weighs frames only; these tests split all
EVERY_KIND_SET = "planning.decompose.weights={" + ", ".join(f"{k}: 0.5" for k in EVERY_KIND) + "}"


def _decompose(text: str, **overrides):
    config = DecomposeConfig(**{"weights": dict(EVERY_KIND), **overrides})
    return QueryDecomposer(config).decompose(text, IntentClassifier().classify(text))


def test_bug_report_splits_into_frames_error_paths_identifiers_and_gist():
    subs = {s.kind: s for s in _decompose(REPORT)}
    assert set(subs) == set(SubQueryKind)
    frames = subs[SubQueryKind.FRAME].frames
    assert frames[0] == Frame("/opt/venv/lib/python3.11/site-packages/ledger/postings.py", 5, "apply_entry")  # innermost
    assert [f.function for f in frames] == ["apply_entry", "post_batch", ""]  # <module> names no function
    assert subs[SubQueryKind.ERROR].text == "KeyError: 'acme-17'"
    assert subs[SubQueryKind.PATH].paths == ["docs/ledger.md"]
    assert "AccountRegistry" in subs[SubQueryKind.IDENTIFIERS].text
    gist = subs[SubQueryKind.GIST].text
    assert gist.startswith("Posting a refund crashes") and "post_batch(rows)" not in gist and "BALANCES" not in gist


def test_calls_are_what_the_reports_code_calls_not_its_output_builtins_or_own_names(monkeypatch):
    assert _decompose(REPORT)[4].kind is SubQueryKind.CALLS  # after the frames, error, path and identifiers
    assert {s.kind: s.text for s in _decompose(REPORT)}[SubQueryKind.CALLS] == "post_batch"
    repl = ("The LaTeX printer disagrees with pretty printing for this product of functions here:\n\n"
            "```\nIn [9]: var('x', positive=True)\nOut[9]: x\n\nIn [10]: latex(exp(-x)*log(x))\n"
            "Out[10]: '\\\\frac{1}{e^{x}} \\\\log{\\\\left (x \\\\right )}'\n```\n\n"
            ">>> print(pretty(exp(-x)*log(x)))\n"
            "```python\ndef helper(expr):\n    return expr.rewrite(sin)\nf = helper(x)\nf(2)\n```\n"
            "Both should read the same, shouldn't they? It looks like a plain bug in latex().")
    assert QueryDecomposer.calls(repl) == ["var", "latex", "exp", "log", "pretty", "rewrite"]
    monkeypatch.setattr(decompose, "MAX_CALLS", 2)
    assert {s.kind: s.text for s in _decompose(repl)}[SubQueryKind.CALLS] == "var latex"  # capped
    assert QueryDecomposer.code_lines("Out[3]: frac(x)\nprose with call(x) in it") == []  # neither code nor prompt


def test_pytest_and_java_frames_and_short_queries():
    pytest_style = "src/_pytest/main.py:123: in collect\n    raise Error\nE   ValueError: bad"
    frames = QueryDecomposer.frames(pytest_style)
    assert frames == [Frame("src/_pytest/main.py", 123, "collect")]
    java = "at com.acme.Ledger.post(Ledger.java:42)\nat com.acme.Main.run(Main.java:7)"
    assert [f.path for f in QueryDecomposer.frames(java)] == ["Ledger.java", "Main.java"]  # innermost first already
    assert _decompose("refund crashes on archived accounts") == []  # short, no traceback: not split
    assert [s.kind for s in _decompose(pytest_style)][:2] == [SubQueryKind.FRAME, SubQueryKind.ERROR]  # short but a trace
    assert _decompose(REPORT, enabled=False) == []
    assert [s.kind for s in QueryDecomposer(DecomposeConfig()).decompose(REPORT, IntentClassifier().classify(REPORT))] \
        == [SubQueryKind.FRAME]  # the default: frames only (a zero weight drops a kind before it runs)
    with pytest.raises(ValueError, match="unknown subquerykind 'stack'"):
        QueryDecomposer(DecomposeConfig(weights={"stack": 1.0}))


def test_frame_paths_match_indexed_files_by_trailing_segments():
    index = PathSuffixIndex(["ledger/postings.py", "ledger/api.py", "tools/api.py", "api.py"])
    assert index.match("/opt/venv/site-packages/ledger/postings.py", 2) == ["ledger/postings.py"]
    assert index.match("/usr/lib/python3.11/json/api.py", 2) == []  # one shared segment is not enough
    assert index.match("api.py", 2) == ["api.py", "ledger/api.py", "tools/api.py"]  # a bare name: all (<= 3)


def test_merge_folds_direct_lists_into_voters_and_keeps_untouched_strategies():
    config = PlanningConfig()
    config.decompose.weights["frame"] = MAIN_WEIGHT  # the mechanics at equal weights
    merger = ListMerger(config)
    main = {"vector": [("a", 1), ("b", 2)], "symbol": [("s", 1)]}
    frame = SubQueryLists(SubQueryKind.FRAME, "x.py:1", {DIRECT: [("b", 1), ("c", 2)]})
    merged = merger.merge(main, [frame])
    assert merged["symbol"] == main["symbol"]
    assert [c for c, _ in merged["vector"]] == ["b", "a", "c"]  # b: main 2 + frame 1 beats a: main 1
    assert merger.merge(main, []) == main


def test_routes_send_a_sub_query_list_to_other_strategies_and_reject_unknown_names():
    main = {"lexical": [("a", 1), ("b", 2)], "symbol": [("s", 1)]}
    calls = SubQueryLists(SubQueryKind.CALLS, "latex", {"symbol": [("b", 1)]})
    plain = ListMerger(PlanningConfig(decompose=DecomposeConfig(weights=dict(EVERY_KIND))))
    assert plain.merge(main, [calls])["lexical"] == main["lexical"]  # its own strategy only
    assert plain.merge(main, [calls])["symbol"] != main["symbol"]
    config = PlanningConfig(decompose=DecomposeConfig(weights=dict.fromkeys(EVERY_KIND, MAIN_WEIGHT),
                                                      routes={"calls.symbol": ["lexical"]}))  # equal weights
    routed = ListMerger(config).merge(main, [calls])
    assert [c for c, _ in routed["lexical"]] == ["b", "a"] and routed["symbol"] == main["symbol"]
    for bad, said in (("calls.symbl", "symbl"), ("call.symbol", "call"), ("calls", "''")):
        with pytest.raises(ValueError, match=said):
            ListMerger(PlanningConfig(decompose=DecomposeConfig(routes={bad: ["lexical"]})))


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

    # decomposition alone: the planner's mode weights (lexical-heavy for a traceback) are measured elsewhere;
    # on this four-file repository they tie the outer frame's file with the inner one
    config = make_config(root, "token_vectors.enabled=false", "late_interaction.enabled=false",
                         "planning.modes.apply_to_localize=false", *overrides)
    return SearchPipeline(config).search(SearchRequest(query=query, k=5))


def test_traceback_frame_file_ranks_first_and_plan_records_sub_queries(ledger_index):
    assert [s["kind"] for s in _search(ledger_index, REPORT).plan["sub_queries"]] == ["frame"]  # the default
    # planning's own order: the localizer's dense channel, which re-ranks functions and files after it by their
    # cosine to the report (its own test), is left out
    on = _search(ledger_index, REPORT, EVERY_KIND_SET, "localizer.dense_model=")
    assert not on.degraded
    assert on.files[0]["path"] == "ledger/postings.py"
    assert on.functions[0]["function"] == "ledger/postings.py::apply_entry"
    kinds = [s["kind"] for s in on.plan["sub_queries"]]
    assert kinds[0] == "frame" and "gist" in kinds
    frame = on.plan["sub_queries"][0]
    assert frame["hits"] == {"direct": 2}  # postings.py and api.py; the user's nightly.py is not indexed
    assert "planning" in on.timings_ms


def test_switch_off_answers_as_before(ledger_index):
    off = _search(ledger_index, REPORT, "planning.decompose.enabled=false")
    assert not (off.plan or {}).get("sub_queries")  # the planner's mode may be recorded; no sub-queries
    assert off.files[0]["path"] != "ledger/postings.py"  # without the frames the words point elsewhere
    short_on = _search(ledger_index, "post a refund")  # short: planning does nothing
    short_off = _search(ledger_index, "post a refund", "planning.decompose.enabled=false")
    assert not (short_on.plan or {}).get("sub_queries")
    assert [h.chunk_id for h in short_on.hits] == [h.chunk_id for h in short_off.hits]
    assert short_on.files == short_off.files and short_on.functions == short_off.functions


def test_mined_plan_lists_replay_what_the_pipeline_answered(ledger_index, tmp_path):
    """`mine` keeps each sub-query's lists; `eval localize` replays decomposition on and off exactly."""
    from jobs.eval.instances import Instance
    from jobs.eval.replay import LocalizationReplay
    from jobs.ltr.mine import HitMiner
    from serving.pipeline import SearchPipeline

    overrides = ("token_vectors.enabled=false", "late_interaction.enabled=false", "planning.modes.apply_to_localize=false")
    overrides = (*overrides, EVERY_KIND_SET)  # every kind's retriever lists are mined and replayed
    overrides = (*overrides, "localizer.enabled=false")  # its replay reads a bare clone (jobs/localizer/replay.py)
    config = make_config(ledger_index, *overrides)
    HitMiner(LtrTrainConfig(), tmp_path).mine(SearchPipeline(config), "ledger-1", REPORT, R, "swebench",
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
    # a registered retriever that owns no LTR feature (history) is routed to like a built-in
    config = PlanningConfig(decompose=DecomposeConfig(weights=dict.fromkeys(EVERY_KIND, MAIN_WEIGHT),
                                                      routes={"calls.symbol": ["History"]}))  # equal weights
    main = {"history": [("a", 1), ("b", 2)], "symbol": [("s", 1)]}
    calls = SubQueryLists(SubQueryKind.CALLS, "latex", {"symbol": [("b", 1)]})
    routed = ListMerger(config).merge(main, [calls])
    assert [c for c, _ in routed["history"]] == ["b", "a"] and routed["symbol"] == main["symbol"]
