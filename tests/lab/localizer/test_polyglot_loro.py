"""The polyglot ranker study: each family spread over every fold, the language columns from the candidate's path."""

from __future__ import annotations

import polars as pl

from lab.localizer.polyglot_loro import LANGUAGE_COLUMNS, family_of_path, stratified_folds, with_language


def test_every_family_is_spread_over_every_fold_and_each_repository_held_out_once():
    families = {f"go/{n}": "go" for n in range(4)} | {f"rust/{n}": "rust" for n in range(3)} | {"py/a": "python",
                                                                                                 "py/b": "python"}
    folds = stratified_folds(families, sorted(families), 3, seed=13)
    assert sorted(r for fold in folds for r in fold) == sorted(families)
    for fold in folds:
        assert {families[r] for r in fold} >= {"go", "rust"}
    assert stratified_folds(families, sorted(families), 3, seed=13) == folds


def test_language_columns_come_from_the_candidate_path():
    assert [family_of_path(p) for p in ("a/b.go", "src/lib.rs", "x/Y.java", "src/index.ts", "a.tsx", "m.js",
                                         "pkg/mod.py", "README.md")] == \
        ["go", "rust", "java", "js", "js", "js", "python", "other"]
    frame = pl.DataFrame({"key": ["cmd/root.go", "src/lib.rs::Point.norm", "pkg/mod.py::f", "lib/a.ts"]})
    out = with_language(frame)
    assert out.select(LANGUAGE_COLUMNS).rows() == [(1.0, 0.0, 0.0, 0.0), (0.0, 0.0, 0.0, 1.0),
                                                   (0.0, 0.0, 0.0, 0.0), (0.0, 0.0, 1.0, 0.0)]
