"""The repository manifest of `index-batch`, and resolving a manifest entry to a local git directory.

Manifest format (`conf/repos.yaml`): a list (or `{repos: [...]}`) of
`{name, path | url, commit | branch | refs: [branches], include: [globs], exclude: [globs]}`. A url is
cloned bare into `<cache_dir>/clones` (once per repository, fetched again when present). `branch` is what
the repository's default snapshot follows; `refs` publishes one snapshot per branch, `NAME@BRANCH`, as
`semantica index --ref` does (list the entry twice, once without `refs`, to keep the default one too).
`semantica index` is a manifest of one entry.
"""

from __future__ import annotations

import dataclasses
import fnmatch
import hashlib
import os
import re
import subprocess
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from pipelines.discover import RepoSource, repo_name_from_path
from pipelines.source_files import Discovery, FileEntry
from semantica.config import DiscoverConfig
from semantica.ondisk.branch_keys import branch_key, plain_repo_name, split_branch_key
from semantica.ondisk.layout_errors import LayoutError
from semantica.ondisk.repo_names import RepoNameError, normalize_repo_name

CLONES_DIR = "clones"
LIST_KEYS = ("include", "exclude", "refs")
_SAFE = re.compile(r"[^A-Za-z0-9_.-]+")
CLONE_KEY_CHARS = 16
"""Hex digits of sha256(name, url) in a clone's directory name: `q/r` and `q_r`, or one name moved to another
url, never share a clone (the readable prefix alone maps both to `q_r`)."""


class ManifestError(ValueError):
    """The repos manifest is malformed; the message says which entry and what to fix."""


@dataclass
class RepoSpec:
    """One manifest entry."""

    name: str
    path: str = ""
    url: str = ""
    commit: str = ""
    branch: str = ""
    include: list[str] = field(default_factory=list)
    exclude: list[str] = field(default_factory=list)
    refs: list[str] = field(default_factory=list)  # in a manifest file only: expanded to one spec per branch


def load_manifest(path: str | Path) -> list[RepoSpec]:
    """Parse and check the YAML manifest (a list, or a mapping with `repos:`)."""
    file = Path(path)
    if not file.exists():
        raise ManifestError(f"manifest {path} does not exist")
    try:
        raw = yaml.safe_load(file.read_text(encoding="utf-8")) or []
    except (yaml.YAMLError, UnicodeDecodeError) as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark is not None else ""
        reason = getattr(exc, "problem", None) or type(exc).__name__
        raise ManifestError(f"manifest {path} is not YAML{where}: {reason}") from None
    if isinstance(raw, dict):
        raw = raw.get("repos", [])
    if not isinstance(raw, list) or not raw:
        raise ManifestError(f"{path}: expected a non-empty list of repositories (or `repos:` holding one)")
    specs: list[RepoSpec] = []
    known = {f.name for f in dataclasses.fields(RepoSpec)}
    for number, item in enumerate(raw):
        where = f"{path}: repos[{number}]"
        if not isinstance(item, dict):
            raise ManifestError(f"{where}: expected a mapping with name and path or url, got {item!r}")
        unknown = sorted(set(item) - known)
        if unknown:
            raise ManifestError(f"{where}: unknown key(s) {unknown}; known: {sorted(known)}")
        if bool(item.get("path")) == bool(item.get("url")):
            raise ManifestError(f"{where}: give exactly one of `path` and `url`")
        if sum(bool(item.get(k)) for k in ("commit", "branch", "refs")) > 1:
            raise ManifestError(f"{where}: give at most one of `commit`, `branch` and `refs`")
        for key in LIST_KEYS:
            if not isinstance(item.get(key, []), list):
                raise ManifestError(f"{where}: `{key}` must be a list of {'branch names' if key == 'refs' else 'globs'}")
        values = {k: (str(v) if k not in LIST_KEYS else [str(g) for g in v]) for k, v in item.items()
                  if v is not None}
        given = values.get("name")
        if not given:
            values["name"] = _default_name(values)
        try:
            values["name"] = plain_repo_name(given) if given else normalize_repo_name(values["name"])
        except RepoNameError as exc:
            raise ManifestError(f"{where}: {exc}") from None
        specs.extend(_per_ref(RepoSpec(**values), where))
    names = [s.name for s in specs]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise ManifestError(f"{path}: repository names must be unique; duplicated: {duplicates}")
    return specs


