"""One percentile for every benchmark: nearest rank, and no crash on a bench that timed nothing; one way to write
a bench's result."""

from __future__ import annotations

import json
import threading

import pytest

from jobs.bench.stats import PERCENTILE_99, percentile, report_result, run_clients


def test_empty_list_is_zero_not_a_crash() -> None:
    assert percentile([], 0.5) == 0.0 and percentile([], PERCENTILE_99) == 0.0


def test_nearest_rank_on_unsorted_values() -> None:
    values = [5.0, 1.0, 4.0, 2.0, 3.0]
    assert percentile(values, 0.0) == 1.0
    assert percentile(values, 0.5) == 3.0
    assert percentile(values, 1.0) == 5.0
    assert percentile([7.0], PERCENTILE_99) == 7.0
    assert percentile(list(range(1, 101)), PERCENTILE_99) == 99


def test_q_outside_zero_one_is_refused() -> None:
    with pytest.raises(ValueError, match="within"):
        percentile([1.0], 99)


def test_a_result_is_written_into_a_new_directory_and_shown(tmp_path, capsys) -> None:
    result = {"p50_ms": 12.5, "levels": [{"clients": 4}], "cpus": 2}
    path = tmp_path / "bench" / "results" / "x.json"
    report_result(result, path)
    assert json.loads(path.read_text()) == result == json.loads(capsys.readouterr().out)


def test_clients_run_at_once_each_with_its_own_number() -> None:
    together = threading.Barrier(4, timeout=60)  # broken (an error) unless all four wait at the same time
    seen: list[int] = []

    def worker(n: int) -> None:
        together.wait()
        seen.append(n)

    assert run_clients(worker, 4) >= 0.0
    assert sorted(seen) == [0, 1, 2, 3] and not together.broken
