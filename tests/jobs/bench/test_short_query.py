"""The short-query benchmark refuses bad arguments with one line before it runs any query."""

from __future__ import annotations

from pathlib import Path

import pytest

from jobs.bench import short_query


def test_a_missing_compare_file_is_refused_before_the_queries(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    missing = tmp_path / "no-such-run.json"
    with pytest.raises(SystemExit) as exit_info:
        short_query.main(["--index-root", str(tmp_path / "index"), "--cache-dir", str(tmp_path / "cache"),
                          "--repo", "pytest", "--compare", str(missing)])
    assert exit_info.value.code == 2
    assert f"--compare {missing}: no such result file" in capsys.readouterr().err


def test_a_repository_not_indexed_there_is_a_usage_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "index").mkdir()
    with pytest.raises(SystemExit) as exit_info:
        short_query.main(["--index-root", str(tmp_path / "index"), "--cache-dir", str(tmp_path / "cache"),
                          "--repo", "nobody/nothing", "--out", str(tmp_path / "out.json")])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert "--repo nobody/nothing:" in err and "Traceback" not in err
    assert not (tmp_path / "out.json").exists()
