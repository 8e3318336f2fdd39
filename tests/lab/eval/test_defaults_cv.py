"""The corpus set and the defaults' leave-one-repository-out replay, on two tiny real git repositories."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import polars as pl
import pytest

from jobs.eval.instances import Instance, load_instances
from jobs.eval.mine import LISTS_DIR, part_name
from lab.eval.corpus_set import build, densest_window, load_commits
from lab.eval.defaults_cv import SETTINGS, Setting, run, table

CODE = "def {name}(value):\n    return value\n"


T0 = 1_700_000_000
DAY = 86400


def _git(work: Path, *args: str, when: int = T0) -> str:
    env = {**os.environ, "GIT_AUTHOR_DATE": f"@{when} +0000", "GIT_COMMITTER_DATE": f"@{when} +0000"}
    return subprocess.run(["git", "-C", str(work), "-c", "user.name=t", "-c", "user.email=t@example.com", *args],
                          check=True, capture_output=True, text=True, env=env).stdout.strip()


def _repo(root: Path, repo: str) -> list[dict]:
    """A bare clone with four commits (the third adds a file); corpus rows for the last three."""
    work = root / "work" / repo.replace("/", "+")
    work.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(work)], check=True)
    (work / "pkg").mkdir()
    (work / "tests").mkdir()
    (work / "pkg/core.py").write_text(CODE.format(name="parse"))
    (work / "tests/test_core.py").write_text(CODE.format(name="test_parse"))
    _git(work, "add", "-A")
    _git(work, "commit", "-qm", "start", when=T0 - DAY)
    rows = []
    for step, (path, name) in enumerate([("pkg/core.py", "render"), ("pkg/extra.py", "extra"), ("pkg/core.py", "load")]):
        parent = _git(work, "rev-parse", "HEAD")
        file = work / path
        file.write_text((file.read_text() if file.exists() else "") + "\n\n" + CODE.format(name=name))
        _git(work, "add", "-A")
        _git(work, "commit", "-qm", f"fix {name}", when=T0 + DAY * step)
        sha = _git(work, "rev-parse", "HEAD")
        rows.append({"repo": repo, "sha": sha, "parent": parent, "time": T0 + DAY * step,
                     "kind": "fixes", "query": f"{name} breaks on empty input",
                     "files": [path], "functions": [f"{path}::{name}"]})
    subprocess.run(["git", "clone", "-q", "--bare", str(work), str(root / "repos" / repo.replace("/", "+") / "repo")],
                   check=True)
    return rows


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    root = tmp_path_factory.mktemp("defaults")
    (root / "corpus").mkdir()
    for repo in ("acme/alpha", "acme/beta"):
        rows = _repo(root, repo)
        (root / "corpus" / f"{repo.replace('/', '+')}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return root


def test_set_answers_every_commit_on_the_oldest_parent_and_drops_gold_from_the_future(corpus):
    commits = load_commits(corpus / "corpus", "acme/alpha")
    assert [c.time for c in commits] == sorted(c.time for c in commits)
    assert densest_window(commits, 2) == commits[1:]  # equal spans: the newest run wins
    rows = build(corpus / "corpus", corpus / "repos", ["acme/alpha"], per_snapshot=3)
    assert {r["base_commit"] for r in rows} == {commits[0].parent}  # one snapshot: the oldest commit's parent
    # pkg/extra.py did not exist at the snapshot: that commit has no reachable gold and is dropped
    assert [r["gold_files"] for r in rows] == [["pkg/core.py"], ["pkg/core.py"]]
    assert rows[-1]["staleness_days"] == 3.0  # days from the snapshot to the commit


def test_refuses_a_benchmark_repository(corpus):
    with pytest.raises(ValueError, match="sympy"):
        build(corpus / "corpus", corpus / "repos", ["sympy/sympy"], per_snapshot=3)


def _store_lists(mined: Path, inst: Instance) -> None:
    """Lists as `mine swebench` stores them: five test files rank first in both retrievers, the gold sixth."""
    gold = inst.gold_files[0]
    rows = [(s, r, f"{s}-t{r}", f"tests/test_core{r}.py", "test_parse", "function")
            for s in ("vector", "lexical") for r in range(1, 6)]
    rows += [(s, 6, f"{s}-g", gold, inst.gold_functions[0].split("::")[1], "function") for s in ("vector", "lexical")]
    (mined / LISTS_DIR).mkdir(parents=True, exist_ok=True)
    pl.DataFrame(rows, schema=["strategy", "rank", "chunk_id", "path", "symbol", "kind"], orient="row") \
        .write_parquet(mined / LISTS_DIR / part_name(inst.instance_id))


def test_replay_chooses_test_damping_in_every_fold(corpus, tmp_path):
    rows = build(corpus / "corpus", corpus / "repos", ["acme/alpha", "acme/beta"], per_snapshot=3)
    (tmp_path / "set.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    instances = load_instances(tmp_path / "set.jsonl")
    for inst in instances:
        _store_lists(tmp_path / "mined", inst)
    damping = next(s for s in SETTINGS if s.name == "test-file damping")
    report = run(instances, str(tmp_path / "mined"), [damping, Setting("no-op", (("a", ()), ("b", ())))],
                 base=[f"paths.cache_dir={tmp_path / 'cache'}", "localizer.learned_files=false"],  # candidates-first:
                 repos_dir=str(corpus / "repos"))  # the learned file ranking alone would drop today's (damped) order
    section = report["settings"]["test-file damping"]
    assert section["alternatives"]["1.0 (none)"]["file"]["Acc@5"] == 0.0  # the test files stay ahead
    assert section["alternatives"]["0.5"]["file"]["Acc@1"] == 1.0
    assert section["loro"]["chosen_per_fold"] == {"acme/alpha": "0.5", "acme/beta": "0.5"}
    assert section["loro"]["agreement"] == 1.0 and section["loro"]["held_out"]["file"]["Acc@1"] == 1.0
    assert report["settings"]["no-op"]["loro"]["best_on_all"] == "a"  # a tie keeps the simpler alternative
    assert section["touched"] == len(instances) and report["settings"]["no-op"]["touched"] == 0
    assert "**LORO**" in table(report)
