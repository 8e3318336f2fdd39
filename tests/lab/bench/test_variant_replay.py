"""Two eval runs scored side by side: only the instances both predicted count, and the second run's difference
from the first is in points."""

from __future__ import annotations

import json
from pathlib import Path

from lab.bench.variant_replay import compare

INSTANCES = (
    {"instance_id": "psf__requests-1", "repo": "psf/requests", "base_commit": "a" * 40, "problem_statement": "redirects",
     "gold_files": ["requests/sessions.py"], "gold_functions": ["requests/sessions.py::SessionRedirectMixin.resolve_redirects"]},
    {"instance_id": "psf__requests-2", "repo": "psf/requests", "base_commit": "b" * 40, "problem_statement": "cookies",
     "gold_files": ["requests/cookies.py"], "gold_functions": []},
)
WRONG = [f"requests/other_{n}.py" for n in range(10)]


def write_run(directory: Path, ablation: str, rows: list[dict]) -> Path:
    """An `eval swebench --out DIR/pred.jsonl` run's prediction file of one ablation; returns the --out path."""
    directory.mkdir(parents=True)
    (directory / f"pred.{ablation}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return directory / "pred.jsonl"


def test_second_run_scored_on_shared_instances_in_points(tmp_path: Path) -> None:
    instances = tmp_path / "dev.jsonl"
    instances.write_text("".join(json.dumps(r) + "\n" for r in INSTANCES))
    first, second = INSTANCES
    reference = write_run(tmp_path / "fp32", "vector", [
        {"instance_id": first["instance_id"], "files": first["gold_files"] + WRONG, "functions": first["gold_functions"]},
        {"instance_id": second["instance_id"], "files": second["gold_files"], "functions": []}])
    other = write_run(tmp_path / "int8", "vector", [  # the gold file only after ten wrong ones: out of the top 10
        {"instance_id": first["instance_id"], "files": WRONG + first["gold_files"], "functions": first["gold_functions"]}])
    entry = compare(instances, {"fp32": reference, "int8": other}, ["vector"])["ablations"]["vector"]
    assert entry["instances"] == [first["instance_id"]]  # the second has no int8 prediction: scored on neither side
    assert entry["fp32"]["overall"]["file"]["Acc@5"] == 1.0 and entry["fp32"]["overall"]["file"]["Acc@10"] == 1.0
    assert entry["int8"]["overall"]["file"]["Acc@10"] == 0.0
    points = entry["int8_minus_fp32_points"]
    assert points["file"]["Acc@5"] == -100.0 and points["file"]["Acc@10"] == -100.0 and points["file"]["MRR"] < 0
    assert points["function"]["Acc@5"] == 0.0  # the same function list on both sides
