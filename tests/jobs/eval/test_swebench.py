"""The eval job's plumbing without indexing: inputs, repository lookup, output files, resumption, golden scoring."""

from __future__ import annotations

import json
import math
import subprocess
from pathlib import Path

import pytest

from jobs.commands.eval import EVAL_DEFAULTS, apply_eval_defaults
from jobs.eval.golden import GoldenQuery, GoldenSetError, load_golden_set, score_hits
from jobs.eval.instances import (
    EvalError,
    Instance,
    commit_times,
    find_repo,
    load_instances,
    order_instances,
    source_globs,
)
from jobs.eval.metrics import Prediction
from jobs.eval.outputs import OutputPaths, load_predictions, repair_jsonl, write_qrels, write_trec_run
from jobs.eval.swebench import ABLATIONS, by_language, parse_ablations
from jobs.eval.tables import ablation_table, score_predictions
from semantica.config import load_config

GIT = ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", "-c", "commit.gpgsign=false"]


def _instance(iid: str, repo: str = "o/r", commit: str = "c" * 40, **gold) -> dict:
    return {"instance_id": iid, "repo": repo, "base_commit": commit, "problem_statement": "it breaks", **gold}


def test_load_instances_and_errors(tmp_path):
    good = tmp_path / "i.jsonl"
    good.write_text(json.dumps(_instance("a", gold_files=["x.py"])) + "\n\n" + json.dumps(_instance("b")) + "\n")
    loaded = load_instances(good)
    assert [i.instance_id for i in loaded] == ["a", "b"] and loaded[1].gold_functions == []
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps(_instance("a")) + "\n{not json\n")
    with pytest.raises(EvalError, match=r"bad.jsonl:2: not valid JSON"):
        load_instances(bad)
    bad.write_text(json.dumps({"instance_id": "a", "repo": "o/r"}) + "\n")
    with pytest.raises(EvalError, match="missing field"):
        load_instances(bad)
    bad.write_text(json.dumps(_instance("a")) + "\n" + json.dumps(_instance("a")) + "\n")
    with pytest.raises(EvalError, match="duplicate"):
        load_instances(bad)
    with pytest.raises(EvalError, match="does not exist"):
        load_instances(tmp_path / "absent.jsonl")


def _git_repo(path: Path, commits: int = 2) -> list[str]:
    path.mkdir(parents=True)
    subprocess.run([*GIT, "init", "-q", str(path)], check=True)
    shas = []
    for n in range(commits):
        (path / "m.py").write_text(f"x = {n}\n")
        subprocess.run([*GIT, "-C", str(path), "add", "."], check=True)
        subprocess.run([*GIT, "-C", str(path), "commit", "-q", "-m", str(n), "--date", f"{1_600_000_000 + n * 100} +0000"],
                       check=True, env={"GIT_COMMITTER_DATE": f"{1_600_000_000 + n * 100} +0000", "PATH": "/usr/bin:/bin"})
        shas.append(subprocess.run(["git", "-C", str(path), "rev-parse", "HEAD"], capture_output=True, text=True,
                                   check=True).stdout.strip())
    return shas


def test_multi_swe_bench_lines_load_with_their_language_and_literal_gold_lists(tmp_path):
    """Multi-SWE-bench writes gold lists as a string holding a list literal and names each instance's language:
    read as a plain list, "['lib/utils.js']" would be 15 one-character 'paths' and no file could ever match."""
    path = tmp_path / "mswe.jsonl"
    path.write_text(json.dumps(_instance("axios", gold_files="['index.d.ts', 'lib/utils.js']", gold_functions="[]",
                                         language="javascript")) + "\n"
                    + json.dumps(_instance("swe", gold_files=["x.py"])) + "\n")
    axios, swe = load_instances(path)
    assert axios.gold_files == ["index.d.ts", "lib/utils.js"] and axios.gold_functions == []
    assert axios.language == "javascript" and swe.language == "python"
    path.write_text(json.dumps(_instance("bad", gold_files="__import__('os').system('true')")) + "\n")
    with pytest.raises(EvalError, match="gold_files: not a list literal"):
        load_instances(path)


def test_source_globs_index_each_benchmark_language_from_the_language_table():
    assert source_globs(["python"]) == ["*.py"]  # SWE-bench as before: no stubs
    mixed = source_globs(["go", "javascript", "rust", "java", "cpp"])
    for glob in ("*.go", "go.mod", "*.js", "*.ts", "*.tsx", "*.rs", "*.java", "*.cpp", "*.h"):
        assert glob in mixed
    assert "*.py" not in mixed and "*.md" not in mixed
    with pytest.raises(EvalError, match="no language-table row"):
        source_globs(["cobol"])


