"""What discovery hands on (pipelines/discover.py decides, the parse stage and the caches read): a selected
file's entry, its decoded text, the whole verdict of one snapshot, and git's blob sha of some bytes (the printable
form of a path lives in semantica.ondisk.source, which the freshness check shares)."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from semantica.schema import FileError

NON_UTF8_NAME_REASON = "file name is not valid UTF-8"


class DiscoveryError(ValueError):
    """The repository or commit cannot be read; the message says what is wrong and what to do."""


@dataclass
class FileEntry:
    """A file selected for indexing (content not read yet)."""

    path: str
    blob_sha: str
    size: int
    language: str


@dataclass
class SourceFile:
    """A file's decoded text, ready to parse (CRLF normalised to LF so lines match tree-sitter)."""

    path: str
    blob_sha: str
    language: str
    text: str


@dataclass
class Discovery:
    """Everything discovery decided about a snapshot: files to read, files skipped (with why), and paths
    ignored by git's rules or `.semanticaignore` (a wholly ignored directory is one path ending in "/")."""

    entries: list[FileEntry]
    errors: list[FileError]
    ignored: list[FileError]


def git_blob_sha(data: bytes) -> str:
    """The sha git gives these bytes as a blob."""
    digest = hashlib.sha1(b"blob %d\0" % len(data))
    digest.update(data)
    return digest.hexdigest()
