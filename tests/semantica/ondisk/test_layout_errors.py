"""The unknown-repository error's advice is a command `semantica index` accepts."""

from __future__ import annotations

from semantica.ondisk.branch_keys import plain_repo_name
from semantica.ondisk.layout_errors import UnknownRepoError


def test_an_unknown_branch_snapshot_suggests_ref_not_an_at_name() -> None:
    message = UnknownRepoError("acme/shop@nope", ["acme/shop"]).message_for(None)
    assert "`semantica index --repo PATH --name acme/shop --ref nope`" in message
    assert "--name acme/shop@" not in message
    plain_repo_name("acme/shop")  # the suggested --name is one `index` takes


def test_a_plain_unknown_repository_keeps_its_name() -> None:
    message = UnknownRepoError("acme/other", ["acme/shop"]).message_for(None)
    assert message.endswith("run `semantica index --repo PATH --name acme/other`")
