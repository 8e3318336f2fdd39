"""The trace context across a real process boundary: a local Ray cluster, one stage deployment in its own
replica process, called through `serving.ray.remote`'s proxy exactly as the ingress calls it. The replica's span
must join the caller's trace under the caller's stage span, and carry the caller's request id.
(test_http_observability covers the whole HTTP app in Serve's local testing mode; this covers the process
hop that mode cannot.) Ray runs in a fresh child process: never next to a JVM (semantica/runtime/ray_runtime.py)."""

from __future__ import annotations

import os

import pytest

from semantica.config import config_to_dict
from semantica.runtime.ray_runtime import run_in_fresh_process
from tests.conftest import REPO_ROOT
from tests.serving.ray.test_app import make_tiny_index
from tests.serving.span_recording import REQUEST_ID, call_across_processes

pytestmark = pytest.mark.timeout(900)


def test_a_replica_in_another_process_joins_the_callers_trace(tmp_path, monkeypatch):
    config = make_tiny_index(tmp_path)
    here = str(REPO_ROOT)
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(p for p in (here, os.environ.get("PYTHONPATH", "")) if p))
    seen = run_in_fresh_process(call_across_processes, config_to_dict(config), timeout_s=840)
    [caller] = seen["caller"]
    [replica] = [s for s in seen["replica"] if s["name"] == "serve Intent.call"]
    assert replica["pid"] != caller["pid"]  # really another process
    assert replica["trace"] == caller["trace"] and replica["parent"] == caller["span"] and replica["remote"]
    assert replica["request_id"] == REQUEST_ID and seen["intent"] != "NoneType"
