"""`semantica eval flow`: the committed sets on the fetched mirrors (jedi gold on a small repo: tests/lab/eval)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from jobs.eval.flow import evaluate, load_rows
from semantica.config import load_config

REPO_ROOT = Path(__file__).resolve().parents[3]
MIRRORS = Path(os.environ.get("SEMANTICA_MIRRORS", "/work/.mirror"))


# floors a little under the measured Recall@10 (docs/results.md, "Structural questions"): a resolver regression fails
@pytest.mark.parametrize(("name", "floor"), [
    ("click", {"callers": 0.95, "callees": 0.95}),
    ("attrs", {"callers": 0.96, "callees": 0.94}),
    ("rich", {"callers": 0.97, "callees": 0.96}),
])
def test_committed_flow_set_on_the_fetched_mirror(name: str, floor: dict[str, float]) -> None:
    path = REPO_ROOT / "conf" / "golden" / f"flow-{name}.jsonl"
    rows = load_rows([path])
    mirror = MIRRORS / rows[0]["repo"].replace("/", "+") / "repo"
    if not (mirror / "HEAD").exists():
        pytest.skip(f"SKIPPED LOUDLY: no mirror of {rows[0]['repo']} at {mirror} (fetch it, or set SEMANTICA_MIRRORS)")
    report = evaluate(rows, {rows[0]["repo"]: mirror}, load_config(None, [], environ={}))
    for op, minimum in floor.items():
        assert report.by_op[op]["recall@10"] >= minimum, report.by_op
        assert report.by_op[op]["recall@10_capped"] >= report.by_op[op]["recall@10"], report.by_op
