"""Direct lookups for decomposition: stack frames and file paths -> the snapshot's chunks.

A frame names a file as the reporter's machine saw it (`/home/u/venv/lib/site-packages/requests/models.py`),
so it matches an indexed file by its trailing path segments (at least `MIN_PATH_SEGMENTS`, or the whole
path when it is shorter), and then the chunk of the named function (the one holding the line when the
name is ambiguous), else the chunk holding the line, else the file's first chunk. A path from the prose
gives the file's first chunk. Frames or paths that match nothing (the standard library, the user's own
script) are simply dropped.
"""

from __future__ import annotations

import threading
from collections import defaultdict

from semantica.hits import RankedList
from semantica.schema import Chunk
from serving.graph.ops import SnapshotGraph
from serving.planning.decompose import Frame

MAX_PATH_MATCHES = 3
"""A path suffix matching more indexed files than this is too ambiguous to vote for any of them."""
MAX_SUFFIX_INDEXES = 16
"""Suffix tables kept (one per snapshot graph)."""
MIN_PATH_SEGMENTS = 2  # a frame path matches an indexed file by at least this many trailing segments


class PathSuffixIndex:
    """Indexed file paths by each of their trailing segment runs (`c.py`, `b/c.py`, `a/b/c.py`)."""

    def __init__(self, paths: list[str]) -> None:
        self.by_suffix: dict[str, list[str]] = defaultdict(list)
        for path in paths:
            segments = path.split("/")
            for n in range(1, len(segments) + 1):
                self.by_suffix["/".join(segments[-n:])].append(path)

    def match(self, path: str, min_segments: int) -> list[str]:
        """The indexed files `path` most specifically names (longest matching suffix), [] when none."""
        segments = [s for s in path.replace("\\", "/").split("/") if s and s != "."]
        floor = min(min_segments, len(segments))
        for n in range(len(segments), max(1, floor) - 1, -1):
            found = self.by_suffix.get("/".join(segments[-n:]))
            if found:
                return sorted(found) if len(found) <= MAX_PATH_MATCHES else []
        return []


class DirectResolver:
    """Frames and paths -> a ranked chunk list over one snapshot's graph tables."""

    def __init__(self) -> None:
        self._indexes: dict[int, tuple[SnapshotGraph, PathSuffixIndex]] = {}
        self._lock = threading.Lock()

    def _index(self, graph: SnapshotGraph) -> PathSuffixIndex:
        with self._lock:
            held = self._indexes.get(id(graph))
            if held is None or held[0] is not graph:
                if len(self._indexes) >= MAX_SUFFIX_INDEXES:
                    self._indexes.clear()
                held = self._indexes[id(graph)] = (graph, PathSuffixIndex(graph.paths))
            return held[1]

    def frames(self, graph: SnapshotGraph, frames: list[Frame]) -> RankedList:
        index = self._index(graph)
        chosen: list[str] = []
        for frame in frames:
            for path in index.match(frame.path, MIN_PATH_SEGMENTS):
                chunk = _frame_chunk(graph.chunks_by_path.get(path, []), frame)
                if chunk is not None:
                    chosen.append(chunk.chunk_id)
        return _ranked(chosen)

    def paths(self, graph: SnapshotGraph, paths: list[str]) -> RankedList:
        index = self._index(graph)
        chosen: list[str] = []
        for wanted in paths:
            for path in index.match(wanted, MIN_PATH_SEGMENTS):
                chunks = graph.chunks_by_path.get(path, [])
                if chunks:
                    chosen.append(min(chunks, key=lambda c: (c.start_line, c.end_line)).chunk_id)
        return _ranked(chosen)


def _frame_chunk(chunks: list[Chunk], frame: Frame) -> Chunk | None:
    """The named function's chunk (holding the line first), else the smallest chunk holding the line,
    else the file's first chunk."""
    if not chunks:
        return None

    def holds(c: Chunk) -> bool:
        return c.start_line <= frame.line <= c.end_line

    if frame.function:
        named = [c for c in chunks if c.symbol and (c.symbol == frame.function or c.symbol.endswith("." + frame.function))]
        if named:
            return min(named, key=lambda c: (not holds(c), c.end_line - c.start_line, c.start_line))
    holding = [c for c in chunks if holds(c)]
    if holding:
        return min(holding, key=lambda c: (c.end_line - c.start_line, c.start_line))
    return min(chunks, key=lambda c: (c.start_line, c.end_line))


def _ranked(chunk_ids: list[str]) -> RankedList:
    return [(cid, rank) for rank, cid in enumerate(dict.fromkeys(chunk_ids), 1)]
