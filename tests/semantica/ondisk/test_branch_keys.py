"""Which published names a query at a branch reads, and which branch names a query may carry."""

from __future__ import annotations

import pytest

from semantica.ondisk.branch_keys import BranchNotIndexed, check_branch, names_at_branch
from semantica.ondisk.repo_names import RepoNameError

PUBLISHED = ["acme/api", "acme/api@release", "acme/web", "acme/web@release", "acme/web@next"]


def test_named_repositories_are_read_at_the_branch():
    assert names_at_branch(["acme/api"], "release", PUBLISHED) == ["acme/api@release"]
    # a named repository without that branch is named anyway: the search answers it as an unknown repository
    assert names_at_branch(["acme/api"], "next", PUBLISHED) == ["acme/api@next"]


def test_no_repository_named_reads_every_repository_at_the_branch():
    assert names_at_branch([], "release", PUBLISHED) == ["acme/api@release", "acme/web@release"]
    assert names_at_branch([], "next", PUBLISHED) == ["acme/web@next"]


def test_a_branch_nobody_indexed_or_a_name_that_already_has_one_is_refused():
    with pytest.raises(BranchNotIndexed, match="no repository has a snapshot of branch 'gone'"):
        names_at_branch([], "gone", PUBLISHED)
    with pytest.raises(RepoNameError, match="'acme/api@release' already names a branch"):
        names_at_branch(["acme/api@release"], "release", PUBLISHED)


@pytest.mark.parametrize("branch", ["release", "feature/login", "v2.32.x", "user@host"])
def test_a_git_branch_name_is_kept_as_it_is(branch):
    assert check_branch(branch) == branch


@pytest.mark.parametrize(("branch", "why"), [("", "blank"), ("   ", "blank"), ("a/..", "'..' segment"),
                                             ("x\u0000y", "control character")])
def test_a_branch_that_cannot_name_a_snapshot_says_why(branch, why):
    with pytest.raises(RepoNameError, match=why):
        check_branch(branch)