def test_metrics_by_language():
    instances = [Instance("g", "o/g", "c", "q", ["a.go"], language="go"),
                 Instance("r", "o/r", "c", "q", ["b.rs"], language="rust"),
                 Instance("r2", "o/r", "c", "q", ["c.rs"], language="rust")]
    preds = {"g": Prediction(["a.go"], []), "r": Prediction(["x.rs", "b.rs"], []), "r2": Prediction([], [])}
    table = by_language(preds, {i.instance_id: i.gold() for i in instances}, instances)
    assert table["go"]["instances"] == 1 and table["go"]["file"]["Acc@1"] == 1.0
    assert table["rust"]["instances"] == 2 and table["rust"]["file"]["Acc@1"] == 0.0
    assert table["rust"]["file"]["Acc@3"] == 0.5


def test_find_repo_layouts_and_clear_error(tmp_path):
    _git_repo(tmp_path / "o+r" / "repo", 1)
    assert find_repo(tmp_path, "o/r") == tmp_path / "o+r" / "repo"
    _git_repo(tmp_path / "p__q", 1)
    assert find_repo(tmp_path, "p/q") == tmp_path / "p__q"
    _git_repo(tmp_path / "plain", 1)
    assert find_repo(tmp_path, "someone/plain") == tmp_path / "plain"
    (tmp_path / "empty+dir").mkdir()
    with pytest.raises(EvalError) as err:
        find_repo(tmp_path, "empty/dir")
    message = str(err.value)
    assert "no git clone of empty/dir" in message
    for tried in ("empty+dir/repo", "empty+dir", "empty__dir", "/dir"):
        assert tried in message


def test_instances_are_grouped_by_repo_and_ordered_by_commit_date(tmp_path):
    old, new = _git_repo(tmp_path / "o+r" / "repo", 2)
    assert commit_times(tmp_path / "o+r" / "repo", [new, old, "0" * 40]) == {old: 1_600_000_000, new: 1_600_000_100}
    other = _git_repo(tmp_path / "o+s" / "repo", 1)[0]
    insts = [Instance("r-new", "o/r", new, "q"), Instance("s-1", "o/s", other, "q"), Instance("r-old", "o/r", old, "q")]
    paths = {"o/r": tmp_path / "o+r" / "repo", "o/s": tmp_path / "o+s" / "repo"}
    assert [i.instance_id for i in order_instances(insts, paths)] == ["r-old", "r-new", "s-1"]


def test_ablations_parse():
    assert [a.name for a in parse_ablations(None)] == list(ABLATIONS)
    assert [a.name for a in parse_ablations(["full", "lexical", "full"])] == ["full", "lexical"]
    assert ABLATIONS["lexical"].strategies == ("lexical",) and ABLATIONS["lexical"].late_interaction is False
    assert ABLATIONS["full-no-graph"].late_interaction and "graph" not in ABLATIONS["full-no-graph"].strategies
    with pytest.raises(EvalError, match="unknown ablation"):
        parse_ablations(["bm42"])


def test_output_paths():
    paths = OutputPaths(Path("runs/pred.jsonl"))
    assert paths.predictions("full") == Path("runs/pred.full.jsonl")
    assert paths.trec("lexical+vector", "files") == Path("runs/pred.lexical+vector.files.trec")
    assert paths.qrels("functions") == Path("runs/pred.functions.qrels")
    assert paths.metrics == Path("runs/pred.metrics.json")
    assert OutputPaths(Path("out")).metrics == Path("out.metrics.json")


def test_repair_jsonl_drops_a_torn_line(tmp_path):
    path = tmp_path / "p.jsonl"
    path.write_text('{"instance_id": "a"}\n{"instance_id": "b"}\n{"instance_')
    assert [r["instance_id"] for r in repair_jsonl(path)] == ["a", "b"]
    assert path.read_text() == '{"instance_id": "a"}\n{"instance_id": "b"}\n'
    assert repair_jsonl(tmp_path / "absent.jsonl") == []


def test_trec_run_and_qrels(tmp_path):
    rows = [{"instance_id": "q1", "files": ["a.py", "b c.py", "d.py"], "file_scores": [0.5, 0.7, 0.1]},
            {"instance_id": "q2", "files": [], "file_scores": []}]
    write_trec_run(tmp_path / "run", rows, "files", "sem")
    lines = [line.split() for line in (tmp_path / "run").read_text().splitlines()]
    assert [line[2] for line in lines] == ["a.py", "b%20c.py", "d.py"]
    scores = [float(line[4]) for line in lines]
    assert scores == sorted(scores, reverse=True) and len(set(scores)) == 3  # forced strictly decreasing
    assert {line[5] for line in lines} == {"sem"} and [line[3] for line in lines] == ["1", "2", "3"]
    write_qrels(tmp_path / "qrels", [Instance("q1", "o/r", "c", "q", ["a.py"], ["a.py::f"])], "functions")
    assert (tmp_path / "qrels").read_text() == "q1 0 a.py::f 1\n"


