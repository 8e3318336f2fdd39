"""The localizer's per-file parse cache: keyed by git's blob sha, reused by a later builder (another process),
and the snapshot it yields ranks exactly like one built without it."""

from __future__ import annotations

import subprocess
from collections import Counter
from pathlib import Path

import numpy as np

from semantica.stores.localizer.blobcache import BlobCache, blob_key, blob_sha, open_blob_cache
from semantica.stores.localizer.table import LocalizerTable, LocalizerTableBuilder
from semantica.stores.tokenizer import tokenize

ROOT = Path(__file__).resolve().parents[4]
QUERY = "blend the learned ranking into today's fusion with reciprocal rank weights"


def _texts() -> dict[str, str]:
    return {str(p.relative_to(ROOT)): p.read_text() for p in sorted((ROOT / "semantica" / "stores" / "localizer").glob("*.py"))}


def _scores(snapshot: LocalizerTable) -> dict[str, dict]:
    ids, counts = snapshot.vocab.lookup(tokenize(QUERY))
    out: dict[str, dict] = {}
    for name, field in snapshot.fields.items():
        keys = [d.path for d in snapshot.files] if name in ("content", "path") else [f.key for f in snapshot.functions]
        out[name] = {keys[i]: round(s, 4) for i, s in field.search(ids, counts, 1000)}
    return out


def test_blob_sha_is_gits() -> None:
    text = (ROOT / "semantica" / "stores" / "localizer" / "bm25.py").read_text()
    git = subprocess.run(["git", "hash-object", "--stdin"], input=text.encode(), capture_output=True, check=True)
    assert blob_sha(text) == git.stdout.decode().strip()


def test_cached_snapshot_ranks_like_a_fresh_one_and_parses_only_changed_files(tmp_path: Path) -> None:
    texts = _texts()
    fresh = LocalizerTableBuilder().build(texts)
    first = LocalizerTableBuilder(BlobCache(tmp_path / "blobs.sqlite"))
    first.build(texts)
    assert first.parsed_here == len(texts)

    again = LocalizerTableBuilder(BlobCache(tmp_path / "blobs.sqlite"))  # a later process: nothing in memory
    cached = again.build(texts)
    assert again.parsed_here == 0
    assert [(f.key, f.start, f.end) for f in cached.functions] == [(f.key, f.start, f.end) for f in fresh.functions]
    assert [(d.path, d.lines, d.names) for d in cached.files] == [(d.path, d.lines, d.names) for d in fresh.files]
    assert _scores(cached) == _scores(fresh)
    assert _scores(fresh)["body"]  # the query reaches something, so the comparison means something

    changed = dict(texts)
    path = next(iter(changed))
    changed[path] += "\n\ndef reciprocal_rank_blend_helper():\n    return 1\n"
    neighbour = LocalizerTableBuilder(BlobCache(tmp_path / "blobs.sqlite"))
    snapshot = neighbour.build(changed)
    assert neighbour.parsed_here == 1
    assert f"{path}::reciprocal_rank_blend_helper" in snapshot.function_index


def test_unpacked_blob_keeps_counts(tmp_path: Path) -> None:
    cache = BlobCache(tmp_path / "blobs.sqlite")
    text = (ROOT / "serving" / "localizer" / "stage.py").read_text()
    builder = LocalizerTableBuilder(cache)
    builder.build({"stage.py": text})
    key = blob_key("stage.py", text)  # the language and the blob sha
    assert key == f"python:{blob_sha(text)}"
    stored = cache.get_many([key])[key]
    def counts(doc: int) -> dict[str, int]:
        return {stored.terms[i]: int(n) for i, n in zip(*stored.docs[doc])}

    assert counts(0) == Counter(tokenize(text)) and counts(0)["blend"] > 0
    lines = text.split("\n")
    for n, (qualname, start, end) in enumerate(stored.spans, 1):
        assert counts(n) == Counter(tokenize("\n".join(lines[start - 1: end])))
        assert counts(n + len(stored.spans)) == Counter(tokenize(qualname))
    assert len(stored.docs) == 1 + 2 * len(stored.spans) and stored.lines == text.count("\n") + 1
    assert np.all(stored.docs[0][1] > 0)


def test_open_blob_cache_settings(tmp_path: Path) -> None:
    assert open_blob_cache("off", tmp_path) is None
    assert open_blob_cache("", None) is None
    assert open_blob_cache("", tmp_path).path == tmp_path / "localizer-blobs.sqlite"
    assert open_blob_cache(str(tmp_path / "x.sqlite"), None).path == tmp_path / "x.sqlite"
