"""Replica health: every Serve deployment's `check_health` passes over a real tiny index, and raises once its
snapshot is damaged, removed, or older than `serve.snapshot_max_age_s` (Serve then replaces the replica)."""

from __future__ import annotations

import datetime as dt
import shutil
from pathlib import Path

import pytest

from semantica.config import config_to_dict
from semantica.layout import IndexLayout
from serving.ray.app import StageDeployment, build_graph, deployment_options
from serving.ray.health import ReplicaUnhealthy, SnapshotHealthCheck
from tests.conftest import make_config
from tests.serving.ray.test_app import REPO_NAME, make_tiny_index

pytestmark = pytest.mark.timeout(300)


def _snapshot_root(config) -> Path:
    return IndexLayout(config.paths.index_root).current(REPO_NAME).root


def test_stage_and_ingress_replicas_fail_their_health_check_on_a_damaged_snapshot(tmp_path: Path) -> None:
    config = make_tiny_index(tmp_path)
    stage = StageDeployment.func_or_class(config_to_dict(config), "Intent")
    from ray import serve

    ingress = serve.run(build_graph(config, deployment_options(None)), _local_testing_mode=True)  # the whole graph
    stage.check_health()
    ingress.check_health.remote().result()
    chunks = _snapshot_root(config) / "chunks.parquet"
    assert chunks.exists()
    chunks.write_bytes(chunks.read_bytes()[:64])  # a truncated table: its footer is gone
    with pytest.raises(ReplicaUnhealthy, match=f"{REPO_NAME}.*unreadable"):
        stage.check_health()
    with pytest.raises(ReplicaUnhealthy, match=f"{REPO_NAME}.*unreadable"):
        ingress.check_health.remote().result()


def test_a_removed_snapshot_fails_the_check(tmp_path: Path) -> None:
    config = make_tiny_index(tmp_path)
    stage = StageDeployment.func_or_class(config_to_dict(config), "Fusion")
    stage.check_health()
    shutil.rmtree(_snapshot_root(config))
    with pytest.raises(ReplicaUnhealthy, match=REPO_NAME):
        stage.check_health()


def test_the_age_limit_and_an_empty_index(tmp_path: Path) -> None:
    config = make_tiny_index(tmp_path, "serve.snapshot_max_age_s=3600")
    stage = StageDeployment.func_or_class(config_to_dict(config), "Intent")
    stage.check_health()  # built seconds ago
    later = dt.datetime.now(dt.UTC) + dt.timedelta(hours=2)
    with pytest.raises(ReplicaUnhealthy, match="old"):
        stage.health_check.check(now=later)
    SnapshotHealthCheck(stage.stages.snapshots, 0.0).check(now=later)  # 0 = no age limit
    empty = make_config(tmp_path / "empty")
    SnapshotHealthCheck(StageDeployment.func_or_class(config_to_dict(empty), "Intent").stages.snapshots, 1.0).check()
