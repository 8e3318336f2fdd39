"""Real indexes built in tmp_path for the reliability catalogue: two small repositories, indexed once
per session into a template root; each test gets its own copy to break."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from semantica.config import Config
from tests.conftest import REPO_ROOT, make_config

GIT = ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", "-c", "commit.gpgsign=false"]

ALPHA = {
    "ledger.py": "def parse_alpha_ledger(text):\n    \"\"\"Parse ledger lines into amounts.\"\"\"\n"
                 "    return [int(line) for line in text.splitlines()]\n\n\n"
                 "def total_alpha(amounts):\n    return sum(parse_alpha_ledger(a) for a in amounts)\n",
    "README.md": "# Alpha\n\nThe alpha ledger parses amounts.\n",
}
BETA = {
    "checksum.py": "def compute_beta_checksum(data):\n    \"\"\"A rolling checksum of bytes.\"\"\"\n"
                   "    value = 0\n    for byte in data:\n        value = (value * 31 + byte) % 65521\n    return value\n",
    "README.md": "# Beta\n\nBeta computes checksums.\n",
}


def git(repo: Path, *args: str) -> None:
    subprocess.run([*GIT, *args], cwd=repo, check=True, capture_output=True)


def make_repo(root: Path, files: dict[str, str | bytes]) -> Path:
    root.mkdir(parents=True)
    for name, data in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data if isinstance(data, bytes) else data.encode())
    git(root, "init", "-q")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "init")
    return root


def cli(*args: str, env: dict[str, str] | None = None, **kwargs) -> subprocess.CompletedProcess:
    """`semantica ARGS` in a fresh process (what a user runs)."""
    full_env = {**os.environ, "PYTHONPATH": str(REPO_ROOT), **(env or {})}
    return subprocess.run([sys.executable, "-m", "jobs.cli", *args], cwd=REPO_ROOT, env=full_env,
                          capture_output=True, text=True, **kwargs)


@dataclass
class TwoRepos:
    """An index root holding `alpha` and `beta` (real snapshots), and the checkouts they came from."""

    config: Config
    root: Path
    alpha: Path
    beta: Path

    def snapshot_dir(self, repo: str) -> Path:
        from semantica.layout import IndexLayout

        return IndexLayout(self.root).current(repo).root


@pytest.fixture(scope="session")
def two_repos_template(tmp_path_factory) -> TwoRepos:
    from pipelines.indexer import Indexer

    base = tmp_path_factory.mktemp("reliability")
    alpha, beta = make_repo(base / "src" / "alpha", ALPHA), make_repo(base / "src" / "beta", BETA)
    config = make_config(base)
    indexer = Indexer(config, progress=False)
    indexer.index(str(alpha), "alpha")
    indexer.index(str(beta), "beta")
    return TwoRepos(config, Path(config.paths.index_root), alpha, beta)


@pytest.fixture()
def two_repos(two_repos_template, tmp_path) -> TwoRepos:
    """A private copy of the template index root (so a test may corrupt it)."""
    root = tmp_path / "index"
    shutil.copytree(two_repos_template.root, root)
    config = make_config(tmp_path, f"paths.cache_dir={two_repos_template.config.paths.cache_dir}")
    assert Path(config.paths.index_root) == root
    return TwoRepos(config, root, two_repos_template.alpha, two_repos_template.beta)
