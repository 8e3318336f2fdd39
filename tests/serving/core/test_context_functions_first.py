"""`localizer_first_hits` reads only the chunks of the files its functions name, and leads with the chunks a scan
of every chunk picks: on a real snapshot, every function of it (a path holding "::" included)."""

from __future__ import annotations

import pytest

from pipelines.indexer import Indexer
from semantica.layout import IndexLayout
from semantica.snapshot import Snapshot
from serving.core.context import localizer_first_hits
from tests.conftest import make_config
from tests.dated_git import one_commit_repo

pytestmark = pytest.mark.timeout(600)
REPO = "first/shop"
FILES = {
    "shop/cart.py": "from shop.prices import price_of\n\n\nclass Cart:\n    def total(self, items):\n"
                    "        return sum(price_of(n) for n in items)\n\n    def empty(self):\n        return []\n",
    "shop/prices.py": "PRICES = {'apple': 3}\n\n\ndef price_of(name):\n    return PRICES.get(name, 0)\n",
    "odd::dir/mod.py": "def strange():\n    return 1\n\n\ndef stranger():\n    return strange() + 1\n",
}


def _every_chunk_scanned(functions, chunks):  # noqa: ANN001, ANN202
    """The first chunk of each function, looked for in every chunk."""
    wanted = [(f.get("repo"), f["function"]) for f in functions if "function" in f]
    first = {}
    for chunk in chunks.values():
        name = f"{chunk.path}::{chunk.symbol}"
        for key in ((chunk.repo, name), (None, name)):
            if key in set(wanted) and (key not in first or chunk.start_line < first[key].start_line):
                first[key] = chunk
    return [first[key].chunk_id for key in wanted if key in first]


def test_functions_lead_with_the_chunks_a_full_scan_picks(tmp_path):
    config = make_config(tmp_path, "token_vectors.enabled=false")
    Indexer(config, progress=False).index(str(one_commit_repo(tmp_path / "repo", FILES)), REPO)
    snapshot = Snapshot.open(IndexLayout(config.paths.index_root).current(REPO), config)
    chunks = dict(snapshot.chunk_by_id)
    names = sorted({f"{c.path}::{c.symbol}" for c in chunks.values() if c.symbol})
    assert "odd::dir/mod.py::strange" in names and len(names) >= 5
    functions = [{"repo": REPO, "function": n} for n in names] + [{"function": n} for n in names[:2]] + [
        {"repo": "other", "function": names[0]}, {"function": "gone.py::f"}]
    led = localizer_first_hits([], functions, chunks, len(functions))
    assert [h.chunk_id for h in led] == _every_chunk_scanned(functions, chunks)
    assert len(led) == len(names) + 2
