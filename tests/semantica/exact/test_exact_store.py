"""An exact shard stores contents raw or zlib'd (`exact.compress_level`) and reads both back byte for byte."""

from __future__ import annotations

import pytest

from semantica.exact import ExactShard, StoredFile, write_shard

FILES = [StoredFile("a.py", "1" * 40, "def héllo():\n    return 'wörld'\n"), StoredFile("empty.txt", "2" * 40, ""),
         StoredFile("b.md", "3" * 40, "# Title\n\nhello again\n")]


@pytest.mark.parametrize("level", [0, 1, 9])
def test_contents_round_trip_at_every_compression_level(tmp_path, level):
    path = tmp_path / f"shard{level}.sqlite"
    assert write_shard(path, FILES, level) == len(FILES)
    shard = ExactShard(path)
    rows = dict((p, r) for r, p in shard.candidates(None))
    assert {p: shard.content(r).decode() for p, r in rows.items()} == {f.path: f.text for f in FILES}
    assert {p for _, p in shard.candidates('"LLO"')} == {"a.py", "b.md"}  # folded trigrams
    assert not path.with_name(path.name + ".building").exists()
