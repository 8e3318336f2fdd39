"""Discovery on small real git repositories: what is indexed, what is skipped and why."""

from __future__ import annotations

import os
import subprocess
import tracemalloc
from pathlib import Path

import pytest

from pipelines.discover import RepoSource, repo_name_from_path
from pipelines.source_files import DiscoveryError, FileEntry, SourceFile, git_blob_sha
from semantica.config import DiscoverConfig
from semantica.languages import language_of
from semantica.schema import FileError

BIG_FILE_BYTES = 50 * 1024 * 1024
MEMORY_CEILING_BYTES = 8 * 1024 * 1024


def git(repo: Path, *args: str) -> str:
    result = subprocess.run(
        ["git", "-c", "user.name=Test", "-c", "user.email=test@example.com", "-c", "init.defaultBranch=main",
         "-C", str(repo), *args],
        capture_output=True, check=True, text=True,
    )
    return result.stdout.strip()


def init_repo(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    git(path, "init", "-q")
    return path


@pytest.fixture(scope="module")
def messy_repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A repo with one file of every kind discovery must handle, all committed."""
    base = tmp_path_factory.mktemp("messy")
    outside = base / "outside.py"
    outside.write_text("print('outside')\n")
    repo = init_repo(base / "repo")
    (repo / "pkg").mkdir()
    (repo / "pkg" / "good.py").write_text("def hello():\n    return 'hi'\n")
    (repo / "README.md").write_text("# Title\n\nSome text.\n")
    (repo / "crlf.py").write_bytes(b"x = 1\r\ny = 2\r\n")
    (repo / "data.py").write_bytes(b"x = 1\n\x00\x01\x02binary")
    (repo / "latin1.py").write_bytes(b"name = '\xe9t\xe9'\n")
    (repo / "node_modules").mkdir()
    (repo / "node_modules" / "x.js").write_text("module.exports = 1;\n")
    (repo / "app.min.js").write_text("var a=1;\n")
    (repo / "long.js").write_text("var a = '" + "x" * 6000 + "';\n")
    (repo / "notes.xyz").write_text("unknown\n")
    with open(repo / "big.py", "wb") as handle:  # sparse: quick to write
        handle.truncate(BIG_FILE_BYTES)
    os.symlink("does_not_exist.py", repo / "broken.py")
    os.symlink(outside, repo / "escape.py")
    (repo / ".gitignore").write_text("ignored.py\n")
    (repo / "ignored.py").write_text("secret = 1\n")
    git(repo, "add", "-A")
    # A submodule entry (gitlink) without a real submodule checkout.
    git(repo, "update-index", "--add", "--cacheinfo", f"160000,{'1' * 40},sub")
    git(repo, "commit", "-q", "-m", "init")
    return repo


def reasons(errors: list[FileError]) -> dict[str, str]:
    return {e.path: e.reason for e in errors}


def read_all(source: RepoSource, entries: list[FileEntry]) -> tuple[dict[str, SourceFile], dict[str, str]]:
    files: dict[str, SourceFile] = {}
    failed: dict[str, str] = {}
    for item in source.read(entries):
        if isinstance(item, SourceFile):
            files[item.path] = item
        else:
            assert item.stage == "discover"
            failed[item.path] = item.reason
    return files, failed


def check_common(entries: list[FileEntry], errors: list[FileError], files: dict[str, SourceFile],
                 failed: dict[str, str]) -> None:
    skipped = reasons(errors)
    assert skipped["node_modules/x.js"].startswith("vendored")
    assert skipped["app.min.js"].startswith("generated")
    assert skipped["big.py"].startswith("oversized")
    assert skipped["notes.xyz"].startswith("unknown file type")
    assert skipped["broken.py"].startswith("symlink")
    assert skipped["escape.py"].startswith("symlink")
    assert "ignored.py" not in skipped and "ignored.py" not in {e.path for e in entries}
    assert failed["data.py"] == "binary"
    assert failed["latin1.py"].startswith("not valid UTF-8")
    assert failed["long.js"].startswith("generated or minified")
    assert set(files) == {"pkg/good.py", "README.md", "crlf.py"}
    assert files["crlf.py"].text == "x = 1\ny = 2\n"
    assert files["pkg/good.py"].language == "python" and files["README.md"].language == "markdown"


def test_worktree_filters_and_reasons(messy_repo: Path) -> None:
    source = RepoSource(str(messy_repo), None, DiscoverConfig())
    tracemalloc.start()
    entries, errors = source.entries()
    files, failed = read_all(source, entries)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert peak < MEMORY_CEILING_BYTES, "the 50 MB file must never be read into memory"
    check_common(entries, errors, files, failed)
    skipped = reasons(errors)
    assert skipped["broken.py"] == "symlink (broken)"
    assert skipped["escape.py"] == "symlink (points outside the repository)"
    assert skipped["sub"] == "submodule" or "sub" not in {e.path for e in entries}
    good = next(e for e in entries if e.path == "pkg/good.py")
    assert good.blob_sha == git(messy_repo, "hash-object", "pkg/good.py")
    assert good.size == len((messy_repo / "pkg" / "good.py").read_bytes())


def test_commit_reads_git_objects(messy_repo: Path) -> None:
    source = RepoSource(str(messy_repo), "HEAD", DiscoverConfig())
    assert source.commit == git(messy_repo, "rev-parse", "HEAD")
    tracemalloc.start()
    entries, errors = source.entries()
    files, failed = read_all(source, entries)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert peak < MEMORY_CEILING_BYTES
    check_common(entries, errors, files, failed)
    skipped = reasons(errors)
    assert skipped["sub"] == "submodule"
    assert skipped["broken.py"] == "symlink"
    good = next(e for e in entries if e.path == "pkg/good.py")
    assert good.blob_sha == git_blob_sha((messy_repo / "pkg" / "good.py").read_bytes())


def test_bare_clone_at_commit(messy_repo: Path, tmp_path: Path) -> None:
    bare = tmp_path / "mirror.git"
    subprocess.run(["git", "clone", "-q", "--bare", str(messy_repo), str(bare)], check=True)
    sha = git(messy_repo, "rev-parse", "HEAD")
    source = RepoSource(str(bare), sha, DiscoverConfig())
    entries, errors = source.entries()
    files, failed = read_all(source, entries)
    check_common(entries, errors, files, failed)
    # A bare repository has no working tree: commit=None reads HEAD.
    assert RepoSource(str(bare), None, DiscoverConfig()).commit == sha
    assert source.repo == "mirror"  # origin is a local path: the directory name is used


def test_a_blob_the_object_store_lacks_is_skipped_with_a_reason(tmp_path: Path) -> None:
    """A partial mirror (a promisor clone fetched without some blobs) lists them with size "BAD": that file is
    reported, the rest is indexed."""
    repo = init_repo(tmp_path / "partial")
    (repo / "kept.py").write_text("def kept():\n    return 1\n")
    (repo / "lost.py").write_text("def lost():\n    return 2\n")
    git(repo, "add", ".")
    git(repo, "commit", "-qm", "two files")
    lost_sha = git(repo, "rev-parse", "HEAD:lost.py")
    (repo / ".git" / "objects" / lost_sha[:2] / lost_sha[2:]).unlink()
    source = RepoSource(str(repo), "HEAD", DiscoverConfig())
    entries, errors = source.entries()
    assert [e.path for e in entries] == ["kept.py"]
    assert "missing from the repository" in reasons(errors)["lost.py"]
    files, failed = read_all(source, entries)
    assert set(files) == {"kept.py"} and not failed


def test_empty_repository_gives_empty_lists(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "empty")
    for commit in (None, "HEAD"):
        source = RepoSource(str(repo), commit, DiscoverConfig())
        assert source.entries() == ([], [])
        assert list(source.read([])) == []
    with pytest.raises(DiscoveryError, match="not found"):
        RepoSource(str(repo), "deadbeef", DiscoverConfig())


def test_errors_for_bad_paths_and_commits(messy_repo: Path, tmp_path: Path) -> None:
    with pytest.raises(DiscoveryError, match="does not exist"):
        RepoSource(str(tmp_path / "missing"), None, DiscoverConfig())
    plain = tmp_path / "plain"
    plain.mkdir()
    with pytest.raises(DiscoveryError, match="not a git repository"):
        RepoSource(str(plain), None, DiscoverConfig())
    with pytest.raises(DiscoveryError, match="not its root"):
        RepoSource(str(messy_repo / "pkg"), None, DiscoverConfig())
    with pytest.raises(DiscoveryError, match="not found"):
        RepoSource(str(messy_repo), "0123456789abcdef0123456789abcdef01234567", DiscoverConfig())
    with pytest.raises(DiscoveryError, match="not found"):
        RepoSource(str(messy_repo), "no-such-branch", DiscoverConfig())


def test_repo_names(tmp_path: Path) -> None:
    nested = init_repo(tmp_path / "psf+requests" / "repo")
    assert repo_name_from_path(str(nested)) == "psf+requests"
    bare = tmp_path / "flask.git"
    subprocess.run(["git", "init", "-q", "--bare", str(bare)], check=True)
    assert repo_name_from_path(str(bare)) == "flask"
    for url in ("https://github.com/psf/requests.git", "git@github.com:psf/requests.git",
                "ssh://git@github.com/psf/requests", "https://github.com/psf/requests/"):
        git(nested, "remote", "remove", "origin") if git(nested, "remote") else None
        git(nested, "remote", "add", "origin", url)
        assert repo_name_from_path(str(nested)) == "psf/requests", url


def test_language_table() -> None:
    assert language_of("a/b.py") == "python"
    assert language_of("x.TSX") == "tsx"
    assert language_of("docs/index.rst") == "rst"
    assert language_of("Makefile") == "make"
    assert language_of("weird.bin") == ""
    assert language_of(".bashrc") == ""


def test_line_length_and_size_knobs_come_from_config(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "knobs")
    (repo / "a.py").write_text("x = 1\n" * 100)
    (repo / "b.py").write_text("y = '" + "z" * 50 + "'\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "c")
    config = DiscoverConfig(max_file_bytes=100, max_line_chars=40)
    source = RepoSource(str(repo), "HEAD", config)
    entries, errors = source.entries()
    assert reasons(errors)["a.py"].startswith("oversized")
    files, failed = read_all(source, entries)
    assert failed["b.py"].startswith("generated or minified") and not files


@pytest.fixture()
def non_utf8_name_repo(tmp_path: Path) -> Path:
    """A committed file whose name is Latin-1 bytes (`caf\\xe9.py`), next to an ordinary one."""
    repo = init_repo(tmp_path / "names")
    Path(os.fsdecode(os.fsencode(repo) + b"/caf\xe9.py")).write_bytes(b"def w():\n    pass\n")
    (repo / "ok.py").write_text("def ok():\n    return 1\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "names")
    return repo


@pytest.mark.parametrize("commit", [None, "HEAD"])
def test_a_file_name_that_is_not_utf8_is_skipped_by_name_and_the_rest_indexed(non_utf8_name_repo, commit):
    source = RepoSource(str(non_utf8_name_repo), commit, DiscoverConfig())
    entries, errors = source.entries()
    assert [e.path for e in entries] == ["ok.py"]
    (error,) = errors
    assert error.path == "caf\\xe9.py" and error.reason.startswith("file name is not valid UTF-8")
    error.path.encode("utf-8")  # printable: a report, a cache key and a table can hold it
    assert [f.path for f in source.read(entries)] == ["ok.py"]
