"""Retrieval-quality regression on real data.

1. The golden set `conf/golden/semantica.jsonl` (hand-labelled queries about this repository) over a
   real index of a fixed subset of this working tree that holds every labelled file (the session's
   `indexed_self`, see tests/conftest.py `self_corpus`): the hybrid pipeline (all four
   retrievers, fusion; late interaction off to keep the test fast on 2 CPU cores - a cold token
   cache costs ~1.5 s per query) and lexical-only must stay above floors set ~10 points under what
   they measured when written (see THRESHOLDS).
2. A SWE-bench smoke run through the real CLI on the first two psf/requests instances (lexical and
   full ablations), restricted to a few files so it stays quick; skipped loudly without the clone.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from jobs.eval.golden import GOLDEN_METRICS, GoldenEval, load_golden_set
from tests.conftest import GOLDEN_SET, MIRRORS, REPO_ROOT, shared_cache_dir

INSTANCES = Path(os.environ.get("SEMANTICA_BENCH", REPO_ROOT.parent / "shared" / "bench")) / "swebench_lite_dev.jsonl"

# Measured when the set was written (38 queries, working tree indexed whole):
#   full-no-late  P@5 .337  R@10 .859  MRR .774  NDCG@10 .665
#   lexical       P@5 .295  R@10 .816  MRR .824  NDCG@10 .714
#   (full with late interaction: .342 / .885 / .814 / .719, not run here: too slow cold)
# Over the fixed subset `indexed_self` now indexes (40 files, every labelled file; fewer distractors):
#   full-no-late  P@5 .410  R@10 .882  MRR .790  NDCG@10 .723
#   lexical       P@5 .384  R@10 .835  MRR .811  NDCG@10 .731
# so the P@5 floors rose to stay ~10 points under; the others already were.
THRESHOLDS = {
    "full-no-late": {"P@5": 0.31, "R@10": 0.76, "MRR": 0.67, "NDCG@10": 0.56},
    "lexical": {"P@5": 0.28, "R@10": 0.65, "MRR": 0.62, "NDCG@10": 0.55},  # wave 3: 0.682 MRR at the corpus of b0fb95a
}
ABLATION_ARGS = {
    "full-no-late": {"strategies": ("vector", "lexical", "symbol", "graph"), "late_interaction": False},
    "lexical": {"strategies": ("lexical",), "late_interaction": False},
}


@pytest.fixture(scope="module")
def pipeline(indexed_self):
    from serving.pipeline import SearchPipeline

    return SearchPipeline(indexed_self.config)


def test_golden_set_is_well_formed_and_covers_every_intent():
    queries = load_golden_set(GOLDEN_SET)
    assert len(queries) >= 30
    counts = {intent: sum(q.intent == intent for q in queries) for intent in ("symbol", "flow", "concept", "code", "balanced")}
    assert min(counts.values()) >= 5, counts


def test_golden_labels_exist_in_the_index(indexed_self, pipeline):
    snapshot = pipeline.snapshots.get(indexed_self.name)
    paths = set(snapshot.chunks_by_path)
    symbols = {f"{c.path}::{c.symbol}" for c in snapshot.chunks if c.symbol}
    for q in load_golden_set(GOLDEN_SET):
        assert set(q.relevant_paths) <= paths, q.query
        assert set(q.relevant_symbols) <= symbols, (q.query, set(q.relevant_symbols) - symbols)


@pytest.mark.parametrize("ablation", list(THRESHOLDS))
def test_golden_metrics_above_floor(indexed_self, pipeline, ablation):
    report = GoldenEval(pipeline, indexed_self.name, **ABLATION_ARGS[ablation]).run(load_golden_set(GOLDEN_SET))
    degraded = [(q["query"], q["degraded"]) for q in report.queries if q["degraded"]]
    assert not degraded, f"a stage failed during the golden run: {degraded[:3]}"
    measured = report.overall
    print(f"\ngolden [{ablation}]\n{report.table()}")
    below = {m: (measured[m], THRESHOLDS[ablation][m]) for m in GOLDEN_METRICS if measured[m] < THRESHOLDS[ablation][m]}
    assert not below, f"{ablation}: below floor (measured, floor): {below}\n{report.table()}"


# -- SWE-bench smoke -------------------------------------------------------------------------------

SMOKE_FILES = ["requests/models.py", "requests/sessions.py", "requests/api.py", "requests/hooks.py"]


@pytest.fixture(scope="module")
def swebench_run(tmp_path_factory):
    if not (MIRRORS / "psf+requests" / "repo" / "HEAD").exists():
        pytest.skip(f"SKIPPED LOUDLY: no psf/requests clone under {MIRRORS} (psf+requests/repo); "
                    "set SEMANTICA_MIRRORS to run the SWE-bench smoke test")
    if not INSTANCES.exists():
        pytest.skip(f"SKIPPED LOUDLY: no benchmark file at {INSTANCES}; set SEMANTICA_BENCH to its directory")
    from jobs.cli import main

    tmp = tmp_path_factory.mktemp("swebench")
    args = ["eval", "swebench", "--instances", str(INSTANCES), "--repos-dir", str(MIRRORS),
            "--out", str(tmp / "pred.jsonl"), "--repo-filter", "psf/requests", "--limit", "2",
            "--ablation", "lexical", "full", "--index-root", str(tmp / "index"), "--quiet", "--mine", str(tmp / "mined"),
            "--set", f"paths.cache_dir={shared_cache_dir()}", "--set", f"discover.include_globs={json.dumps(SMOKE_FILES)}"]
    assert main(args) == 0
    return tmp, args


def test_swebench_smoke_writes_predictions_trec_and_metrics(swebench_run, capsys):
    tmp, _ = swebench_run
    ids = [json.loads(line)["instance_id"] for line in INSTANCES.read_text().splitlines()
           if json.loads(line)["repo"] == "psf/requests"][:2]
    for ablation in ("lexical", "full"):
        rows = [json.loads(line) for line in (tmp / f"pred.{ablation}.jsonl").read_text().splitlines()]
        assert sorted(r["instance_id"] for r in rows) == sorted(ids)
        for row in rows:
            assert 0 < len(row["files"]) <= 50 and len(row["functions"]) <= 50
            assert set(row["files"]) <= set(SMOKE_FILES)  # include_globs reached discovery
            assert all("::" in f and f.split("::")[0] in SMOKE_FILES for f in row["functions"])
            assert len(row["file_scores"]) == len(row["files"])
        trec = (tmp / f"pred.{ablation}.files.trec").read_text().splitlines()
        assert trec and all(len(line.split()) == 6 and line.split()[1] == "Q0" for line in trec)
        first = [line.split() for line in trec if line.startswith(ids[0] + " ")]
        assert [int(f[3]) for f in first] == list(range(1, len(first) + 1))
        assert [float(f[4]) for f in first] == sorted((float(f[4]) for f in first), reverse=True)
    assert (tmp / "pred.files.qrels").read_text().count(" 1\n") >= 2
    metrics = json.loads((tmp / "pred.metrics.json").read_text())
    for ablation in ("lexical", "full"):
        overall = metrics["ablations"][ablation]["overall"]
        assert overall["file"]["n"] == 2 and overall["function"]["n"] == 2
        assert all(0.0 <= v <= 1.0 for k, v in overall["file"].items() if k != "n")
        assert set(metrics["ablations"][ablation]["by_repo"]) == {"psf/requests"}
    # the gold files are among the four indexed files, so the full pipeline ranks them in the top 3
    assert metrics["ablations"]["full"]["overall"]["file"]["Acc@3"] == 1.0
    timing = [json.loads(line) for line in (tmp / "pred.timings.jsonl").read_text().splitlines()]
    assert len(timing) == 2 and all(t["index_s"] > 0 and set(t["query_s"]) == {"lexical", "full", "mine"} for t in timing)


def test_swebench_run_mines_labelled_hits(swebench_run):
    from jobs.eval.mine import LABEL_COLUMN, load_mined

    tmp, _ = swebench_run
    instances = {json.loads(line)["instance_id"]: json.loads(line) for line in INSTANCES.read_text().splitlines()}
    frame = load_mined([tmp / "mined"])
    assert frame["query_id"].n_unique() == 2
    for (qid,), group in frame.group_by(["query_id"]):
        gold = instances[qid]
        labelled = {path for path, label in group.select("path", LABEL_COLUMN).iter_rows() if label > 0}
        assert labelled <= set(gold["gold_files"])  # only hits inside the gold files are relevant
        assert set(group["path"]) & set(gold["gold_files"]), "the gold file is among the four indexed files"
        assert labelled, qid


def test_swebench_resume_skips_done_instances_and_score_command(swebench_run, capsys):
    from jobs.cli import main

    tmp, args = swebench_run
    before = (tmp / "pred.full.jsonl").read_text()
    capsys.readouterr()
    assert main(args) == 0
    assert "(0 run, 2 already done, 0 failed)" in capsys.readouterr().out
    assert (tmp / "pred.full.jsonl").read_text() == before
    assert main(["eval", "score", "--instances", str(INSTANCES), "--pred", str(tmp / "pred.full.jsonl"), "--json"]) == 0
    scored = json.loads(capsys.readouterr().out)
    assert scored["instances"] == 2 and len(scored["missing"]) > 100


def test_localization_replay_reproduces_the_full_run(swebench_run, capsys):
    from jobs.cli import main
    from jobs.eval.instances import load_instances
    from jobs.eval.replay import LocalizationReplay
    from semantica.config import load_config

    tmp, _ = swebench_run
    full = {r["instance_id"]: r for r in map(json.loads, (tmp / "pred.full.jsonl").read_text().splitlines())}
    # the run's settings: the learned localizer ranks the files its snapshot held (the smoke files only)
    replay = LocalizationReplay(load_config(None, [f"discover.include_globs={json.dumps(SMOKE_FILES)}"], environ={}),
                                tmp / "mined", MIRRORS)
    for inst in load_instances(INSTANCES):
        if inst.instance_id in full:
            predicted = replay.predict(inst)
            assert predicted.files == full[inst.instance_id]["files"]
            assert predicted.functions == full[inst.instance_id]["functions"]
    # the CLI replays any other setting, here only the lexical list voting
    capsys.readouterr()
    assert main(["eval", "localize", "--instances", str(INSTANCES), "--mined", str(tmp / "mined"), "--json",
                 "--set", 'query.localize_strategies=["lexical"]']) == 0
    lexical_only = json.loads(capsys.readouterr().out)
    assert lexical_only["instances"] == 2 and lexical_only["by_repo"].keys() == {"psf/requests"}
