"""The freshness tests' repository: a small real git working tree with one commit."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.semantica.ondisk.test_freshness import FILES, git


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    for name, text in FILES.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    subprocess.run(["git", "init", "-q", "-b", "main", str(root)], check=True)
    git(root, "add", "-A")
    git(root, "commit", "-qm", "init")
    return root
