"""The final order: fused + alpha*trust + beta*freshness + gamma*diversity, on a real index and real git history."""

from __future__ import annotations

import dataclasses

import pytest

from semantica.api import SearchRequest
from semantica.ondisk.source import GitError
from serving.pipeline import SearchPipeline
from serving.planning.file_ages import AGES_DIR, FileAges
from serving.planning.final_order import TrustRules


def _pipeline(config, **final_order):
    return SearchPipeline(dataclasses.replace(config, final_order=dataclasses.replace(config.final_order, **final_order)))


def _search(pipeline, repo, query, k=10):
    return pipeline.search(SearchRequest(query=query, repos=[repo], k=k, explain=True, late_interaction=False))


def test_trust_rules_first_match_wins_and_match_top_level_directories():
    rules = TrustRules({"src/core/*": 1.0, "*/vendor/*": -1.0, "*deprecated*": -0.5, "*": 0.1})
    assert rules.trust("src/core/app.py") == (1.0, "src/core/*")
    assert rules.trust("vendor/lib.py") == (-1.0, "*/vendor/*")  # a top-level vendor/ too
    assert rules.trust("pkg/vendor/lib.py") == (-1.0, "*/vendor/*")
    assert rules.trust("legacy/deprecated_api.py") == (-0.5, "*deprecated*")
    assert rules.trust("docs/x.md") == (0.1, "*")
    assert TrustRules({}).trust("a.py") == (0.0, "")


def test_trust_demotes_deprecated_code_and_says_so(planning_repo):
    query = "checkout the cart and record the payment"
    plain = _search(_pipeline(planning_repo.config), planning_repo.name, query, k=50)
    trusted = _search(_pipeline(planning_repo.config, alpha=2.0), planning_repo.name, query, k=50)
    legacy = "legacy/deprecated_checkout.py"
    assert "final_order" not in plain.timings_ms and "final_order" in trusted.timings_ms  # weights 0: not run
    before = [h.rank for h in plain.hits if h.path == legacy]
    after = [h.rank for h in trusted.hits if h.path == legacy]
    assert before and min(before) < len(plain.hits) - len(before) + 1  # not already last without trust
    assert after == list(range(len(trusted.hits) - len(after) + 1, len(trusted.hits) + 1))  # now below all else
    view = next(h for h in trusted.hits if h.path == legacy)
    assert "final order" in view.explanation and "2.0*trust -0.50 '*deprecated*'" in view.explanation
    assert [f["path"] for f in trusted.files][-1] == legacy  # the localized files honour trust too


def test_file_ages_come_from_git_at_the_snapshot_commit_and_are_cached(planning_repo, tmp_path):
    ages = FileAges(tmp_path, horizon_days=3650, timeout_s=30)
    head = planning_repo.path
    commit = __import__("subprocess").run(["git", "-C", str(head), "rev-parse", "HEAD"], capture_output=True,
                                          text=True, check=True).stdout.strip()
    commit_time, times = ages.times(str(head), commit, key="acme/shop")
    assert times["app/service.py"] == commit_time  # touched by the last commit
    assert commit_time - times["app/util.py"] > 4 * 365 * 86400  # only the first commit, 4.4 years before
    assert list((tmp_path / AGES_DIR).glob("acme_shop-*.json"))
    recent = FileAges(tmp_path / "short", horizon_days=365, timeout_s=30).times(str(head), commit)[1]
    assert "app/service.py" in recent and "app/util.py" not in recent  # outside the horizon: no walk that far
    with pytest.raises(GitError):
        FileAges(tmp_path, 365, 30).times(str(tmp_path), commit)


def test_freshness_lifts_recently_changed_files(planning_repo):
    query = "checkout the cart and record the payment"
    fresh = _search(_pipeline(planning_repo.config, beta=1.0, freshness_half_life_days=30.0), planning_repo.name, query)
    service = next(h for h in fresh.hits if h.path == "app/service.py")
    legacy = next(h for h in fresh.hits if h.path == "legacy/deprecated_checkout.py")
    assert "freshness 1.000" in service.explanation and "freshness 0.000" in legacy.explanation
    assert service.rank < legacy.rank
    assert fresh.files[0]["path"] == "app/service.py"


def test_diversity_separates_near_duplicates(planning_repo):
    query = "slugify text into lowercase words joined by dashes"
    plain = _search(_pipeline(planning_repo.config), planning_repo.name, query)
    assert {h.path for h in plain.hits[:2]} == {"app/util.py", "app/text.py"}  # the same function, twice
    diverse = _search(_pipeline(planning_repo.config, gamma=2.0), planning_repo.name, query)
    assert diverse.hits[0].path in {"app/util.py", "app/text.py"}
    assert diverse.hits[1].path not in {"app/util.py", "app/text.py"}
    second = next(h for h in diverse.hits[1:] if h.path in {"app/util.py", "app/text.py"})
    assert "similarity 1.000" in second.explanation  # exact duplicate: read back from the FAISS shard
