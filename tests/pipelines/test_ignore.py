"""Ignore rules against git itself: on a generated tree of tricky cases, discovery ignores exactly what
`git check-ignore` ignores (.gitignore at every level, info/exclude, core.excludesFile), and a
`.semanticaignore` with the same lines ignores the same paths, in the work tree and at a commit."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from pipelines.discover import RepoSource
from pipelines.ignore import IgnoreRulesError, NestedIgnore
from pipelines.source_files import Discovery
from semantica.config import DiscoverConfig

ROOT_RULES = "\n".join([
    "# comment line",
    "*.log",
    "!keep.log",
    "/anchored/",
    "build/",
    "out/",
    "!out/keep.py",          # cannot re-include: out/ itself is excluded
    "**/deep",
    "a/**/b",
    "\\#hash.py",
    "trail.py   ",           # trailing spaces are dropped
    "space\\ ",              # an escaped trailing space is kept
    "docs/*.md",
    "!docs/README.md",
    "/root_only.py",
    "gen-*",
    "!gen-keep.py",
    "[abc]x.py",
    "q?.txt",
    "cache/**",
    "!cache/**/",            # re-include directories under cache/ ...
    "!cache/**/*.py",        # ... and the Python files in them
    "",
])
NESTED_RULES = "\n".join([
    "!*.log",                # re-include what the root ignored
    "local.py",
    "/anch2.py",
    "sub2/",
    "",
])
DEEPER_RULES = "*.py\n!wanted.py\n"
FILES = [
    "keep.log", "x.log", "src/x.log", "src/keep.log",
    "anchored/a.py", "src/anchored/a.py",
    "build/a.py", "src/build/b.py", "buildx/a.py",
    "out/keep.py", "out/other.py",
    "deep", "x/deep", "x/y/deep/z.py",
    "a/b", "a/x/b", "a/x/y/b", "a/x/y/c", "b/a/b",
    "#hash.py", "trail.py", "space ", "space",
    "docs/x.md", "docs/README.md", "docs/sub/y.md",
    "root_only.py", "src/root_only.py",
    "gen-a.py", "gen-keep.py", "src/gen-b.py",
    "ax.py", "dx.py", "q1.txt", "q12.txt",
    "cache/top.txt", "cache/d/x.py", "cache/d/x.txt",
    "nested/x.log", "nested/local.py", "nested/anch2.py", "nested/inner/anch2.py", "nested/inner/local.py",
    "nested/sub2/a.py", "nested/deeper/a.py", "nested/deeper/wanted.py", "nested/deeper/more/b.py",
    "secret.py", "src/secret.py", "x.bak", "src/y.bak",
    "plain.py", "src/plain.py", "tracked.log", "build2/tracked_build.py",
]
TRACKED_THOUGH_IGNORED = ["tracked.log"]


def git(repo: Path, *args: str, stdin: bytes | None = None) -> bytes:
    result = subprocess.run(
        ["git", "-c", "user.name=Test", "-c", "user.email=test@example.com", "-c", "init.defaultBranch=main",
         "-C", str(repo), *args],
        input=stdin, capture_output=True, check=False,
    )
    if result.returncode not in (0, 1):  # check-ignore answers 1 when nothing is ignored
        raise AssertionError(result.stderr.decode())
    return result.stdout


def write_tree(repo: Path, ignore_name: str) -> None:
    """The tricky tree, with its rule files named `ignore_name`."""
    for path in FILES:
        file = repo / path
        file.parent.mkdir(parents=True, exist_ok=True)
        file.write_text(f"# {path}\n")
    (repo / ignore_name).write_text(ROOT_RULES)
    (repo / "nested" / ignore_name).write_text(NESTED_RULES)
    (repo / "nested" / "deeper" / ignore_name).write_text(DEEPER_RULES)


def all_paths(repo: Path) -> list[str]:
    return sorted(str(p.relative_to(repo)) for p in repo.rglob("*") if p.is_file() and ".git" not in p.parts)


def check_ignore(repo: Path, paths: list[str], no_index: bool = False) -> set[str]:
    args = ["check-ignore", "-z", "--stdin"] + (["--no-index"] if no_index else [])
    out = git(repo, *args, stdin=b"\0".join(p.encode() for p in paths) + b"\0")
    return {p.decode() for p in out.split(b"\0") if p}


def ignored_by(found: Discovery, paths: list[str]) -> set[str]:
    """Paths discovery ignored (a listed directory covers everything under it); every other path must be
    listed as an entry or a skip, so nothing is lost silently."""
    ignored = {e.path for e in found.ignored}
    dirs = tuple(p for p in ignored if p.endswith("/"))
    decided = ignored | {e.path for e in found.entries} | {e.path for e in found.errors}
    result = set()
    for path in paths:
        if path in ignored or path.startswith(dirs):
            result.add(path)
        else:
            assert path in decided, f"{path} neither indexed, skipped nor ignored"
    return result


@pytest.fixture(scope="module")
def git_tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The tree with `.gitignore` files, info/exclude, a global excludes file and a tracked ignored file."""
    base = tmp_path_factory.mktemp("ignore")
    repo = base / "repo"
    repo.mkdir()
    git(repo, "init", "-q")
    write_tree(repo, ".gitignore")
    (repo / ".git" / "info").mkdir(parents=True, exist_ok=True)
    (repo / ".git" / "info" / "exclude").write_text("secret.py\n")
    global_excludes = base / "global-excludes"
    global_excludes.write_text("*.bak\n")
    git(repo, "config", "core.excludesFile", str(global_excludes))
    git(repo, "add", "-f", *TRACKED_THOUGH_IGNORED, "build2/tracked_build.py")
    git(repo, "commit", "-q", "-m", "some tracked files")
    return repo


