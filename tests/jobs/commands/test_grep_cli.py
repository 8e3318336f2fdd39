"""`semantica grep` on a real index: ripgrep-like lines, one JSON object, and bad patterns as one clear line."""

from __future__ import annotations

import json

import pytest

from jobs.cli import main
from tests.conftest import REPO_ROOT

pytestmark = pytest.mark.timeout(900)


def run(indexed_exact, capsys, *args: str) -> tuple[int, str, str]:
    code = main(["grep", *args, "--index-root", str(indexed_exact.config.paths.index_root),
                 "--set", f"paths.cache_dir={indexed_exact.config.paths.cache_dir}"])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_lines_print_as_path_line_column_text(indexed_exact, capsys):
    code, out, _ = run(indexed_exact, capsys, "class ErrorKind(Enum):")
    source = (REPO_ROOT / "semantica/errors.py").read_text().splitlines()
    number = next(i for i, line in enumerate(source, 1) if "class ErrorKind(Enum):" in line)
    assert code == 0 and out.splitlines()[0] == f"semantica/errors.py:{number}:1: class ErrorKind(Enum):"


def test_json_is_one_object_with_matches_truncated_and_freshness(indexed_exact, capsys):
    code, out, _ = run(indexed_exact, capsys, r"^\s*def \w+", "--regex", "--path", "*.py", "--max-count", "3", "--json")
    answer = json.loads(out)
    assert code == 0 and len(answer["matches"]) == 3 and answer["truncated"] is True
    assert set(answer["matches"][0]) >= {"path", "line", "column", "text"}
    assert all(m["path"].endswith(".py") for m in answer["matches"])
    assert indexed_exact.name in answer["freshness"]


def test_context_word_and_case_switches(indexed_exact, capsys):
    code, out, _ = run(indexed_exact, capsys, "errorkind", "-i", "-w", "-C", "1", "--path", "semantica/api.py")
    lines = out.splitlines()
    assert code == 0 and any(line.startswith("semantica/api.py:") for line in lines)
    assert any(line.startswith("semantica/api.py-") for line in lines)  # a context line, rg style


def test_an_invalid_regex_is_one_line_and_exit_1_and_no_match_is_exit_1(indexed_exact, capsys):
    code, out, err = run(indexed_exact, capsys, "(a", "--regex")
    assert code == 1 and "invalid regex" in err and "Traceback" not in err and out == ""
    code, out, _ = run(indexed_exact, capsys, "no such text anywhere 1f3a")
    assert code == 1 and out == ""
