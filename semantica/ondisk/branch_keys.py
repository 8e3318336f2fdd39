"""Branch snapshots: one current snapshot per repository and branch, published under `repo@branch`.

The default branch (the working tree or HEAD) keeps the bare repository name; any other branch gets its own key,
so it has its own CURRENT and retention in the layout (`semantica.layout`) and is read under its repository's scope.
"""

from __future__ import annotations

from collections.abc import Mapping

from semantica.errors import ErrorKind
from semantica.ondisk.layout_errors import BRANCH_SEPARATOR, LayoutError
from semantica.ondisk.repo_names import RepoNameError, normalize_repo_name

_PROBE_REPO = "owner/name"  # any valid repository name: a branch is checked as part of a published name


class BranchNotIndexed(LookupError):
    """A query names a branch no repository was indexed at."""

    error_kind = ErrorKind.NOT_FOUND


def check_branch(branch: str) -> str:
    """A branch a query names, unchanged, or RepoNameError (422) saying why no snapshot could be published under it."""
    if not branch.strip():
        raise RepoNameError("branch is blank; name a branch indexed with `semantica index --repo PATH --ref BRANCH`")
    try:
        normalize_repo_name(branch_key(_PROBE_REPO, branch))
    except RepoNameError as exc:
        raise RepoNameError(f"branch {branch!r} cannot name a snapshot: {exc}") from None
    return branch


def names_at_branch(repos: list[str], branch: str, published: list[str]) -> list[str]:
    """The published names a query at `branch` reads: each of `repos` at it (none named: every `published`
    name at it). A repository that already names a branch is a RepoNameError (422); no name at all, BranchNotIndexed."""
    named_branch = [r for r in repos if BRANCH_SEPARATOR in r]
    if named_branch:
        raise RepoNameError(f"repository {named_branch[0]!r} already names a branch and the query names branch "
                            f"{branch!r}: name the bare repository with the branch, or the branch snapshot alone")
    names = [branch_key(r, branch) for r in repos] if repos else [
        r for r in published if split_branch_key(r)[1] == branch]
    if not names:
        raise BranchNotIndexed(f"no repository has a snapshot of branch {branch!r}; index it with `semantica index "
                               f"--repo PATH --name NAME --ref {branch}` (`semantica repos`, MCP list_repos and "
                               "GET /v1/repos list the branches)")
    return names


def branch_key(repo: str, branch: str | None) -> str:
    """The name a branch's snapshot is published under: `repo` for the default branch (the working tree
    or HEAD), `repo@branch` for any other, so each branch keeps its own CURRENT and retention."""
    if not branch:
        return repo
    if BRANCH_SEPARATOR in repo:
        raise LayoutError(f"repository name {repo!r} already names a branch; pass the bare repository name")
    return f"{repo}{BRANCH_SEPARATOR}{branch}"


def plain_repo_name(name: str) -> str:
    """A repository name given by a user (`index --name`, `watch --name`, a manifest's `name`): `@` is
    refused, because only `--ref` / `refs` publish a `repo@branch` snapshot; a name holding it would
    publish this checkout as another repository's branch (readable under that repository's scope)."""
    if BRANCH_SEPARATOR in name:
        repo, _, branch = name.partition(BRANCH_SEPARATOR)
        raise RepoNameError(f"repository name {name!r} holds {BRANCH_SEPARATOR!r}, which only branch snapshots "
                            f"have; publish a branch with `--name {repo or 'NAME'} --ref {branch or 'BRANCH'}` "
                            f"(a manifest: `name: {repo or 'NAME'}` with `refs: [{branch or 'BRANCH'}]`)")
    return normalize_repo_name(name)


def split_branch_key(key: str) -> tuple[str, str]:
    """`repo@branch` -> (repo, branch); `repo` -> (repo, "") (the default branch)."""
    repo, _, branch = key.partition(BRANCH_SEPARATOR)
    return repo, branch


def keep_for(repo: str, default_keep: int, branch_keep: int, by_branch: Mapping[str, int]) -> int:
    """Published snapshots kept for `repo` (a `repo@branch` key or a default-branch name): `by_branch`'s
    entry for its branch, else `branch_keep` for any named branch, else `default_keep`."""
    branch = split_branch_key(repo)[1]
    if not branch:
        return default_keep
    return int(by_branch.get(branch, branch_keep))
