"""A flow golden set built with jedi (lab.eval.flow_gold) on a small real repo, scored by `semantica eval flow`."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from jobs.eval.flow import evaluate, load_rows
from lab.eval.flow_gold import build
from semantica.config import load_config
from tests.dated_git import git, one_commit_repo

FILES = {
    "pkg/__init__.py": "",
    "pkg/util.py": "def clean(text):\n    return text.strip()\n\n\ndef shout(text):\n    return clean(text).upper()\n",
    "pkg/core.py": (
        "from pkg import util\nfrom pkg.util import clean\n\n\n"
        "class Greeter:\n    def __init__(self, name):\n        self.name = clean(name)\n\n"
        "    def greet(self):\n        return util.shout(self.name) + self.suffix()\n\n"
        "    def suffix(self):\n        return '!'\n\n\n"
        "def main():\n    g = Greeter(' ann ')\n    return g.greet()\n"
    ),
}


def _bare_repo(tmp_path: Path) -> tuple[Path, str]:
    work = one_commit_repo(tmp_path / "work", FILES)
    commit = git(work, "rev-parse", "HEAD")
    bare = tmp_path / "bare.git"
    subprocess.run(["git", "clone", "-q", "--bare", str(work), str(bare)], check=True)
    return bare, commit



def test_jedi_gold_and_flow_eval_on_a_small_repo(tmp_path: Path) -> None:
    mirror, commit = _bare_repo(tmp_path)
    rows = build(mirror, "t/greet", commit, per_op=10, seed=1)
    gold = {(r["op"], r["target"]): r["gold"] for r in rows}
    assert gold[("callers", "pkg/util.py::clean")] == ["pkg/core.py::Greeter.__init__", "pkg/util.py::shout"]
    assert gold[("callees", "pkg/core.py::Greeter.greet")] == ["pkg/core.py::Greeter.suffix", "pkg/util.py::shout"]
    assert set(gold[("callees", "pkg/core.py::main")]) == {"pkg/core.py::Greeter.__init__", "pkg/core.py::Greeter.greet"}
    path = tmp_path / "flow.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    report = evaluate(load_rows([path]), {"t/greet": mirror}, load_config(None, [], environ={}))
    assert report.by_op["callers"]["recall@10"] == 1.0 and report.by_op["callers"]["mrr"] == 1.0, report.per_query
    assert report.by_op["callees"]["recall@10"] >= 0.9, report.per_query
