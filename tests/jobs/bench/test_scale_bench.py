"""The scale benchmark on a tiny real repository: builds measured from outside, shards forced, queries timed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from jobs.bench import scale
from tests.dated_git import git, one_commit_repo

pytestmark = pytest.mark.timeout(900)

MODULES = {
    f"pkg/{name}.py": (f'"""The {name} helpers of the package, small and plain."""\n\n\n'
                       f'def {name}_total(values):\n    """Add up every value of the {name} list given."""\n'
                       f'    return sum(values)\n\n\n'
                       f'class {name.title()}Ledger:\n    """Keeps the {name} amounts recorded so far."""\n\n'
                       f'    def record(self, amount):\n        return {name}_total([amount])\n')
    for name in ("alpha", "bravo", "charlie", "delta", "echo", "foxtrot")
}
SHORT = ["--set", "encoder.max_length=16"]


def run_bench(tmp_path: Path, *args: str) -> dict:
    repo = one_commit_repo(tmp_path / "repo", MODULES)
    out = tmp_path / "result.json"
    assert scale.main(["--repo", str(repo), "--name", "demo/ledger", "--work", str(tmp_path / "work"),
                       "--out", str(out), *SHORT, *args]) == 0
    result = json.loads(out.read_text())
    assert result["commit"] == git(repo, "rev-parse", "HEAD")
    return result


def test_in_process_build_then_one_and_two_shards(tmp_path: Path) -> None:
    result = run_bench(tmp_path, "--modes", "in_process", "--shards", "1", "2", "--queries", "6")
    corpus = result["corpus"]
    assert corpus["files"] == corpus["python_files"] == len(MODULES)
    assert corpus["lines"] == sum(text.count("\n") for text in MODULES.values())
    assert corpus["bytes"] == sum(len(text.encode()) for text in MODULES.values())

    (build,) = result["builds"]
    assert build["mode"] == "in_process" and build["fresh_cache"]
    assert build["chunks"] == build["chunks_embedded"] > len(MODULES)
    assert build["peak_tree_rss_mb"] >= build["child_maxrss_mb"] > 0
    assert build["cpu_ms_per_chunk"] == round(1000 * build["cpu_s"] / build["chunks"], 1) > 0
    assert build["index_over_corpus"] == round(build["index_bytes"] / corpus["bytes"], 2) > 1

    names = {f"{n}_total" for n in ("alpha", "bravo", "charlie", "delta", "echo", "foxtrot")}
    assert len(result["queries"]) == 6
    assert sum(q in names or q.endswith("Ledger") or q == "record" for q in result["queries"]) == 3
    assert all(q in "\n".join(MODULES.values()) for q in result["queries"])

    one, two = result["shards"]
    assert (one["shards"], two["shards"]) == (1, 2)
    assert one["shards_built"] == {"faiss": 1, "lucene": 1} and two["shards_built"] == {"faiss": 2, "lucene": 2}
    assert one["chunks"] == two["chunks"] == build["chunks"] and one["chunks_embedded"] == 0  # the cache fed them
    for entry in (one, two):
        for late in ("off", "on"):
            timing = entry[f"query_late_{late}"]
            assert timing["n"] == 6 and 0 < timing["p50_ms"] <= timing["p99_ms"]


@pytest.mark.ray
def test_ray_data_build_is_measured_like_the_in_process_one(tmp_path: Path) -> None:
    result = run_bench(tmp_path, "--modes", "ray", "in_process", "--shards", "--queries", "2")
    ray, local = result["builds"]
    assert (ray["mode"], local["mode"]) == ("ray", "in_process") and ray["fresh_cache"] and local["fresh_cache"]
    assert ray["chunks"] == local["chunks"] > len(MODULES)
    assert ray["peak_tree_rss_mb"] > local["child_maxrss_mb"] > 0  # Ray's workers are counted with the driver
    assert result["shards"] == []
