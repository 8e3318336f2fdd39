"""Body and field size limits (413 before the body is read whole), on the real ingress app."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.serving.local_ingress import call_asgi, client, local_stage_handles, make_core, run, variant
from tests.serving.ray.test_app import make_tiny_index

pytestmark = pytest.mark.timeout(300)
MAX_BODY = 4096


@pytest.fixture(scope="module")
def core(tmp_path_factory):
    config = make_tiny_index(tmp_path_factory.mktemp("http-limits"))
    limited = variant(config, f"limits.max_body_bytes={MAX_BODY}", "limits.max_string_chars=500",
                      "limits.max_list_items=20", "limits.max_json_depth=4")
    return make_core(limited, local_stage_handles(config))


async def _post(core, path, **kwargs):
    async with client(core) as http:
        return await http.post(path, **kwargs)


def _stored(core) -> int:
    return sum(len(f.read_text().splitlines()) for f in Path(core.config.serve.feedback_dir).glob("*.jsonl"))


def _is_413(response) -> dict:
    assert response.status_code == 413, response.text
    return response.json()


def test_big_feedback_body_is_413_and_nothing_is_written(core):
    before = _stored(core)
    body = _is_413(run(_post(core, "/v1/feedback", json={"query": "q", "chunk_ids": ["x"],
                                                         "comment": "a" * 5_000_000})))
    assert "max_body_bytes" in body["message"] and body["error"] == "PayloadTooLarge"
    assert _stored(core) == before


def test_declared_length_is_refused_before_reading(core):
    """A Content-Length over the limit is refused without reading a byte of the body."""
    app = __import__("serving.ray.app", fromlist=["ingress_app"]).ingress_app(core)
    status, body = run(call_asgi(app, "POST", "/v1/search", [],
                                 [(b"content-type", b"application/json"), (b"content-length", b"999999999")]))
    assert status == 413 and json.loads(body)["error"] == "PayloadTooLarge"


def test_streamed_body_without_length_is_cut_at_the_limit(core):
    from serving.ray.app import ingress_app

    chunks = [b'{"query": "' + b"a" * 1000] * 10 + [b'"}']
    status, body = run(call_asgi(ingress_app(core), "POST", "/v1/search", chunks,
                                 [(b"content-type", b"application/json")]))
    assert status == 413 and b"max_body_bytes" in body


@pytest.mark.parametrize("body,limit", [
    ({"query": "q" * 501}, "max_string_chars"),
    ({"query": "q", "path_globs": ["*.py"] * 21}, "max_list_items"),
    ({"query": "q", "chunk_ids": ["x"], "hits": [{"a": {"b": {"c": {"d": 1}}}}]}, "max_json_depth"),
])
def test_field_limits_are_413(core, body, limit):
    path = "/v1/feedback" if "chunk_ids" in body else "/v1/search"
    assert limit in _is_413(run(_post(core, path, json=body)))["message"]


def test_within_limits_is_answered(core):
    r = run(_post(core, "/v1/search", json={"query": "price_of", "path_globs": ["*.py"] * 20}))
    assert r.status_code == 200, r.text
