"""An exact shard stores contents raw or zlib'd (`exact.compress_level`) and reads both back byte for byte."""

from __future__ import annotations

import pytest

from semantica.stores.exact import ExactShard, StoredFile, read_in_order, write_shard

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


class CountingShard(ExactShard):
    """A real shard that counts the rows it was asked for."""

    def __init__(self, path) -> None:
        super().__init__(path)
        self.read: list[int] = []

    def contents(self, rows: list[int]) -> dict[int, bytes]:
        self.read += rows
        return super().contents(rows)


def test_read_in_order_follows_the_global_path_order_and_reads_ahead_in_doubling_batches(tmp_path):
    names = [f"f{i:02d}.py" for i in range(10)]
    halves = [[n for n in names if int(n[1:3]) % 2 == part] for part in (0, 1)]
    shards = []
    for number, half in enumerate(halves):
        path = tmp_path / f"s{number}.sqlite"
        write_shard(path, [StoredFile(n, "0" * 40, f"text of {n}\n") for n in half], 0)
        shards.append(CountingShard(path))
    found = sorted((p, number, row) for number, shard in enumerate(shards) for row, p in shard.candidates(None))
    stream = read_in_order(shards, found, batch_files=2)
    assert [(p, data.decode()) for p, _, data in stream] == [(n, f"text of {n}\n") for n in names]
    for shard in shards:
        shard.read.clear()
    stream = read_in_order(shards, found, batch_files=4)
    assert [next(stream)[0] for _ in range(2)] == ["f00.py", "f01.py"]
    assert shards[0].read == [0] and shards[1].read == [0]  # a shard's first batch is one file
    assert [next(stream)[0] for _ in range(2)] == ["f02.py", "f03.py"]
    assert shards[0].read == [0, 1, 2] and shards[1].read == [0, 1, 2]  # then two, up to batch_files
