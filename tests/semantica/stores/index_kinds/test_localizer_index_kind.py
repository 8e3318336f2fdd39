"""The `localizer` index kind on real indexes of a real git repository: the localizer snapshot built at index
time ranks exactly as the one the stage builds from the served files, the stage uses it without parsing a
file, an unchanged set of Python files is linked from the previous snapshot, and it is absent when off."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from pipelines.indexer import Indexer
from pipelines.shards import REUSE_STAT
from semantica.layout import IndexLayout
from semantica.snapshot import Snapshot
from semantica.stores.index_kinds.localizer import KIND, LOCALIZER_DIR
from serving.localizer.stage import LearnedLocalizer, LearnedStage
from tests.conftest import make_config
from tests.dated_git import commit, one_commit_repo

pytestmark = pytest.mark.timeout(600)
REPO = "kinds/ledger"
FILES = {
    "ledger/accounts.py": 'class Account:\n    """A ledger account."""\n\n    def __init__(self, owner):\n'
                          '        self.owner = owner\n        self.entries = []\n\n    def balance(self):\n'
                          '        return sum(e.amount for e in self.entries)\n',
    "ledger/entries.py": 'class Entry:\n    def __init__(self, amount, memo):\n        self.amount = amount\n'
                         '        self.memo = memo\n\n\ndef reverse(entry):\n    """Undo an entry with its opposite."""\n'
                         '    return Entry(-entry.amount, "reversal of " + entry.memo)\n',
    "tests/test_entries.py": 'from ledger.entries import Entry, reverse\n\n\ndef test_reverse():\n'
                             '    assert reverse(Entry(5, "x")).amount == -5\n',
    "README.md": "# Ledger\n\nDouble-entry bookkeeping.\n",
}
QUERY = "reversing an entry gives the wrong memo for the account balance"


def _config(root, enabled: bool):
    return make_config(root, f"localizer.enabled={str(enabled).lower()}", "localizer.learned_files=false",
                       private_cache=True)


def _current(config) -> Snapshot:
    return Snapshot.open(IndexLayout(config.paths.index_root).current(REPO), config)


@pytest.fixture(scope="module")
def repo(tmp_path_factory):
    return one_commit_repo(tmp_path_factory.mktemp("ledger") / "repo", FILES)


def test_stored_snapshot_ranks_as_the_one_built_from_the_served_files(repo, tmp_path):
    config = _config(tmp_path, True)
    Indexer(config, progress=False).index(str(repo), REPO)
    served = _current(config)
    stored = served.index(KIND)
    assert stored is not None and served.manifest.counts["localizer_files"] == 3
    stage = LearnedStage(config.localizer)  # no blob cache: a file parsed here would be counted
    assert stage.snapshot(served) is stored and stage._builder.parsed_here == 0

    texts = {p: "\n".join(served.file_lines(p)) for p in served.chunks_by_path if p.endswith(".py")}
    rebuilt = LearnedStage(config.localizer)._builder.build(texts)
    localizer = LearnedLocalizer(config.localizer, None)
    from_index = localizer.rank(stored, QUERY, learned_files=False)
    from_files = localizer.rank(rebuilt, QUERY, learned_files=False)
    assert [k for k, _ in from_index.files] == [k for k, _ in from_files.files]
    assert [k for k, _ in from_index.functions] == [k for k, _ in from_files.functions]
    assert np.allclose([s for _, s in from_index.functions], [s for _, s in from_files.functions])
    assert np.array_equal(localizer.generator.build(stored, QUERY).file_features,
                          localizer.generator.build(rebuilt, QUERY).file_features, equal_nan=True)
    assert from_index.files[0][0] == "ledger/entries.py"
    assert "ledger/entries.py::reverse" in [k for k, _ in from_index.functions[:3]]

    # the stage re-ranks today's dicts and keeps what earlier stages attached to them
    voted = {"repo": REPO, "path": "ledger/accounts.py", "score": 0.5, "history": [{"sha": "abc"}]}
    alone = LearnedStage(dataclasses.replace(config.localizer, today_weight=0.0))
    files, functions = alone.apply(QUERY, [served], [voted], [{"repo": REPO, "function": "ledger/accounts.py::Account.balance",
                                                               "score": 0.5, "history": [{"sha": "abc"}]}])
    assert [f["path"] for f in files] == ["ledger/entries.py"]  # as many as today returned, the localizer's first
    assert [f["function"] for f in functions] == [from_index.functions[0][0]]
    # the blend alone (the dense channel's file order, which would move entries.py up, has its own test)
    heavy_today = dataclasses.replace(config.localizer, today_weight=5.0, dense_file_depth=0)
    files, _ = LearnedStage(heavy_today).apply(QUERY, [served], [voted], [])
    assert files == [{**voted, "score": files[0]["score"]}] and files[0]["score"] != voted["score"]


def test_unchanged_python_files_are_linked_and_a_changed_one_rebuilt(repo, tmp_path):
    config = _config(tmp_path, True)
    indexer = Indexer(config, progress=False)
    indexer.index(str(repo), REPO)
    first = _current(config)
    commit(repo, {"README.md": "# Ledger\n\nDouble-entry bookkeeping, in cents.\n"}, "docs only", 1)
    indexer.index(str(repo), REPO)
    docs_only = _current(config)
    assert docs_only.snapshot_id != first.snapshot_id
    assert docs_only.manifest.stats[REUSE_STAT]["linked"].get(KIND) == 1
    assert sorted(p.name for p in (docs_only.paths.root / LOCALIZER_DIR).iterdir()) == \
        sorted(p.name for p in (first.paths.root / LOCALIZER_DIR).iterdir())

    commit(repo, {"ledger/entries.py": FILES["ledger/entries.py"] + "\n\ndef void(entry):\n    return None\n"},
           "void entries", 2)
    indexer.index(str(repo), REPO)
    changed = _current(config)
    assert changed.manifest.stats[REUSE_STAT]["written"].get(KIND) == 1
    assert "ledger/entries.py::void" in changed.index(KIND).function_index


def test_off_stores_nothing_and_the_stage_builds_from_the_files(repo, tmp_path):
    config = _config(tmp_path, False)
    Indexer(config, progress=False).index(str(repo), REPO)
    served = _current(config)
    assert not (served.paths.root / LOCALIZER_DIR).exists() and served.index(KIND) is None
    stage = LearnedStage(dataclasses.replace(config.localizer, enabled=True))
    built = stage.snapshot(served)
    assert stage._builder.parsed_here == 3 and len(built.files) == 3