def _per_ref(spec: RepoSpec, where: str) -> list[RepoSpec]:
    """An entry with `refs` -> one spec per branch, published as `NAME@BRANCH`; else the entry itself."""
    if not spec.refs:
        return [spec]
    try:
        return [dataclasses.replace(spec, name=branch_key(spec.name, ref), branch=ref, refs=[])
                for ref in dict.fromkeys(spec.refs)]
    except LayoutError as exc:
        raise ManifestError(f"{where}: {exc}") from None


def _default_name(values: dict[str, Any]) -> str:
    if values.get("path"):
        return repo_name_from_path(values["path"]) if Path(values["path"]).exists() else Path(values["path"]).name
    parts = [p for p in re.split(r"[:/]", values["url"].rstrip("/")) if p]
    tail = [p.removesuffix(".git") for p in parts[-2:]]
    return "/".join(tail)


def clone_dir_name(repo: str, url: str) -> str:
    """`<readable name>-<sha256(name, url) prefix>.git`: one directory per (name, url), never shared."""
    key = hashlib.sha256(f"{repo}\0{url}".encode()).hexdigest()[:CLONE_KEY_CHARS]
    return f"{_SAFE.sub('_', repo)}-{key}.git"


def _check_origin(clone: Path, url: str, timeout_s: float) -> None:
    """A cached clone is reused only for the url it was cloned from (its directory name hashes the url; this
    catches a directory put or edited there by hand): another origin is a RuntimeError, never its code."""
    done = subprocess.run(["git", "-C", str(clone), "config", "--get", "remote.origin.url"], capture_output=True,
                          timeout=timeout_s, check=False)
    origin = done.stdout.decode("utf-8", "replace").strip()
    if origin != url:
        raise RuntimeError(f"the cached clone {clone.name} is of {origin or 'no origin'!r}, not {url!r}: remove "
                           f"{clone} and run again")


def resolve_repo_path(spec: RepoSpec, cache_dir: Path, timeout_s: float) -> str:
    """The local git directory of a spec: its path, or a bare clone of its url (fetched if present)."""
    if spec.path:
        return spec.path
    repo = split_branch_key(spec.name)[0]  # one clone per repository, whichever branches it publishes
    target = cache_dir / CLONES_DIR / clone_dir_name(repo, spec.url)
    target.parent.mkdir(parents=True, exist_ok=True)
    if (target / "HEAD").exists():
        _check_origin(target, spec.url, timeout_s)
        cmd = ["git", "-C", str(target), "fetch", "--prune", "origin", "+refs/heads/*:refs/heads/*"]
    else:
        cmd = ["git", "clone", "--bare", "--quiet", spec.url, str(target)]
    try:
        done = subprocess.run(cmd, capture_output=True, timeout=timeout_s, check=False,
                              env={**os.environ, "GIT_TERMINAL_PROMPT": "0"})
    except subprocess.TimeoutExpired:
        raise RuntimeError(f"cloning {spec.url} timed out after {timeout_s:.0f}s") from None
    if done.returncode != 0:
        detail = done.stderr.decode("utf-8", "replace").strip().splitlines()
        raise RuntimeError(f"cannot clone {spec.url}: {detail[-1] if detail else 'git failed'}")
    return str(target)


@dataclass
class SpecSource:
    """A manifest entry opened for discovery: what `index` and `plan` both start from (one code path)."""

    source: RepoSource
    include: list[str]  # the entry's include globs, else discover.include_globs
    entries: list[FileEntry]  # after discovery and the entry's exclude globs
    excluded: list[str]  # paths the entry's exclude globs dropped
    found: Discovery


def open_spec(spec: RepoSpec, discover: DiscoverConfig, cache_dir: Path, timeout_s: float,
              with_ignored: bool = False, before_listing: Callable[[RepoSource], None] | None = None) -> SpecSource:
    """Resolve, open and discover one entry; `with_ignored` also lists the ignored paths (for `plan`);
    `before_listing` sees the opened source before its files are listed and hashed."""
    path = resolve_repo_path(spec, cache_dir, timeout_s)
    include = list(spec.include) or list(discover.include_globs)
    source = RepoSource(path, spec.commit or spec.branch or None, dataclasses.replace(discover, include_globs=include))
    if before_listing is not None:
        before_listing(source)
    found = source.discover() if with_ignored else Discovery(*source.entries(), [])
    kept = [e for e in found.entries if not excluded(e.path, spec.exclude)]
    dropped = [e.path for e in found.entries if excluded(e.path, spec.exclude)]
    return SpecSource(source, include, kept, dropped, found)


def excluded(path: str, globs: list[str]) -> bool:
    name = path.rsplit("/", 1)[-1]
    return any(fnmatch.fnmatchcase(path, g) or fnmatch.fnmatchcase(name, g) for g in globs)
