"""The learned localizer's replay on a real git repository: candidates are the files discovery finds at each
instance's base commit, and discovery runs once per base commit, not once per instance."""

from __future__ import annotations

from pathlib import Path

import pytest

from jobs.eval.instances import Instance
from jobs.localizer import replay
from jobs.localizer.replay import LearnedReplay
from semantica.config import load_config
from tests.dated_git import commit, git

REPO = "acme/replay-shop"  # a name no other test replays (the replay's builders are kept per repository name)
CART = "def cart_total(items):\n    return sum(item.price for item in items)\n"
COUPON = "def apply_coupon(total, coupon):\n    return total - coupon.discount\n"
SHIPPING = "def shipping_cost(weight):\n    return 5 + weight * 0.1\n"


class CountingSource(replay.RepoSource):
    """The real discovery, counted per commit."""

    calls: dict[str, int] = {}

    def entries(self):  # noqa: ANN201 - RepoSource.entries' own return
        CountingSource.calls[self.commit] = CountingSource.calls.get(self.commit, 0) + 1
        return super().entries()


@pytest.fixture
def clones(tmp_path: Path) -> tuple[Path, str, str]:
    """`<dir>/acme+replay-shop`: a first commit with the cart, a vendored copy and an ignored scratch file;
    a second commit that adds shipping."""
    repo = tmp_path / "repos" / REPO.replace("/", "+")
    repo.mkdir(parents=True)
    git(repo, "init", "-q")
    first = commit(repo, {"shop/cart.py": CART, "shop/coupons.py": COUPON, "build/cart.py": CART,
                          "scratch/try_cart.py": CART, ".semanticaignore": "scratch/\n"}, "cart and coupons", day=0)
    second = commit(repo, {"shop/shipping.py": SHIPPING}, "shipping", day=1)
    return tmp_path / "repos", first, second


def test_discovery_runs_once_per_base_commit_and_bounds_the_candidates(clones, tmp_path, monkeypatch) -> None:
    repos_dir, first, second = clones
    monkeypatch.setattr(replay, "RepoSource", CountingSource)
    monkeypatch.setattr(CountingSource, "calls", {})
    config = load_config(None, [f"paths.cache_dir={tmp_path / 'cache'}", "localizer.learned_files=false"],
                         environ={})
    instances = [Instance("shop-1", REPO, first, "the cart total ignores the coupon"),
                 Instance("shop-2", REPO, first, "apply_coupon subtracts the discount twice"),
                 Instance("shop-3", REPO, second, "shipping cost is wrong for heavy carts"),
                 Instance("shop-4", REPO, second, "the cart total is wrong when shipping is free")]

    files = {inst.instance_id: set(LearnedReplay(config, repos_dir).candidates(inst).files) for inst in instances}

    assert CountingSource.calls == {first: 1, second: 1}
    at_first = {"shop/cart.py", "shop/coupons.py"}  # build/ is vendored, scratch/ is in .semanticaignore
    assert "shop/cart.py" in files["shop-1"] and files["shop-1"] | files["shop-2"] <= at_first
    assert "shop/shipping.py" in files["shop-3"] and files["shop-3"] | files["shop-4"] <= at_first | {"shop/shipping.py"}


def test_a_clone_missing_an_old_blob_is_replayed_without_history(tmp_path) -> None:
    """A bare clone that lacks one old blob (a size-limited mirror) makes `git log -p` fail; the indexer then
    publishes the snapshot without history, and the replay ranks the instance the same way instead of failing it."""
    repo = tmp_path / "repos" / "acme+replay-gap"
    repo.mkdir(parents=True)
    git(repo, "init", "-q")
    commit(repo, {"shop/cart.py": CART}, "cart", day=0)
    commit(repo, {"shop/cart.py": CART + COUPON}, "fix the cart total with coupons", day=1)
    base = commit(repo, {"shop/shipping.py": SHIPPING}, "shipping", day=2)
    old_blob = git(repo, "rev-parse", "HEAD~2:shop/cart.py").strip()
    (repo / ".git" / "objects" / old_blob[:2] / old_blob[2:]).unlink()
    config = load_config(None, [f"paths.cache_dir={tmp_path / 'cache'}", "localizer.learned_files=false",
                                "localizer.history_features=true"], environ={})

    found = LearnedReplay(config, tmp_path / "repos").candidates(
        Instance("gap-1", "acme/replay-gap", base, "the cart total ignores the coupon"))

    assert "shop/cart.py" in found.files
