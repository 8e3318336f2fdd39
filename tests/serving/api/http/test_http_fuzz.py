"""The API fuzzer as a standing test: schemathesis generates valid and invalid requests from the published
OpenAPI document and sends them to the real ingress app (stages in Serve's local testing mode) over a small
real index. Every check must pass: no 5xx, only documented statuses, bodies and content types as documented.

Bounded and reproducible: `FUZZ_EXAMPLES` requests per operation and generation mode, from a fixed seed.
(schemathesis' own pytest loader does not run under pytest 9, so each operation is one parametrized test
driving Hypothesis directly.)
"""

from __future__ import annotations

import pytest
import schemathesis
from hypothesis import HealthCheck, Phase, given, seed, settings
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from serving.ray.app import ingress_app
from tests.serving.local_ingress import local_stage_handles, make_core
from tests.serving.ray.test_app import make_tiny_index

pytestmark = pytest.mark.timeout(600)
FUZZ_EXAMPLES = 20
FUZZ_SEED = 20261125
CHECKS = [not_a_server_error, status_code_conformance, response_schema_conformance, content_type_conformance]
FUZZ_HOST = "testserver"  # the Host schemathesis' in-process client sends; served like a configured name
BODY_OPERATIONS = [("POST", "/v1/search"), ("POST", "/v1/grep"), ("POST", "/v1/graph"), ("POST", "/v1/map"), ("POST", "/v1/feedback"),
                   ("POST", "/v1/knowledge"), ("GET", "/v1/knowledge"), ("POST", "/v1/plan")]
READ_OPERATIONS = [("GET", "/v1/repos"), ("GET", "/healthz"), ("GET", "/metrics"),  # nothing to make invalid
                   ("GET", "/v1/knowledge/{entry_id}")]  # any string is a well-formed id
OPERATIONS = BODY_OPERATIONS + READ_OPERATIONS
RUNS = [(*op, GenerationMode.POSITIVE) for op in OPERATIONS] + [(*op, GenerationMode.NEGATIVE) for op in BODY_OPERATIONS]


@pytest.fixture(scope="module")
def api_schema(tmp_path_factory):
    config = make_tiny_index(tmp_path_factory.mktemp("http-fuzz"), f"auth.allowed_hosts=[{FUZZ_HOST}]")
    app = ingress_app(make_core(config, local_stage_handles(config)))
    return schemathesis.openapi.from_asgi("/openapi.json", app)


def test_every_operation_of_the_document_is_fuzzed(api_schema):
    published = sorted((op.method.upper(), op.path) for op in (r.ok() for r in api_schema.get_all_operations()))
    assert published == sorted(OPERATIONS)


@pytest.mark.parametrize(("method", "path", "mode"), RUNS, ids=[f"{m} {p} {g.value}" for m, p, g in RUNS])
def test_every_route_answers_as_documented(api_schema, method, path, mode):
    operation = api_schema[path][method]

    @seed(FUZZ_SEED)
    @settings(max_examples=FUZZ_EXAMPLES, deadline=None, database=None, phases=[Phase.explicit, Phase.generate,
              Phase.shrink], suppress_health_check=list(HealthCheck))
    @given(case=operation.as_strategy(generation_mode=mode))
    def fuzz(case):
        case.call_and_validate(checks=CHECKS)

    fuzz()
