"""The Ray Data plan of `index-batch`: parse tasks and the embed actor pool are two streaming operators (parse runs
beside the encoder), and the actors are sent `ray.embed_tasks_in_flight` batches at a time.

Ray Data's own `explain` text of the plan, from a local Ray node in a fresh process (the JVM rule of
semantica.runtime.ray_runtime); nothing is executed."""

from __future__ import annotations

import subprocess

import pytest

from pipelines.ray_job import plan_driver, stage_options, task_rows
from pipelines.runner import FileTask
from semantica.config import RayConfig, config_to_dict
from semantica.runtime.ray_runtime import run_in_fresh_process
from tests.conftest import REPO_ROOT, make_config

pytestmark = [pytest.mark.ray, pytest.mark.timeout(300)]
REAL_FILES = ("pipelines/overlap.py", "pipelines/embed.py", "docs/plan.md")
PARSE_OPERATOR, EMBED_OPERATOR = "MapBatches(parse_batch)", "MapBatches(EmbedActor)"


def _tasks() -> list[FileTask]:
    """This repository's own files as the indexer's tasks (blob shas from git's index)."""
    listed = subprocess.run(["git", "-C", str(REPO_ROOT), "ls-files", "-s", *REAL_FILES], check=True,
                            capture_output=True, text=True).stdout.splitlines()
    tasks = []
    for line in listed:
        meta, path = line.split("\t")
        tasks.append(FileTask(repo="self", repo_path=str(REPO_ROOT), commit="", include=["**/*"], path=path,
                              blob_sha=meta.split()[1], size=(REPO_ROOT / path).stat().st_size,
                              language="python" if path.endswith(".py") else "markdown", key=path))
    return tasks


def _plan(tmp_path, *settings: str) -> str:
    config = make_config(tmp_path, "ray.num_cpus=2", "ray.actor_num_cpus=0.25", *settings)
    return run_in_fresh_process(plan_driver, config_to_dict(config), "", task_rows(_tasks()), timeout_s=240)


def test_parse_and_embed_are_separate_streaming_operators(tmp_path):
    plan = _plan(tmp_path)
    assert f"TaskPoolMapOperator[{PARSE_OPERATOR}]" in plan, plan
    assert f"ActorPoolMapOperator[{EMBED_OPERATOR}]" in plan, plan
    assert f"{PARSE_OPERATOR}->{EMBED_OPERATOR}" not in plan, plan

    # equal requests (what one CPU setting for both gave): Ray Data fuses the parse into the actor's call
    fused = _plan(tmp_path, "ray.parse_num_cpus=0.25")
    assert f"ActorPoolMapOperator[{PARSE_OPERATOR}->{EMBED_OPERATOR}]" in fused, fused


def test_parse_tasks_and_embed_actors_ask_for_their_own_resources():
    ray = RayConfig(actor_num_cpus=0.5, parse_num_cpus=1.0)
    assert stage_options(ray, gpus=0) == ({"num_cpus": 1.0}, {"num_cpus": 0.5})
    assert stage_options(ray, gpus=1) == ({"num_cpus": 1.0}, {"num_gpus": 1})
