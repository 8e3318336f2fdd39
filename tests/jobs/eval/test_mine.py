"""Mining labelled fused hits: label rules, the golden miner over a real index, resume, bad input."""

from __future__ import annotations

import polars as pl
import pytest

from jobs.eval.golden import hit_matches, load_golden_set
from jobs.eval.mine import (
    LABEL_COLUMN,
    RANK_COLUMN,
    MineError,
    golden_labeler,
    load_mined,
    part_name,
    swebench_labeler,
)
from semantica.config import MineConfig
from semantica.hits import ABSENT_RANK, FEATURE_NAMES
from tests.conftest import GOLDEN_SET


def test_swebench_labels_grade_function_over_file():
    label = swebench_labeler(["a/models.py"], ["a/models.py::Request.prepare"], MineConfig())
    assert label("a/models.py", "Request.prepare") == 2
    assert label("a/models.py", "Request.prepare.inner") == 2  # nested functions fold into the gold one
    assert label("a/models.py", "Request.prepare_body") == 1  # a prefix is not nesting
    assert label("a/models.py", "") == 1
    assert label("a/sessions.py", "Request.prepare") == 0


def test_golden_labels_follow_the_golden_matching_rule():
    from jobs.eval.golden import GoldenQuery

    label = golden_labeler(GoldenQuery("q", ["x/config.py"], ["y/app.py::serve"]))
    assert label("x/config.py", "anything") == 1
    assert label("y/app.py", "serve") == 1
    assert label("y/app.py", "other") == 0
    assert label("y/app.py", "") == 0


def test_part_names_are_safe_and_distinct():
    first, second = part_name("repo/x#1: who calls a/b?"), part_name("repo/x#1: who calls a/b!")
    assert first != second
    assert "/" not in first and " " not in first and first.endswith(".parquet")


def test_mined_golden_rows_carry_fused_order_labels_and_features(indexed_self, mined_golden):
    frame = load_mined([mined_golden.directory])
    queries = load_golden_set(GOLDEN_SET)
    assert frame["query_id"].n_unique() == len(queries)
    depth = MineConfig().depth
    by_query = {q.query: q for q in queries}
    for (qid,), group in frame.group_by(["query_id"], maintain_order=True):
        assert 0 < group.height <= depth
        assert group[RANK_COLUMN].to_list() == list(range(1, group.height + 1))  # fused order, contiguous
        query = by_query[group["query"][0]]
        for path, symbol, label in group.select("path", "symbol", LABEL_COLUMN).iter_rows():
            assert label == int(bool(hit_matches(path, symbol, query))), (qid, path, symbol)
    assert frame[LABEL_COLUMN].sum() > len(queries)  # most queries find several relevant chunks
    ranks = frame.select([c for c in FEATURE_NAMES if c.startswith("rank_")]).to_numpy()
    assert ((ranks >= 1) & ((ranks <= 100) | (ranks == ABSENT_RANK))).all()
    assert (frame["n_strategies"] >= 1).all() and (frame["n_strategies"] <= 4).all()


def test_mining_again_skips_mined_queries(indexed_self, mined_golden, capsys):
    from jobs.cli import main

    parts = sorted((mined_golden.directory / "parts").glob("*.parquet"))
    stamps = [p.stat().st_mtime_ns for p in parts]
    args = ["mine", "golden", "--golden", str(GOLDEN_SET), "--repo", indexed_self.name,
            "--out", str(mined_golden.directory), "--index-root", str(indexed_self.config.paths.index_root)]
    capsys.readouterr()
    assert main(args) == 0
    assert f"({mined_golden.queries} already mined): 0 rows" in capsys.readouterr().out
    assert [p.stat().st_mtime_ns for p in parts] == stamps


def test_load_mined_errors_say_what_to_run(tmp_path):
    with pytest.raises(MineError, match="semantica mine"):
        load_mined([tmp_path / "absent"])
    (tmp_path / "empty").mkdir()
    with pytest.raises(MineError, match="no mined Parquet"):
        load_mined([tmp_path / "empty"])
    pl.DataFrame({"query_id": ["q"], "label": [1]}).write_parquet(tmp_path / "old.parquet")
    with pytest.raises(MineError, match="lacks column"):
        load_mined([tmp_path / "old.parquet"])


def test_mine_unknown_repo_is_a_clear_cli_error(indexed_self, tmp_path, capsys):
    from jobs.cli import main

    code = main(["mine", "golden", "--golden", str(GOLDEN_SET), "--repo", "no/such-repo", "--out", str(tmp_path),
                 "--index-root", str(indexed_self.config.paths.index_root)])
    assert code == 1
    assert "no/such-repo" in capsys.readouterr().err


def test_mined_lists_hold_every_retrievers_ranking(mined_golden):
    lists = pl.read_parquet(mined_golden.directory / "lists" / "*.parquet")
    assert lists["query_id"].n_unique() == mined_golden.queries
    assert {"vector", "lexical", "symbol", "graph"} >= set(lists["strategy"].unique()) >= {"vector", "lexical"}
    for (_, _), ranked in lists.group_by(["query_id", "strategy"]):
        assert ranked["rank"].sort().to_list() == list(range(1, ranked.height + 1))
        assert ranked["chunk_id"].n_unique() == ranked.height


def test_mine_swebench_mines_without_running_ablations(tmp_path, capsys):
    import json
    import os

    from jobs.cli import main
    from tests.conftest import MIRRORS, REPO_ROOT, shared_cache_dir

    instances = os.environ.get("SEMANTICA_BENCH", str(REPO_ROOT.parent / "shared" / "bench")) + "/swebench_lite_dev.jsonl"
    if not (MIRRORS / "psf+requests" / "repo" / "HEAD").exists() or not os.path.exists(instances):
        pytest.skip(f"SKIPPED LOUDLY: needs the psf/requests clone under {MIRRORS} and {instances}")
    files = ["requests/models.py", "requests/sessions.py", "requests/api.py", "requests/hooks.py"]
    args = ["mine", "swebench", "--instances", instances, "--repos-dir", str(MIRRORS), "--out", str(tmp_path / "m"),
            "--repo-filter", "psf/requests", "--limit", "1", "--quiet", "--index-root", str(tmp_path / "index"),
            "--set", f"paths.cache_dir={shared_cache_dir()}", "--set", f"discover.include_globs={json.dumps(files)}"]
    assert main(args) == 0
    assert "1 instances mined (1 now, 0 already, 0 failed)" in capsys.readouterr().out
    assert len(list((tmp_path / "m" / "parts").glob("*.parquet"))) == 1
    assert len(list((tmp_path / "m" / "lists").glob("*.parquet"))) == 1
    assert [p.name for p in (tmp_path / "m").glob("mine.*")] == ["mine.timings.jsonl"]  # no ablation ran
    frame = load_mined([tmp_path / "m"])
    assert frame[LABEL_COLUMN].max() >= 1 and set(frame["source"]) == {"swebench"}
