"""File-level history on a real repository (psf/requests at REQUESTS_COMMIT, 2,168 commits): the votes and priors
are the ones the reader gave while it also read functions (pinned from that code), and a snapshot table written
then, with function rows, answers byte for byte as a files-only one, down to the localizer's candidate features."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from pipelines.history.reader import HistoryReader
from semantica.config import load_config
from semantica.stores.history import History, HistorySearcher, load_history, save_history
from tests.conftest import REQUESTS_COMMIT
from tests.old_history_table import rewrite_with_functions

QUERY = "Allow a list of hook functions for each hook in the hooks argument of a request"
PINNED_VOTES = [  # (path, score, first three voters' sha prefixes), read with the function-reading code
    ("requests/models.py", 7.4131677901416335, ["400b4567f0", "4161a7ec6a", "8ac6b266c9"]),
    ("requests/hooks.py", 3.1649614432427433, ["e9be7c1a58", "11e5126454", "8ac6b266c9"]),
    ("tests/test_requests.py", 2.3696339114047587, ["4a3f55997b", "7647e52943", "8a055c5d42"]),
    ("requests/api.py", 1.5518029825909665, ["400b4567f0", "6af6a08b7a", "3d2d072927"]),
    ("requests/auth.py", 1.2615485808980456, ["5f44d79729", "798dc4ae1d", "2fc9f6bbc9"]),
]
PINNED_PRIORS = {"requests/models.py": (96, 30, 0.5265740740740741), "requests/hooks.py": (7, 1, 18.64560185185185),
                 "tests/test_requests.py": (51, 19, 5.9765625)}  # (changes, fixes, days since the last change)
PINNED_DROPPED = {"no source change": 197, "trivial message": 125, "skipped subject": 62, "huge": 1}


@pytest.fixture(scope="module")
def history(requests_clone: Path, tmp_path_factory: pytest.TempPathFactory) -> History:
    cache = tmp_path_factory.mktemp("requests-history") / "history.sqlite"
    reader = HistoryReader(load_config(None, []).history, cache)
    try:
        return reader.read(str(requests_clone), REQUESTS_COMMIT)
    finally:
        reader.close()


def test_file_votes_and_priors_are_the_function_reading_codes(history: History) -> None:
    config = load_config(None, []).history
    assert (len(history.records), len(history.fix_like), history.renamed_paths) == (233, 64, 14)
    assert history.dropped == PINNED_DROPPED
    searcher = HistorySearcher(history, config)
    votes = searcher.index.votes(QUERY).files[: len(PINNED_VOTES)]
    assert [(v.key, [x.sha[:10] for x in v.voters]) for v in votes] == [(k, shas) for k, _, shas in PINNED_VOTES]
    assert [v.score for v in votes] == pytest.approx([score for _, score, _ in PINNED_VOTES], rel=1e-12)
    for path, (changes, fixes, age) in PINNED_PRIORS.items():
        prior = searcher.priors.files[path]
        assert (prior.changes, prior.fixes) == (changes, fixes) and prior.last_change_days == pytest.approx(age)


def test_a_table_with_function_rows_answers_as_a_files_only_one(history: History, requests_clone: Path,
                                                                tmp_path: Path) -> None:
    from jobs.localizer.gitread import TreeReader
    from semantica.stores.localizer.features import CandidateGenerator
    from semantica.stores.localizer.models import candidate_config
    from semantica.stores.localizer.table import LocalizerTableBuilder
    from serving.localizer.history_input import SnapshotHistory

    config = load_config(None, [])
    save_history(history, tmp_path / "files")
    save_history(history, tmp_path / "old")
    every_file = {path for record in history.records for path in record.files}
    rewrite_with_functions(tmp_path / "old", {path: [f"{path}::changed"] for path in every_file})
    with TreeReader(str(requests_clone), config.localizer.max_file_bytes) as tree:
        table = LocalizerTableBuilder().build(tree.texts(REQUESTS_COMMIT))
    generator = CandidateGenerator(candidate_config(config.localizer))

    built = []
    for name in ("files", "old"):
        inputs = SnapshotHistory(HistorySearcher(load_history(tmp_path / name), config.history))
        signals = inputs.signals(QUERY)
        built.append((signals, generator.build(table, QUERY, signals)))
    (files_only, from_files), (old, from_old) = built
    assert files_only == old and files_only.file_votes[0][0] == "requests/models.py"
    assert from_files.files == from_old.files and from_files.functions == from_old.functions
    for matrix in ("file_features", "function_features", "file_fusion", "function_fusion"):
        assert np.array_equal(getattr(from_files, matrix), getattr(from_old, matrix), equal_nan=True), matrix
    assert from_files.function_features.shape[0] > 0 and not np.isnan(from_files.file_features[:, -3]).all()
