"""Where a gold function is lost: the stage order the loss table reads, and the final band."""

from __future__ import annotations

from lab.localizer.function_loss import FINAL, STAGES, final_band, loss_stage

OUTER = {"pkg/a.py::Cart.total", "pkg/a.py::price_of"}
FILE_RANK = {"pkg/a.py": 3, "pkg/far.py": 40}


def test_a_candidate_is_banded_by_its_rank_whatever_its_file():
    assert loss_stage("pkg/a.py::price_of", 1, FILE_RANK, OUTER, top_files=20) == STAGES[6]
    assert loss_stage("pkg/a.py::price_of", 10, FILE_RANK, OUTER, top_files=20) == STAGES[6]
    assert loss_stage("pkg/a.py::price_of", 11, FILE_RANK, OUTER, top_files=20) == STAGES[5]
    assert loss_stage("pkg/a.py::price_of", 51, FILE_RANK, OUTER, top_files=20) == STAGES[4]
    assert loss_stage("other.py::f", 7, FILE_RANK, set(), top_files=20) == STAGES[6]  # a function list found it


def test_a_function_no_candidate_names_is_lost_at_its_first_stage():
    assert loss_stage("other.py::f", None, FILE_RANK, OUTER, top_files=20) == STAGES[0]
    assert loss_stage("pkg/a.py::CONSTANT", None, FILE_RANK, OUTER, top_files=20) == STAGES[1]
    far = {"pkg/far.py::g"}
    assert loss_stage("pkg/far.py::g", None, FILE_RANK, far, top_files=20) == STAGES[2]
    assert loss_stage("pkg/far.py::g", None, FILE_RANK, far, top_files=50) == STAGES[3]
    assert loss_stage("pkg/a.py::Cart.total", None, FILE_RANK, OUTER, top_files=20) == STAGES[3]


def test_the_final_band_counts_an_absent_function_below_50():
    assert [final_band(r) for r in (None, 51, 50, 11, 10, 1)] == [FINAL[0], FINAL[0], FINAL[1], FINAL[1], FINAL[2],
                                                                   FINAL[2]]
