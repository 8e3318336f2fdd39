"""An ADR found at index time binds the backticked names its text gives that the snapshot has, so renaming
the function it tells everyone to use, re-indexing and curating demotes it (it verified nothing before)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from serving.knowledge.after_index import after_index
from serving.knowledge.service import KnowledgeService
from tests.conftest import make_config

pytestmark = pytest.mark.timeout(600)
REPO = "acme/frob"
ADR = ("# Use the frobnicator\n\n## Context\n\nWe built widgets by hand.\n\n## Decision\n\n"
       "Always use `make_frobnicator` from `frob/core.py` to build widgets; never `build by hand`.\n")


def commit(repo: Path, message: str) -> None:
    subprocess.run(["git", "-C", str(repo), "add", "-A"], check=True)
    subprocess.run(["git", "-C", str(repo), "-c", "user.email=t@e", "-c", "user.name=t", "commit", "-qm", message],
                   check=True)


def test_a_rename_demotes_the_adr_that_names_it(tmp_path: Path) -> None:
    from pipelines.indexer import Indexer

    repo = tmp_path / "frob"
    (repo / "docs" / "adr").mkdir(parents=True)
    (repo / "frob").mkdir()
    (repo / "docs" / "adr" / "0001-use-frobnicator.md").write_text(ADR)
    (repo / "frob" / "core.py").write_text("def make_frobnicator():\n    return 'widget'\n")
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    commit(repo, "init")
    config = make_config(tmp_path, "knowledge.curate_after_index=false")
    Indexer(config, progress=False).index(str(repo), REPO)
    after_index(make_config(tmp_path), REPO)
    service = KnowledgeService(config)
    [entry] = service.list([REPO], (), "", 10)
    assert entry.symbols == ["make_frobnicator"] and entry.paths == ["docs/adr/0001-use-frobnicator.md", "frob/core.py"]
    assert entry.verification == "green"

    (repo / "frob" / "core.py").write_text("def build_frobnicator():\n    return 'widget'\n")
    commit(repo, "rename")
    Indexer(config, progress=False).index(str(repo), REPO)
    report = after_index(make_config(tmp_path), REPO)
    after = KnowledgeService(config).base.store(REPO).get(entry.id)
    assert after.verification == "failed" and any("make_frobnicator" in n for n in after.verify_notes)
    assert after.trust < entry.trust
    assert any(c["id"] == entry.id and c["change"] == "demoted" for c in report["changes"])