def test_score_predictions_and_table(tmp_path):
    pred = tmp_path / "pred.jsonl"
    pred.write_text(json.dumps({"instance_id": "a", "files": ["x.py"], "functions": ["x.py::F.__init__"]}) + "\n"
                    + json.dumps({"instance_id": "zzz", "files": [], "functions": []}) + "\n")
    insts = [Instance("a", "o/r", "c", "q", ["x.py"], ["x.py::F"]), Instance("b", "o/r", "c", "q", ["y.py"], [])]
    result = score_predictions(insts, pred)
    assert result["instances"] == 1 and result["missing"] == ["b"] and result["unknown_ids"] == ["zzz"]
    assert result["overall"]["function"]["Acc@5"] == 1.0  # `.__init__` folded
    assert score_predictions(insts, pred, missing_as_empty=True)["overall"]["file"]["Acc@1"] == 0.5
    table = ablation_table({"ablations": {"lexical": result}})
    assert table.splitlines()[2].startswith("| lexical | 100.0 | 100.0 | 100.0 | 100.0 | 100.0 | 1 |")
    with pytest.raises(EvalError):
        load_predictions(tmp_path / "absent.jsonl")


def test_eval_defaults_respect_explicit_values():
    config = apply_eval_defaults(load_config(None, environ={}))
    assert config.paths.index_root == EVAL_DEFAULTS["paths.index_root"]
    assert config.discover.include_globs == ["*.py"] and config.index.keep_snapshots == 1
    go = apply_eval_defaults(load_config(None, environ={}), languages={"go"})
    assert go.discover.include_globs == ["*.go", "go.mod"]
    explicit = load_config(None, ["paths.cache_dir=/x", "discover.include_globs=['*.md']"], environ={})
    config = apply_eval_defaults(explicit, {"paths.cache_dir", "discover.include_globs"})
    assert config.paths.cache_dir == "/x" and config.discover.include_globs == ["*.md"]


def test_golden_set_validation(tmp_path):
    path = tmp_path / "g.jsonl"
    path.write_text('// comment\n{"query": "q", "relevant_paths": ["a.py"], "intent": "flow"}\n')
    assert load_golden_set(path) == [GoldenQuery("q", ["a.py"], [], "flow")]
    for line, message in [
        ('{"query": "", "relevant_paths": ["a.py"]}', "non-empty"),
        ('{"query": "q"}', "at least one"),
        ('{"query": "q", "relevant_symbols": ["f"]}', "path::Qualified.name"),
        ('{"query": "q", "relevant_paths": ["a"], "intent": "vibes"}', "intent"),
        ('{"query": "q", "relevant_paths": ["a"], "extra": 1}', "unknown key"),
        ("[1]", "expected an object"),
    ]:
        path.write_text(line + "\n")
        with pytest.raises(GoldenSetError, match=message):
            load_golden_set(path)


def test_golden_scores_hand_computed():
    q = GoldenQuery("q", relevant_paths=["a.py"], relevant_symbols=["b.py::f"])
    hits = [("c.py", "g"), ("a.py", "x"), ("a.py", "y"), ("b.py", "f"), ("d.py", "")]
    scores = score_hits(hits, q)
    assert scores["P@5"] == pytest.approx(3 / 5)
    assert scores["R@10"] == 1.0 and scores["MRR"] == 0.5
    # new items at ranks 2 and 4; the ideal covers both at ranks 1 and 2
    assert scores["NDCG@10"] == pytest.approx((1 / math.log2(3) + 1 / math.log2(5)) / (1 + 1 / math.log2(3)))
    assert score_hits([], q) == {"P@5": 0.0, "R@10": 0.0, "MRR": 0.0, "NDCG@10": 0.0}


def _fake_metrics(tmp_path: Path) -> Path:
    level = {"file": {"n": 2, "Acc@1": 0.5, "Acc@3": 1.0, "Acc@5": 1.0, "Recall@5": 1.0, "MRR": 0.75, "NDCG@10": 0.8},
             "function": {"n": 1, "Acc@5": 1.0, "Acc@10": 1.0, "Recall@10": 1.0, "MRR": 0.5, "NDCG@10": 0.6}}
    result = {"overall": level, "by_repo": {"o/r": level, "o/s": level}, "instances": 2, "missing": []}
    path = tmp_path / "pred.metrics.json"
    path.write_text(json.dumps({"instances": 2, "ablations": {"lexical": result, "full": result}}))
    return path


def test_report_png_from_metrics(tmp_path):
    pytest.importorskip("matplotlib", reason="matplotlib is not installed: the report PNG cannot be drawn")
    from jobs.cli import main

    png = tmp_path / "out" / "eval.png"
    assert main(["eval", "report", "--metrics", str(_fake_metrics(tmp_path)), "--png", str(png)]) == 0
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 10_000


def test_report_errors_are_one_line(tmp_path, capsys):
    from jobs.cli import main

    assert main(["eval", "report", "--metrics", str(tmp_path / "absent.json"), "--png", str(tmp_path / "x.png")]) == 1
    assert "does not exist" in capsys.readouterr().err
    from jobs.eval.report import load_metrics, repo_bars, table_rows

    report = load_metrics(_fake_metrics(tmp_path))
    header, rows = table_rows(report)
    assert header[0] == "ablation" and rows[0][:3] == ["lexical", "50.0", "100.0"]
    assert repo_bars(report) == (["lexical", "full"], ["o/r", "o/s"], {"o/r": [100.0, 100.0], "o/s": [100.0, 100.0]})
