"""`GET /metrics` (Prometheus text, official client) and per-repository `/healthz` on the real ingress app."""

from __future__ import annotations

from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from semantica.ondisk.build_stats import build_stats_path, record_build
from tests.serving.local_ingress import client, local_stage_handles, make_core, run, variant
from tests.serving.ray.test_app import REPO_NAME, BrokenRetriever, make_tiny_index

pytestmark = pytest.mark.timeout(300)


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    root = tmp_path_factory.mktemp("http-metrics")
    config = make_tiny_index(root)
    return config, local_stage_handles(config, VectorRetriever=BrokenRetriever)


def _samples(text: str) -> dict[tuple[str, tuple], float]:
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(text) for s in family.samples}


async def _traffic(core):
    async with client(core) as http:
        answers = [await http.post("/v1/search", json={"query": q}) for q in ("price_of", "cart total")]
        bad = await http.post("/v1/search", json={"query": "x", "k": True})
        return answers, bad, await http.get("/metrics")


def test_metrics_count_requests_errors_stages_degraded_snapshots_and_builds(setup):
    config, handles = setup
    record_build(build_stats_path(config), REPO_NAME, 2.5, ok=True)
    record_build(build_stats_path(config), REPO_NAME, 1.0, ok=False)
    core = make_core(config, handles)
    answers, bad, metrics = run(_traffic(core))
    assert all(a.status_code == 200 for a in answers) and bad.status_code == 422
    assert metrics.status_code == 200 and metrics.headers["content-type"].startswith("text/plain")
    samples = _samples(metrics.text)
    assert samples[("semantica_http_requests_total", (("route", "/v1/search"), ("status", "200")))] == 2
    assert samples[("semantica_http_errors_total", (("status", "422"),))] == 1
    assert samples[("semantica_degraded_total", (("stage", "vector"),))] == 2  # the broken vector replica
    assert samples[("semantica_stage_seconds_count", (("stage", "fusion"),))] == 2
    assert samples[("semantica_http_request_seconds_count", (("route", "/v1/search"),))] == 3
    assert samples[("semantica_snapshot_up", (("repo", REPO_NAME),))] == 1
    assert 0 <= samples[("semantica_snapshot_age_seconds", (("repo", REPO_NAME),))] < 3600
    # the fixture's own index build counts too: the one Indexer records every build it runs
    assert samples[("semantica_index_builds_total", (("outcome", "ok"), ("repo", REPO_NAME)))] == 2
    assert samples[("semantica_index_builds_total", (("outcome", "failed"), ("repo", REPO_NAME)))] == 1
    assert samples[("semantica_index_build_seconds_total", (("repo", REPO_NAME),))] > 3.5


def test_healthz_and_repos_report_a_broken_snapshot_per_repository(setup, tmp_path):
    config, handles = setup
    root = tmp_path / "index"
    root.mkdir()
    good = Path(config.paths.index_root) / "tiny+shop"
    (root / "tiny+shop").symlink_to(good)
    broken = root / "team+broken"
    broken.mkdir()
    (broken / "CURRENT").write_text("20260101T000000-missing\n")
    core = make_core(variant(config, f"paths.index_root={root}"), handles)

    async def calls():
        async with client(core) as http:
            return await http.get("/healthz"), await http.get("/v1/repos"), await http.get("/metrics")

    health, repos, metrics = run(calls())
    assert health.status_code == 200, health.text  # the server still answers for the healthy repository
    report = health.json()
    assert report["status"] == "degraded" and report["broken"] == ["team/broken"]
    rows = {r["repo"]: r for r in report["repos"]}
    assert rows[REPO_NAME]["status"] == "ok" and rows["team/broken"]["status"] == "broken"
    assert rows["team/broken"]["error"] and str(root) not in rows["team/broken"]["error"]
    assert {r["repo"]: r["status"] for r in repos.json()} == {REPO_NAME: "ok", "team/broken": "broken"}
    samples = _samples(metrics.text)
    assert samples[("semantica_snapshot_up", (("repo", "team/broken"),))] == 0
