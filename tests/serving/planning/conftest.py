"""A small real repository with two commits a few years apart, indexed once for the planning tests."""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

from semantica.config import Config
from tests.conftest import WITHOUT_TOKEN_VECTORS, make_config

PLANNING_REPO = "acme/shop"
OLD_DATE = "2020-01-01T12:00:00+00:00"
NEW_DATE = "2024-06-01T12:00:00+00:00"
SLUGIFY = ('def slugify(text):\n    """Lowercase words joined by dashes, for URLs."""\n'
           '    words = [w for w in text.lower().split() if w.isalnum()]\n    return "-".join(words)\n')
FILES = {
    "app/models.py": 'class Ledger:\n    """Keeps the amounts a customer paid."""\n\n'
                     '    def __init__(self):\n        self.amounts = []\n\n'
                     '    def record(self, amount):\n        self.amounts.append(amount)\n        return self.total()\n\n'
                     '    def total(self):\n        return sum(self.amounts)\n',
    "app/service.py": 'from app.models import Ledger\n\n\n'
                      'def checkout(cart):\n    """Charge the cart and record the payment in the ledger."""\n'
                      '    ledger = Ledger()\n    for price in cart:\n        ledger.record(price)\n'
                      '    return ledger.total()\n',
    "app/api.py": 'from app.service import checkout\n\n\n'
                  'def handle_request(body):\n    """HTTP entry point: checkout the posted cart."""\n'
                  '    return {"total": checkout(body["cart"])}\n',
    "app/util.py": SLUGIFY,
    "app/text.py": SLUGIFY,
    "legacy/deprecated_checkout.py": 'from app.models import Ledger\n\n\n'
                                     'def checkout_cart(cart):\n    """Old checkout: charge the cart and record the payment."""\n'
                                     '    ledger = Ledger()\n    for price in cart:\n        ledger.record(price)\n'
                                     '    return ledger.total()\n',
}


@dataclass
class PlanningRepo:
    config: Config
    name: str
    path: Path
    root: Path


def _git(root: Path, *args: str, date: str = OLD_DATE) -> None:
    env = {**os.environ, "GIT_AUTHOR_DATE": date, "GIT_COMMITTER_DATE": date}
    subprocess.run(["git", "-C", str(root), "-c", "user.email=t@example.com", "-c", "user.name=t", *args],
                   check=True, env=env, capture_output=True)


def make_repo(root: Path) -> Path:
    root.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    for name, text in FILES.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    _git(root, "add", "-A")
    _git(root, "commit", "-qm", "first")
    service = root / "app/service.py"
    service.write_text(service.read_text() + '\n\ndef refund(cart):\n    """Give the money back."""\n    return -sum(cart)\n')
    _git(root, "add", "-A", date=NEW_DATE)
    _git(root, "commit", "-qm", "refunds", date=NEW_DATE)
    return root


@pytest.fixture(scope="session")
def planning_repo(tmp_path_factory) -> PlanningRepo:
    from pipelines.indexer import Indexer

    tmp = tmp_path_factory.mktemp("planning")
    repo = make_repo(tmp / "shop")
    config = make_config(tmp, *WITHOUT_TOKEN_VECTORS)
    Indexer(config, progress=False).index(str(repo), PLANNING_REPO)
    return PlanningRepo(config, PLANNING_REPO, repo, tmp)
