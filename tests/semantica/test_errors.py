"""Client-facing error text (one line, no Java stack trace, no absolute server path) and the one error taxonomy."""

from __future__ import annotations

import errno
import pickle
import sqlite3

import pytest

from semantica.api import QueryError
from semantica.config import ConfigError
from semantica.errors import (
    ErrorKind,
    declared_error_types,
    describe,
    kind_of,
    local_kind_of,
    public_message,
    scrub,
)
from semantica.ondisk.layout_errors import BrokenSnapshotError, LayoutError, UnknownRepoError
from semantica.ondisk.repo_names import RepoNameError


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


# -- the error taxonomy ----------------------------------------------------------------------------

def _serving_errors():
    from serving.api.http.errors import ClientClosed, DeadlineExceeded, Forbidden, Overloaded, PayloadTooLarge, Unauthorized
    from serving.graph.ops import UnknownNameError
    from serving.graph.service import GraphRequestError
    from serving.ray.remote import StageUnavailable

    return {QueryError("q"): 400, Unauthorized("u"): 401, Forbidden("f"): 403, UnknownRepoError("a/b", ["c/d"]): 404,
            UnknownNameError("n"): 404, PayloadTooLarge("p"): 413, GraphRequestError("g"): 422,
            RepoNameError("r"): 422, ClientClosed("c"): 499, BrokenSnapshotError("b"): 503, LayoutError("l"): 503,
            StageUnavailable("Fusion", "down"): 503, Overloaded("o"): 503, DeadlineExceeded("d"): 504,
            RuntimeError("bug"): 500, KeyError("bug"): 500}


def test_every_error_has_one_http_status_from_the_table():
    for exc, status in _serving_errors().items():
        assert kind_of(exc).http_status == status, exc


def test_each_kind_has_an_mcp_code_and_a_cli_exit():
    assert len({k.http_status for k in ErrorKind}) == len(ErrorKind)
    assert ErrorKind.INVALID.mcp_code == -32602 and ErrorKind.INTERNAL.mcp_code == -32603
    assert ErrorKind.NOT_FOUND.mcp_code == -32002  # MCP's resource-not-found
    assert all(k.cli_exit == 1 for k in ErrorKind)
    assert [k.slug for k in ErrorKind if k.caller_error] == ["bad_request", "unauthorized", "forbidden", "not_found",
                                                             "payload_too_large", "invalid", "client_closed"]


def test_local_surfaces_report_builtin_errors_and_leave_bugs_alone():
    assert local_kind_of(ValueError("x")) is ErrorKind.INVALID
    assert local_kind_of(KeyError("x")) is ErrorKind.NOT_FOUND
    assert local_kind_of(PermissionError("x")) is ErrorKind.FORBIDDEN
    assert local_kind_of(sqlite3.OperationalError("disk full")) is ErrorKind.UNAVAILABLE
    assert local_kind_of(ConfigError("x")) is ErrorKind.INVALID
    assert local_kind_of(TypeError("a bug")) is None and kind_of(TypeError("a bug")) is ErrorKind.INTERNAL


def test_declared_error_types_finds_each_class_that_declares_a_kind():
    declared = set(declared_error_types())
    assert {QueryError, RepoNameError, LayoutError, UnknownRepoError, ConfigError} <= declared
    assert ValueError not in declared


def test_unknown_repository_lists_only_what_the_caller_may_read():
    exc = UnknownRepoError("team-a/nonexistent", ["secret/vault", "team-a/alpha", "team-b/beta"])
    assert "secret/vault" in str(exc) and "team-b/beta" in str(exc)  # a local caller reads the whole index
    scoped = describe(exc, lambda name: name.startswith("team-a/"))
    assert scoped.kind is ErrorKind.NOT_FOUND and scoped.error == "UnknownRepoError"
    assert "team-a/alpha" in scoped.message and "secret" not in scoped.message and "team-b" not in scoped.message
    assert "indexed: none" in describe(exc, lambda name: False).message
    holder = UnknownRepoError("a/b", detail="repository 'a/b' has no published snapshot: its directory holds 'x/y'")
    assert "x/y" in describe(holder).message and "x/y" not in describe(holder, lambda name: True).message


def test_unknown_repository_error_survives_pickling_across_processes():
    exc = pickle.loads(pickle.dumps(UnknownRepoError("a/b", ["c/d", "e/f"])))
    assert str(exc) == str(UnknownRepoError("a/b", ["c/d", "e/f"])) and exc.indexed == ["c/d", "e/f"]
    message = describe(exc, lambda name: name == "e/f").message
    assert "e/f" in message and "c/d" not in message


def test_describe_is_one_line_without_server_paths_and_keeps_the_kind_fields():
    from serving.ray.remote import StageUnavailable

    report = describe(StageUnavailable("Fusion", "ConnectionError: /srv/x/y.sock refused\nmore"))
    assert report.body()["stage"] == "Fusion" and "\n" not in report.message and "/srv" not in report.message
    assert report.kind.http_status == 503


@pytest.mark.parametrize(("op", "kind"), [("bogus", "invalid")])
def test_the_daemon_answers_an_error_with_its_kind(tmp_path, op, kind):
    from serving.api.daemon import QueryDaemon
    from tests.conftest import make_config

    daemon = QueryDaemon(make_config(tmp_path), tmp_path / "d.sock")
    try:
        answer = daemon.answer({"op": op})
    finally:
        daemon._server.server_close()
    assert answer["ok"] is False and answer["kind"] == kind and "unknown op" in answer["message"]


def test_mcp_turns_the_callers_mistakes_into_tool_errors_and_lets_bugs_raise():
    from semantica.ondisk.source import GitError
    from serving.api.mcp.server import is_user_error

    for mistake in (UnknownRepoError("a/b", []), ValueError("bad k"), GitError("not a repository"), OSError("gone"),
                    BrokenSnapshotError("unreadable")):
        assert is_user_error(mistake), mistake
    assert not is_user_error(RuntimeError("a bug")) and not is_user_error(TypeError("a bug"))
