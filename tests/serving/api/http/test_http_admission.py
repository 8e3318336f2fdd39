"""Admission control and the SIGTERM drain on the real ingress app: a gated fusion stage holds requests in
flight so the queue bound, the shedding, the deadline and the drain can be observed."""

from __future__ import annotations

import asyncio

import pytest
from ray import serve

from serving.ray.app import StageDeployment
from tests.serving import local_ingress
from tests.serving.local_ingress import client, local_stage_handles, make_core, run, variant
from tests.serving.ray.test_app import make_tiny_index

pytestmark = pytest.mark.timeout(300)
GATE = local_ingress.GATE  # in an importable module: the deployment class is pickled, an Event cannot be
WAIT_S = 60.0


@serve.deployment
class GatedFusion(StageDeployment.func_or_class):
    """Fusion that waits for the test to open the gate: a request that stays in flight on demand."""

    def call(self, method, *args):
        local_ingress.GATE.wait(60.0)
        return super().call(method, *args)


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    config = make_tiny_index(tmp_path_factory.mktemp("http-admission"), "retrieval.timeout_s=120")
    return config, local_stage_handles(config, Fusion=GatedFusion)


@pytest.fixture(autouse=True)
def closed_gate():
    GATE.clear()
    yield
    GATE.set()  # never leave a stage thread waiting


async def _until(predicate) -> None:
    for _ in range(int(WAIT_S * 100)):
        if predicate():
            return
        await asyncio.sleep(0.01)
    raise AssertionError("condition not reached")


def test_full_queue_sheds_with_503_and_retry_after(setup):
    config, handles = setup
    core = make_core(variant(config, "admission.max_concurrent=1", "admission.max_queued=1",
                             "admission.deadline_s=60", "admission.retry_after_s=3"), handles)

    async def scenario():
        async with client(core) as http:
            first = asyncio.ensure_future(http.post("/v1/search", json={"query": "price_of one"}))
            second = asyncio.ensure_future(http.post("/v1/search", json={"query": "price_of two"}))
            await _until(lambda: core.admission.active == 1 and core.admission.queued == 1)
            shed = await http.post("/v1/search", json={"query": "price_of three"})
            health = await http.get("/healthz")  # probes are never shed
            GATE.set()
            return shed, health, await first, await second

    shed, health, first, second = run(scenario())
    assert shed.status_code == 503 and shed.headers["retry-after"] == "3", shed.text
    assert shed.json()["error"] == "Overloaded" and shed.json()["reason"] == "queue_full"
    assert health.status_code == 200
    assert first.status_code == 200 and second.status_code == 200, (first.text, second.text)
    assert core.admission.active == 0 and core.admission.queued == 0
    assert 'semantica_http_shed_total{reason="queue_full"} 1.0' in core.metrics.render().decode()


def test_deadline_gives_504_and_keeps_the_slot_until_the_work_ends(setup):
    config, handles = setup
    core = make_core(variant(config, "admission.max_concurrent=1", "admission.max_queued=0",
                             "admission.deadline_s=0.5"), handles)

    async def scenario():
        async with client(core) as http:
            late = await http.post("/v1/search", json={"query": "price_of late"})
            busy = core.admission.active  # the stage thread still runs: its slot is still taken
            refused = await http.post("/v1/search", json={"query": "price_of next"})
            GATE.set()
            idle = await core.admission.wait_idle(WAIT_S)
            return late, busy, refused, idle

    late, busy, refused, idle = run(scenario())
    assert late.status_code == 504 and late.json()["error"] == "DeadlineExceeded", late.text
    assert busy == 1 and refused.status_code == 503 and idle
    assert 'semantica_http_shed_total{reason="deadline"} 1.0' in core.metrics.render().decode()


def test_drain_refuses_new_requests_and_finishes_the_running_ones(setup):
    config, handles = setup
    core = make_core(variant(config, "admission.deadline_s=60"), handles)

    async def scenario():
        async with client(core) as http:
            running = asyncio.ensure_future(http.post("/v1/search", json={"query": "price_of running"}))
            await _until(lambda: core.admission.active == 1)
            core.admission.begin_drain()  # what Ingress.drain does on SIGTERM
            not_yet = await core.admission.wait_idle(0.05)
            refused = await http.post("/v1/search", json={"query": "price_of new"})
            health = await http.get("/healthz")
            GATE.set()
            drained = await core.admission.wait_idle(WAIT_S)
            return not_yet, refused, health, drained, await running

    not_yet, refused, health, drained, running = run(scenario())
    assert health.status_code == 503 and health.json()["status"] == "draining"  # load balancers take it out
    assert not not_yet and drained
    assert refused.status_code == 503 and refused.json()["reason"] == "draining"
    assert refused.headers["connection"] == "close" and refused.headers["retry-after"]
    assert running.status_code == 200 and running.json()["hits"]
