"""An exact shard stores each file as line-aligned segments, raw or zlib'd (`exact.compress_level`), reads them
back byte for byte, and hands a literal's candidates over as the segments that hold its trigrams, not whole files."""

from __future__ import annotations

from pathlib import Path

import pytest

from semantica.stores.exact import ExactShard, StoredFile, read_in_order, segments, write_shard
from semantica.stores.exact.store import SEGMENT_CHARS

FILES = [StoredFile("a.py", "1" * 40, "def héllo():\n    return 'wörld'\n"), StoredFile("empty.txt", "2" * 40, ""),
         StoredFile("b.md", "3" * 40, "# Title\n\nhello again\n")]
# a file of many segments: numbered lines, one rare word on line 700 only
LONG_LINES = [f"line {n} of the long file, padded to look like code: x = compute({n})\n" for n in range(1, 2001)]
LONG_LINES[699] = "    rare_needle = 1  # line 700\n"
LONG = StoredFile("long.py", "4" * 40, "".join(LONG_LINES))


@pytest.mark.parametrize("level", [0, 1, 9])
def test_contents_round_trip_at_every_compression_level(tmp_path, level):
    path = tmp_path / f"shard{level}.sqlite"
    assert write_shard(path, [*FILES, LONG], level) == len(FILES) + 1
    shard = ExactShard(path)
    assert dict(shard.texts()) == {f.path: f.text.encode() for f in [*FILES, LONG]}
    assert shard.files() == len(FILES) + 1 and shard.file("long.py") == LONG.text.encode()
    assert {run[0] for run in shard.candidates('"LLO"')} == {"a.py", "b.md"}  # folded trigrams
    assert not path.with_name(path.name + ".building").exists()


def test_segments_are_whole_lines_of_about_segment_chars_numbered_from_their_first_line():
    pieces = list(segments(LONG.text))
    assert len(pieces) > 10 and "".join(p for _, p in pieces) == LONG.text
    assert all(p.endswith("\n") and len(p) >= SEGMENT_CHARS for _, p in pieces[:-1])
    lines = LONG.text.splitlines(keepends=True)
    assert all(lines[first - 1] == piece.splitlines(keepends=True)[0] for first, piece in pieces)
    assert list(segments("")) == [(1, "")] and list(segments("no newline")) == [(1, "no newline")]


def test_a_literal_in_one_line_of_a_long_file_is_one_segment_to_read(tmp_path):
    path = tmp_path / "s.sqlite"
    write_shard(path, [LONG], 0)
    shard = ExactShard(path)
    (run,) = shard.candidates('"are" AND "_ne" AND "edl"')
    (found,) = (data for _, _, _, data in read_in_order([shard], [run]))
    assert b"rare_needle" in found and len(found) < SEGMENT_CHARS + 200 < len(LONG.text) // 10
    assert run[1] <= 700 < run[1] + found.count(b"\n")  # the segment's first line number places the match


class CountingShard(ExactShard):
    """A real shard that counts the rows it was asked for."""

    def __init__(self, path) -> None:
        super().__init__(path)
        self.read: list[str] = []

    def contents(self, runs):
        self.read += [run[0] for run in runs]
        return super().contents(runs)


def test_read_in_order_follows_the_global_path_order_and_reads_ahead_in_doubling_batches(tmp_path):
    names = [f"f{i:02d}.py" for i in range(10)]
    halves = [[n for n in names if int(n[1:3]) % 2 == part] for part in (0, 1)]
    shards = []
    for number, half in enumerate(halves):
        path = tmp_path / f"s{number}.sqlite"
        write_shard(path, [StoredFile(n, "0" * 40, f"text of {n}\n") for n in half], 0)
        shards.append(CountingShard(path))
    found = sorted(run for number, shard in enumerate(shards) for run in shard.candidates(None, number))
    stream = read_in_order(shards, found, batch_rows=2)
    assert [(p, data.decode()) for p, _, _, data in stream] == [(n, f"text of {n}\n") for n in names]
    for shard in shards:
        shard.read.clear()
    stream = read_in_order(shards, found, batch_rows=4)
    assert [next(stream)[0] for _ in range(2)] == ["f00.py", "f01.py"]
    assert shards[0].read == ["f00.py"] and shards[1].read == ["f01.py"]  # a shard's first batch is one file
    assert [next(stream)[0] for _ in range(2)] == ["f02.py", "f03.py"]
    assert shards[0].read == ["f00.py", "f02.py", "f04.py"]  # then two, up to batch_rows


def test_adjacent_candidate_segments_of_a_file_come_joined_as_one_run(tmp_path):
    path = tmp_path / "s.sqlite"
    write_shard(path, [LONG, StoredFile("z.py", "5" * 40, "line zero\n")], 0)
    shard = ExactShard(path)
    runs = shard.candidates('"lin"')  # every segment of both files
    assert [(p, line) for p, line, *_ in runs] == [("long.py", 1), ("z.py", 1)]
    assert [data for *_, data in read_in_order([shard], runs)] == [LONG.text.encode(), b"line zero\n"]


def test_a_shard_of_whole_files_written_before_segments_still_answers(tmp_path):
    """Format 1 (one row per whole file, as shards were written before segments): a published snapshot keeps
    answering until its next build rewrites the shard."""
    import sqlite3

    path = tmp_path / "v1.sqlite"
    connection = sqlite3.connect(path)
    connection.execute("CREATE TABLE files(id INTEGER PRIMARY KEY, path TEXT NOT NULL, blob_sha TEXT NOT NULL, "
                       "data BLOB NOT NULL)")
    connection.execute("CREATE VIRTUAL TABLE grams USING fts5(body, content='', tokenize='trigram', detail='none')")
    for row, file in enumerate([*FILES, LONG]):
        connection.execute("INSERT INTO files VALUES (?, ?, ?, ?)", (row, file.path, file.blob_sha, file.text.encode()))
        connection.execute("INSERT INTO grams(rowid, body) VALUES (?, ?)", (row, file.text))
    connection.commit()
    connection.close()
    shard = ExactShard(path)
    assert dict(shard.texts()) == {f.path: f.text.encode() for f in [*FILES, LONG]} and shard.files() == 4
    runs = shard.candidates('"are" AND "_ne" AND "edl"')
    assert [(p, line) for p, line, *_ in runs] == [("long.py", 1)]
    assert [data for *_, data in read_in_order([shard], runs)] == [LONG.text.encode()]
    assert {run[0] for run in shard.candidates(None)} == {f.path for f in [*FILES, LONG]}


def test_a_shard_under_a_relative_index_root_opens(tmp_path, monkeypatch):
    """The default index root (.semantica/index) is relative to the working directory: a shard path under it opens
    (an SQLite URI needs an absolute path; `make demo` answered without the exact retriever before)."""
    (tmp_path / "index").mkdir()
    write_shard(tmp_path / "index" / "shard.sqlite", FILES, 0)
    monkeypatch.chdir(tmp_path)
    shard = ExactShard(Path("index/shard.sqlite"))
    assert shard.file("a.py") == FILES[0].text.encode()