def test_worktree_discovery_matches_git_check_ignore(git_tree: Path) -> None:
    paths = all_paths(git_tree)
    found = RepoSource(str(git_tree), None, DiscoverConfig()).discover()
    expected = check_ignore(git_tree, paths)
    assert ignored_by(found, paths) == expected
    # the fixture really exercises the rules: both outcomes for each kind of case
    assert {"x.log", "anchored/a.py", "out/keep.py", "a/x/y/b", "#hash.py", "trail.py", "space ",
            "secret.py", "x.bak", "cache/top.txt", "nested/deeper/a.py"} <= expected
    assert not {"keep.log", "src/anchored/a.py", "nested/x.log", "space", "docs/README.md", "cache/d/x.py",
                "tracked.log", "nested/inner/anch2.py", "nested/deeper/wanted.py", "buildx/a.py"} & expected


def test_ignored_reasons_name_the_rule(git_tree: Path) -> None:
    found = RepoSource(str(git_tree), None, DiscoverConfig()).discover()
    reasons = {e.path: e.reason for e in found.ignored}
    assert reasons["build/"] == "ignored by .gitignore:5: build/"
    assert reasons["secret.py"] == "ignored by .git/info/exclude:1: secret.py"
    assert reasons["x.bak"].endswith("global-excludes:1: *.bak")


