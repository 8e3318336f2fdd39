"""Corpus commits as replay instances: the message-length bounds keep only the commits whose message is that long,
on a real corpus file; without them every commit may be drawn."""

from __future__ import annotations

import json
from pathlib import Path

from lab.localizer.corpus_instances import main

CORPUS = Path("bench/corpus")
REPO = "colinhacks/zod"


def _queries(tmp_path: Path, *extra: str) -> list[str]:
    out = tmp_path / "instances.jsonl"
    assert main(["--corpus", str(CORPUS), "--repo", REPO, "--per-repo", "1000", "--out", str(out), *extra]) == 0
    return [json.loads(line)["problem_statement"] for line in out.open()]


def test_no_bound_keeps_every_commit(tmp_path):
    every = sum(1 for _ in (CORPUS / "colinhacks+zod.jsonl").open())
    assert len(_queries(tmp_path)) == every


def test_bounds_keep_only_messages_of_that_length(tmp_path):
    long = _queries(tmp_path, "--min-query-chars", "300")
    short = _queries(tmp_path, "--max-query-chars", "299")
    assert long and short and min(map(len, long)) >= 300 and max(map(len, short)) <= 299
    assert len(long) + len(short) == len(_queries(tmp_path))


def test_the_regex_keeps_only_messages_it_matches(tmp_path):
    linked = _queries(tmp_path, "--query-regex", r"https?://")
    every = [json.loads(line)["query"] for line in (CORPUS / "colinhacks+zod.jsonl").open()]
    assert sorted(linked) == sorted(q for q in every if "http://" in q or "https://" in q) and linked
