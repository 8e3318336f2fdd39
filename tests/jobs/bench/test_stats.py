"""One percentile for every benchmark: nearest rank, and no crash on a bench that timed nothing."""

from __future__ import annotations

import pytest

from jobs.bench.stats import PERCENTILE_99, percentile


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