@pytest.fixture(scope="module")
def twins(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The same rules as `.gitignore` (untracked, git decides) and as `.semanticaignore` (all committed)."""
    base = tmp_path_factory.mktemp("twins")
    reference, ours = base / "reference", base / "ours"
    for repo, name in ((reference, ".gitignore"), (ours, ".semanticaignore")):
        repo.mkdir()
        git(repo, "init", "-q")
        write_tree(repo, name)
    git(ours, "add", "-A")
    git(ours, "commit", "-q", "-m", "everything tracked, .semanticaignore decides")
    return reference, ours


@pytest.mark.parametrize("commit", [None, "HEAD"])
def test_semanticaignore_matches_git_on_the_same_rules(twins: tuple[Path, Path], commit: str | None) -> None:
    reference, ours = twins
    rename = {".gitignore": ".semanticaignore"}
    paths = all_paths(reference)
    expected = {"/".join(rename.get(part, part) for part in p.split("/"))
                for p in check_ignore(reference, paths, no_index=True)}
    ours_paths = all_paths(ours)
    found = RepoSource(str(ours), commit, DiscoverConfig()).discover()
    assert ignored_by(found, ours_paths) == expected
    assert len(expected) > 20


def test_semanticaignore_reason_and_switch(twins: tuple[Path, Path]) -> None:
    _, ours = twins
    found = RepoSource(str(ours), "HEAD", DiscoverConfig()).discover()
    reasons = {e.path: e.reason for e in found.ignored}
    assert reasons["nested/deeper/a.py"] == "ignored by nested/deeper/.semanticaignore:1: *.py"
    off = RepoSource(str(ours), "HEAD", DiscoverConfig(ignore_file="")).discover()
    assert off.ignored == []


def test_nested_ignore_without_files_keeps_everything() -> None:
    rules = NestedIgnore(".semanticaignore", {})
    assert not rules and rules.match_all(["a/b.py"]) == {}


DEEP = "/".join(f"d{level}" for level in range(30))  # git 2.39's check-ignore -v segfaults on ignored paths this deep
DEEP_IGNORED = 70  # more deep ignored paths than MAX_CRASH_PATHS: the old halving refused the whole repository


@pytest.fixture()
def deep_repo(tmp_path: Path) -> Path:
    """A 30-level directory with ignored, kept and re-included files (real git, nothing faked)."""
    repo = tmp_path / "deep"
    (repo / DEEP).mkdir(parents=True)
    (repo / DEEP / "a.py").write_text("def deep():\n    return 1\n")
    (repo / DEEP / "keep.gen.py").write_text("def kept():\n    return 2\n")
    for number in range(DEEP_IGNORED):
        (repo / DEEP / f"n{number}.gen.py").write_text(f"N = {number}\n")
    (repo / "keep.py").write_text("x = 1\n")
    (repo / "skip.gen.py").write_text("x = 2\n")
    (repo / ".semanticaignore").write_text("*.gen.py\n!keep.gen.py\n")
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    subprocess.run(["git", "-C", str(repo), "add", "-A"], check=True)
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@e", "-C", str(repo), "commit", "-qm", "x"], check=True)
    return repo


@pytest.mark.parametrize("commit", [None, "HEAD"])
def test_a_30_level_directory_keeps_git_verdict_on_every_path(deep_repo, commit):
    """N10: the deep ignored paths stay ignored, the deep re-included one is indexed and the shallow rule is named
    (before: 'git check-ignore failed' for the repository, or the re-included file kept out as 'could not be
    evaluated')."""
    found = RepoSource(str(deep_repo), commit, DiscoverConfig()).discover()
    assert [e.path for e in found.entries] == [f"{DEEP}/a.py", f"{DEEP}/keep.gen.py", "keep.py"]
    reasons = {e.path: e.reason for e in found.ignored}
    assert reasons["skip.gen.py"] == "ignored by .semanticaignore:1: *.gen.py"
    deep = {f"{DEEP}/n{number}.gen.py" for number in range(DEEP_IGNORED)}
    assert set(reasons) == deep | {"skip.gen.py"}
    assert all(reasons[path].startswith("ignored by .semanticaignore") for path in deep)


def test_plan_and_index_of_a_30_level_directory_succeed(deep_repo, tmp_path, capsys):
    import json

    from jobs.cli import main
    from tests.conftest import make_config

    config = make_config(tmp_path)
    args = ["--index-root", config.paths.index_root, "--set", f"paths.cache_dir={config.paths.cache_dir}"]
    assert main(["plan", str(deep_repo), "--json"]) == 0
    (plan,) = json.loads(capsys.readouterr().out)
    assert plan["files"] == 3 and plan["skipped"]["ignored"]["files"] == DEEP_IGNORED + 1, plan["skipped"]
    assert main(["index", "--repo", str(deep_repo), "--json", *args]) == 0
    assert json.loads(capsys.readouterr().out)["files"] == 3
    assert main(["defs", "kept", *args]) == 0
    assert f"{DEEP}/keep.gen.py" in capsys.readouterr().out


def test_git_ignored_paths_keep_their_rules_next_to_a_30_level_one(tmp_path):
    """`plan`'s list of what .gitignore keeps out: one deep ignored path crashed `check-ignore -v` for the whole list,
    so every path's reason was the bare 'ignored by git'; now only the deep one can lose its rule's name."""
    repo = tmp_path / "worktree"
    (repo / DEEP).mkdir(parents=True)
    (repo / "build").mkdir()
    (repo / "build" / "out.py").write_text("x = 1\n")
    (repo / DEEP / "x.log").write_text("log\n")
    (repo / "top.log").write_text("log\n")
    (repo / "a.py").write_text("a = 1\n")
    (repo / ".gitignore").write_text("build/\n*.log\n")
    git(repo, "init", "-q")
    git(repo, "add", "a.py", ".gitignore")
    git(repo, "commit", "-qm", "x")
    reasons = {e.path: e.reason for e in RepoSource(str(repo), None, DiscoverConfig()).discover().ignored}
    assert reasons["build/"] == "ignored by .gitignore:1: build/"
    assert reasons["top.log"] == "ignored by .gitignore:2: *.log"
    assert reasons[f"{DEEP}/x.log"].startswith("ignored by ")


CRASHING_GIT = """#!{python}
import os, signal, subprocess, sys
REAL_GIT = {real_git!r}
if "check-ignore" in sys.argv:
    os.kill(os.getpid(), signal.SIGSEGV)
os.execv(REAL_GIT, [REAL_GIT, *sys.argv[1:]])
"""


def crashing_git(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A `git` first on PATH whose `check-ignore` is always killed by SIGSEGV (the process boundary)."""
    import shutil
    import sys

    folder = tmp_path / "bin"
    folder.mkdir()
    wrapper = folder / "git"
    wrapper.write_text(CRASHING_GIT.format(python=sys.executable, real_git=shutil.which("git")))
    wrapper.chmod(0o755)
    monkeypatch.setenv("PATH", f"{folder}:{os.environ['PATH']}")


def test_a_git_that_cannot_decide_at_all_is_a_clear_error(deep_repo, tmp_path, monkeypatch, capsys):
    from jobs.cli import main

    crashing_git(tmp_path, monkeypatch)
    with pytest.raises(IgnoreRulesError, match=r"killed by SIGSEGV.*git version .*cannot evaluate the "
                                               r"\.semanticaignore rules"):
        RepoSource(str(deep_repo), None, DiscoverConfig()).entries()
    assert main(["plan", str(deep_repo)]) != 0
    err = capsys.readouterr().err
    assert "killed by SIGSEGV" in err and "Traceback" not in err
