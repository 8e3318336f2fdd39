"""Hits map to chunk ids through the id list stored beside each shard, and answer exactly as reading the
ids back through Lucene does (a shard without the list, or with a list that does not match, falls back)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from semantica.config import LuceneConfig
from semantica.stores.lucene import DOC_IDS_FILE, LuceneDoc, LuceneShardWriter
from semantica.stores.lucene_multi import LuceneMultiShardSearcher

SOURCE = Path(__file__).resolve().parents[3] / "semantica"
QUERIES = ["start_jvm", "LuceneShardWriter close", "snapshot manifest checksum", "tokenize identifiers",
           "config loader yaml", "encoder onnx runtime session"]
DEPTH = 50


def modules() -> list[Path]:
    """Every module of the package, its rooms included (a document id is its path inside the package)."""
    return sorted(SOURCE.rglob("*.py"))


def doc_id(path: Path, shard: int | str) -> str:
    return f"{path.relative_to(SOURCE)}#{shard}"


@pytest.fixture(scope="module")
def shard_dirs(tmp_path_factory) -> list[Path]:
    """Two shards over this package's own modules, one document per module."""
    root = tmp_path_factory.mktemp("doc-ids")
    files = modules()
    halves = [files[::2], files[1::2]]
    dirs = []
    for number, half in enumerate(halves):
        writer = LuceneShardWriter(root / f"shard{number}", LuceneConfig())
        writer.add(LuceneDoc(doc_id(p, number), p.read_text(encoding="utf-8"), p.name, p.stem) for p in half)
        writer.close()
        dirs.append(root / f"shard{number}")
    return dirs


def _answers(dirs: list[Path]) -> list[list[tuple[str, float]]]:
    searcher = LuceneMultiShardSearcher(dirs, LuceneConfig())
    try:
        return [searcher.search(query, DEPTH) for query in QUERIES]
    finally:
        searcher.close()


def test_the_stored_list_holds_every_document_once(shard_dirs) -> None:
    for directory in shard_dirs:
        ids = json.loads((directory / DOC_IDS_FILE).read_text(encoding="utf-8"))
        expected = {doc_id(p, directory.name[-1]) for p in modules()[int(directory.name[-1])::2]}
        assert sorted(ids) == sorted(expected)


def test_stored_ids_answer_as_lucene_does_and_a_bad_list_falls_back(shard_dirs, tmp_path) -> None:
    with_lists = _answers(shard_dirs)
    assert all(with_lists) and any(len(a) > 5 for a in with_lists)
    moved = []
    for directory in shard_dirs:
        target = tmp_path / directory.name
        target.mkdir()
        for item in directory.iterdir():
            (target / item.name).write_bytes(item.read_bytes())
        moved.append(target)
    (moved[0] / DOC_IDS_FILE).unlink()  # a shard written before the list existed
    assert _answers(moved) == with_lists
    ids = json.loads((moved[1] / DOC_IDS_FILE).read_text(encoding="utf-8"))
    (moved[1] / DOC_IDS_FILE).write_text(json.dumps(ids[:-1]), encoding="utf-8")  # does not match the index
    assert _answers(moved) == with_lists
    swapped = list(reversed(ids))  # right length, wrong order: the fallback cannot see it, the answers would
    (moved[1] / DOC_IDS_FILE).write_text(json.dumps(swapped), encoding="utf-8")
    (moved[0] / DOC_IDS_FILE).write_text((shard_dirs[0] / DOC_IDS_FILE).read_text(encoding="utf-8"), encoding="utf-8")
    assert _answers(moved) != with_lists  # so the test would catch a list written in the wrong order
