"""A cheap structural check of one Lucene index directory, in Python (no JVM): the newest `segments_N` names its
segments, each segment's `.si` lists its files, and every one of those files must be there with Lucene's codec
header at its start and its codec footer at its end (a file cut short has lost its footer). Nothing but the
commit point and the segment infos is read past its first and last bytes; checksums are not verified (that is
a full read).

Formats read (Lucene 9, what Anserini writes): `segments_N` is `SegmentInfos` (big-endian integers), `.si` is
`Lucene90SegmentInfoFormat` (little-endian integers); strings are a vint length and UTF-8 bytes."""

from __future__ import annotations

import struct
from dataclasses import dataclass
from pathlib import Path

from semantica.errors import public_message

CODEC_MAGIC = 0x3FD76C17  # CodecUtil.CODEC_MAGIC: the first 4 bytes of every index file, big-endian
FOOTER_MAGIC = 0xC02893E8  # ~CODEC_MAGIC: the first 4 of the 16-byte footer
FOOTER_BYTES = 16  # magic, algorithm id (0: CRC32), checksum (a long whose high 32 bits are zero)
ID_BYTES = 16  # a segment's or a commit's random id
SEGMENTS_PREFIX = "segments_"  # segments_<generation in base 36>
SEGMENT_INFO_SUFFIX = ".si"
YES_OR_NO = (0x01, 0xFF)  # SegmentInfo.YES, SegmentInfo.NO as bytes
BASE36 = 36


class LuceneFileError(ValueError):
    """One file of a Lucene directory is missing, cut short or not what its name says."""


UNREADABLE = (OSError, ValueError, IndexError, struct.error)  # what reading a missing, cut or corrupt file raises


@dataclass
class _Cursor:
    """Reads Lucene's primitive types from the bytes of one file."""

    data: bytes
    at: int = 0

    def take(self, count: int) -> bytes:
        if count < 0 or self.at + count > len(self.data):
            raise LuceneFileError("it ends inside a record")
        piece = self.data[self.at:self.at + count]
        self.at += count
        return piece

    def byte(self) -> int:
        return self.take(1)[0]

    def int_be(self) -> int:
        return struct.unpack(">i", self.take(4))[0]

    def vint(self) -> int:
        value, shift = 0, 0
        while True:
            part = self.byte()
            value |= (part & 0x7F) << shift
            if part < 0x80:
                return value
            shift += 7
            if shift > 63:
                raise LuceneFileError("a variable-length integer runs on")

    def string(self) -> str:
        return self.take(self.vint()).decode("utf-8")

    def strings(self) -> list[str]:
        return [self.string() for _ in range(self.vint())]

    def string_map(self) -> None:
        for _ in range(self.vint()):
            self.string(), self.string()

    def header(self) -> None:
        """CodecUtil's index header: magic, codec name, version, id, suffix."""
        if struct.unpack(">I", self.take(4))[0] != CODEC_MAGIC:
            raise LuceneFileError("it does not start with Lucene's codec header")
        self.string()
        self.take(4 + ID_BYTES)
        self.take(self.byte())


def check_footer(path: Path) -> None:
    """The file is there, starts with the codec header and ends with the codec footer."""
    with open(path, "rb") as handle:
        head = handle.read(4)
        handle.seek(0, 2)
        size = handle.tell()
        if size < len(head) + FOOTER_BYTES:
            raise LuceneFileError(f"{path.name} is cut short ({size} bytes)")
        handle.seek(size - FOOTER_BYTES)
        footer = handle.read(FOOTER_BYTES)
    if struct.unpack(">I", head)[0] != CODEC_MAGIC:
        raise LuceneFileError(f"{path.name} does not start with Lucene's codec header")
    magic, algorithm, checksum = struct.unpack(">IiQ", footer)
    if magic != FOOTER_MAGIC or algorithm != 0 or checksum >> 32:
        raise LuceneFileError(f"{path.name} is cut short or corrupt (no codec footer at its end)")


def newest_commit(directory: Path) -> Path:
    """The `segments_N` of the highest generation (the commit a reader opens)."""
    commits = [p for p in directory.iterdir() if p.name.startswith(SEGMENTS_PREFIX)]
    if not commits:
        raise LuceneFileError("the directory has no segments_N (no commit point)")
    return max(commits, key=lambda p: int(p.name[len(SEGMENTS_PREFIX):], BASE36))


def segment_names(commit: Path) -> list[str]:
    """The names of the segments a `segments_N` lists."""
    cursor = _Cursor(commit.read_bytes())
    cursor.header()
    for _ in range(4):  # the writer's Lucene version (major, minor, bugfix), the index's created major version
        cursor.vint()
    cursor.take(8)  # the commit's version
    cursor.vint()  # the name counter
    count = cursor.int_be()
    if count < 0:
        raise LuceneFileError(f"{commit.name} lists {count} segments")
    if count:
        for _ in range(3):  # the oldest segment's Lucene version
            cursor.vint()
    names: list[str] = []
    for _ in range(count):
        names.append(cursor.string())
        cursor.take(ID_BYTES)
        cursor.string()  # codec
        cursor.take(8 + 4 + 8 + 8 + 4)  # deletes' generation and count, field infos' and doc values' generations, soft deletes
        if cursor.byte():
            cursor.take(ID_BYTES)
        cursor.strings()  # field infos' update files
        for _ in range(cursor.int_be()):  # doc values' update files by field
            cursor.int_be()
            cursor.strings()
    return names


def segment_files(info: Path) -> list[str]:
    """The files a segment's `.si` lists (its own name among them)."""
    cursor = _Cursor(info.read_bytes())
    cursor.header()
    cursor.take(3 * 4)  # the segment's Lucene version
    if cursor.byte():
        cursor.take(3 * 4)  # its minimum Lucene version
    cursor.take(4)  # document count
    if cursor.byte() not in YES_OR_NO:  # compound file?
        raise LuceneFileError(f"{info.name} is not a segment info file")
    if cursor.data[cursor.at] in YES_OR_NO:  # has blocks? (written by later Lucene 9 releases; the map's size
        cursor.byte()  # that follows is a small vint, never one of these bytes)
    cursor.string_map()  # diagnostics
    return cursor.strings()


def lucene_damage(directory: Path) -> dict[str, str]:
    """Each file of the Lucene index in `directory` that is missing or cut short -> why ('' names the
    directory itself); {} for a whole one."""
    try:
        commit = newest_commit(directory)
    except UNREADABLE as exc:
        return {"": public_message(exc)}
    damaged: dict[str, str] = {}
    try:
        check_footer(commit)
        names = segment_names(commit)
    except UNREADABLE as exc:
        return {commit.name: public_message(exc)}
    for name in names:
        info = directory / f"{name}{SEGMENT_INFO_SUFFIX}"
        try:
            check_footer(info)
            files = segment_files(info)
        except UNREADABLE as exc:
            damaged[info.name] = public_message(exc)
            continue
        for file in files:
            try:
                check_footer(directory / file)
            except UNREADABLE as exc:
                damaged[file] = public_message(exc)
    return damaged
