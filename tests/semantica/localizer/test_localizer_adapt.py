"""Per-repository adaptation (semantica/localizer/adapt.py) on a real git repository: the model trains on the
commits at or before the snapshot only, is stored in the snapshot, and the localizer stage ranks with it."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from semantica.config import load_train_config
from tests.conftest import make_config
from tests.dated_git import commit

R = "acme/garden"
FILES = {
    "garden/watering.py": "def water_plants(bed, litres):\n    return [p.soak(litres) for p in bed]\n",
    "garden/pruning.py": "def prune_hedge(hedge, height):\n    return hedge.cut(height)\n",
    "garden/compost.py": "def turn_compost(heap):\n    return heap.mix()\n",
    "garden/seeds.py": "def sow_seeds(tray, count):\n    return tray.fill(count)\n",
}
# (file changed, message): each message names words of the file it fixes, as a repository's history does
FIXES = [("garden/watering.py", "Fix watering of plants when litres is zero"),
         ("garden/pruning.py", "Prune hedge to the requested height"),
         ("garden/compost.py", "Compost heap is not mixed when turned"),
         ("garden/seeds.py", "Sow seeds into the tray one count at a time"),
         ("garden/watering.py", "Water plants in the bed evenly"),
         ("garden/pruning.py", "Hedge pruning cuts below the height"),
         ("garden/compost.py", "Turn the compost heap weekly"),
         ("garden/seeds.py", "Seeds tray overflows when count is large")]
LATER = ("garden/compost.py", "Fix zebra quokka marmalade")  # the later commit that gives its answer away





@pytest.fixture(scope="module")
def garden(tmp_path_factory) -> dict[str, object]:
    repo = tmp_path_factory.mktemp("garden-adapt")
    subprocess.run(["git", "init", "-q", "-b", "main", str(repo)], check=True)
    texts = dict(FILES)
    commit(repo, texts, "Start the garden package", 0)
    shas = []
    for day, (path, message) in enumerate(FIXES, 1):
        texts[path] += f"\n\ndef step_{day}():\n    return {day}\n"
        shas.append(commit(repo, {path: texts[path]}, message, day))
    texts[LATER[0]] += "\n\ndef marmalade():\n    return 'zebra quokka'\n"
    later = commit(repo, {LATER[0]: texts[LATER[0]]}, LATER[1], 30)
    return {"repo": repo, "shas": shas, "snapshot": shas[-1], "later": later}


SETTINGS = ("history.index=true", "history.min_message_chars=5", "history.adapt.enabled=true",
            "history.adapt.min_queries=3", "history.adapt.min_data_in_leaf=1", "localizer.enabled=true")


def _train(garden, commit: str, tmp_path: Path):
    from semantica.history import HistoryReader
    from semantica.history.gitread import source_tree_texts
    from semantica.localizer.adapt import RepositoryAdapter
    from semantica.localizer.snapshot import SnapshotBuilder

    config = make_config(tmp_path, *SETTINGS, private_cache=True)
    reader = HistoryReader(config.history, tmp_path / "history.sqlite")
    history = reader.read(garden["repo"], commit)
    reader.close()
    snapshot = SnapshotBuilder().build(source_tree_texts(str(garden["repo"]), commit, 1_000_000))
    adapter = RepositoryAdapter(config.history.adapt, config.localizer, load_train_config(environ={}))
    return adapter.train(snapshot, history.records, history.commit)


def test_training_set_stops_at_the_snapshot_commit(garden, tmp_path):
    at_snapshot = _train(garden, garden["snapshot"], tmp_path / "a")
    assert at_snapshot is not None
    trained = at_snapshot.meta["train_commits"]
    assert garden["later"] not in trained
    assert set(trained) == set(garden["shas"])  # every kept commit up to the snapshot, the root dropped
    control = _train(garden, garden["later"], tmp_path / "b")  # read at the later commit, it is trained on
    assert garden["later"] in control.meta["train_commits"]


def test_too_few_commits_train_no_model(garden, tmp_path):
    from dataclasses import replace

    from semantica.history import HistoryReader
    from semantica.history.gitread import source_tree_texts
    from semantica.localizer.adapt import RepositoryAdapter
    from semantica.localizer.snapshot import SnapshotBuilder

    config = make_config(tmp_path, *SETTINGS, private_cache=True)
    reader = HistoryReader(config.history, tmp_path / "history.sqlite")
    history = reader.read(garden["repo"], garden["shas"][1])  # two kept commits
    reader.close()
    snapshot = SnapshotBuilder().build(source_tree_texts(str(garden["repo"]), garden["shas"][1], 1_000_000))
    adapter = RepositoryAdapter(replace(config.history.adapt, min_queries=3), config.localizer, load_train_config(environ={}))
    assert adapter.train(snapshot, history.records) is None


@pytest.fixture(scope="module")
def indexed(garden, tmp_path_factory):
    from pipelines.indexer import Indexer

    config = make_config(tmp_path_factory.mktemp("garden-adapt-index"), *SETTINGS)
    summary = Indexer(config, progress=False).index(str(garden["repo"]), R, garden["snapshot"])
    return config, summary


def test_snapshot_stores_its_model_and_queries_rank_with_it(indexed, garden):
    from semantica.layout import IndexLayout
    from serving.pipeline import SearchPipeline, SearchRequest

    config, summary = indexed
    assert "history_adapt" in summary.seconds
    paths = IndexLayout(config.paths.index_root).current(R)
    adapt_dir = paths.history / "adapt"
    meta = json.loads((adapt_dir / "meta.json").read_text())
    assert meta["commit"] == garden["snapshot"] and garden["later"] not in meta["train_commits"]
    assert (adapt_dir / "files.txt").is_file()

    pipeline = SearchPipeline(config)
    response = pipeline.search(SearchRequest(query="hedge pruning height is wrong", k=5))
    assert not [d for d in response.degraded if d.get("stage") == "localizer"]
    stage = pipeline.learned_localizer
    used = list(stage._adapted.values())
    assert len(used) == 1 and used[0].models.meta["commit"] == garden["snapshot"]  # the stored model, not shared
    assert response.files[0]["path"] == "garden/pruning.py"
