"""Client-facing error text: one line, no Java stack trace, no absolute server path."""

from __future__ import annotations

import errno

from semantica.errors import public_message, scrub


def test_paths_are_cut_to_their_last_component():
    text = scrub("cannot read /srv/index/psf+requests/2026-abc/vectors/shard-000.faiss: bad magic")
    assert text == "cannot read .../shard-000.faiss: bad magic"


def test_java_stack_frames_and_later_lines_are_dropped():
    trace = ("org.apache.lucene.index.CorruptIndexException: checksum failed (resource=/x/y/_0.cfs)\n"
             "\tat org.apache.lucene.codecs.CodecUtil.checkFooter(CodecUtil.java:440)\n"
             "\tat io.anserini.search.SimpleSearcher.<init>(SimpleSearcher.java:120)")
    text = scrub(trace)
    assert "\tat" not in text and "CodecUtil" not in text and "/x/y" not in text and "\n" not in text
    assert text.startswith("org.apache.lucene.index.CorruptIndexException: checksum failed")


def test_permission_errors_say_permission_denied():
    exc = PermissionError(errno.EACCES, "Permission denied", "/srv/index/team+lib/CURRENT")
    assert public_message(exc) == "PermissionError: permission denied on CURRENT"


def test_missing_files_name_only_the_file():
    exc = FileNotFoundError(errno.ENOENT, "No such file or directory", "/srv/index/r/s/chunks.parquet")
    assert public_message(exc) == "FileNotFoundError: chunks.parquet does not exist"


def test_long_messages_are_bounded():
    assert len(public_message(RuntimeError("x" * 5000))) < 400
