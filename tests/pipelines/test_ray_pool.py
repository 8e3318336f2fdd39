"""The embedding actor pool's size: fixed when `ray.embed_actors` says so, else autoscaled up to the cluster's GPUs;
and the batches queued on each actor (`ray.embed_tasks_in_flight`)."""

from __future__ import annotations

from pipelines.ray_job import embed_pool, embed_strategy
from semantica.config import RayConfig


def test_a_set_size_is_a_fixed_pool_whatever_the_cluster():
    assert embed_pool(3, {"CPU": 64.0, "GPU": 8.0}) == {"size": 3}
    assert embed_pool(1, {"CPU": 2.0}) == {"size": 1}


def test_zero_autoscales_from_one_actor_to_one_per_gpu():
    assert embed_pool(0, {"CPU": 64.0, "GPU": 8.0}) == {"min_size": 1, "max_size": 8}
    assert embed_pool(0, {"CPU": 16.0, "GPU": 1.0}) == {"size": 1}  # one GPU: one actor
    assert embed_pool(0, {"CPU": 2.0}) == {"size": 1}  # no GPU: one actor, its encoder on every core


def test_each_actor_is_sent_the_configured_batches_in_flight():
    assert embed_strategy(RayConfig(embed_actors=1, embed_tasks_in_flight=3), {"CPU": 2.0}) == \
        {"size": 1, "max_tasks_in_flight_per_actor": 3}
    assert embed_strategy(RayConfig(embed_actors=0), {"CPU": 64.0, "GPU": 8.0}) == \
        {"min_size": 1, "max_size": 8, "max_tasks_in_flight_per_actor": 2}
