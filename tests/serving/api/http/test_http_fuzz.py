"""The API fuzzer as a standing test: schemathesis' own engine (what `st run` drives: its examples, coverage and
fuzzing phases, every check it has) generates valid and invalid requests from the published OpenAPI document and
sends them to the real ingress app (stages in Serve's local testing mode) over a small real index, with a token
scoped to the index's repositories (as the outside probe ran it) and with an unrestricted one.

Every check must pass: no 5xx, only documented statuses, bodies, headers and content types, schema-valid input
accepted and schema-violating input refused, 405 with `Allow` for an undocumented method, `Allow` listing what
the document lists. Bounded and reproducible: a fixed seed, `FUZZ_EXAMPLES` generated requests per operation and
mode besides the coverage phase's deterministic cases.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import jsonschema_rs
import pytest
import schemathesis
import yaml
from schemathesis.config import SchemathesisConfig
from schemathesis.engine import events, from_schema

from serving.api.http.security import ensure_token_file
from serving.ray.app import ingress_app
from tests.serving.local_ingress import local_stage_handles, make_core, variant
from tests.serving.ray.test_app import make_tiny_index

pytestmark = pytest.mark.timeout(600)
FUZZ_EXAMPLES = 30
FUZZ_SEED = 20261125
FUZZ_HOST = "testserver"  # the Host schemathesis' in-process client sends; served like a configured name
SCOPED_TOKEN = "tiny-scope-fuzz-token-0123456789"
SCOPE = ["tiny/*"]  # the index's repository, tiny/shop
PHASES = ("coverage", "fuzzing")  # each operation gets cases from both (the examples phase has no examples)
CONTRACT_CHECKS = {"not_a_server_error", "status_code_conformance", "content_type_conformance",
                   "response_schema_conformance", "response_headers_conformance", "positive_data_acceptance",
                   "negative_data_rejection", "unsupported_method", "allow_header_conformance"}
"""Checks every run must have applied (to some case): the contract the outside probe tested."""
REFUSALS = ["400", "401", "403", "404", "405", "406", "409", "413", "415", "422", "428", "429"]
"""What refuses schema-violating input: schemathesis' own list, and 413 (a field over a `limits.*` or knowledge
length bound is "too large" by design, docs/http.md)."""
OPERATIONS = sorted([("POST", "/v1/search"), ("POST", "/v1/grep"), ("POST", "/v1/graph"), ("POST", "/v1/map"),
                     ("POST", "/v1/feedback"), ("POST", "/v1/knowledge"), ("GET", "/v1/knowledge"),
                     ("POST", "/v1/plan"), ("GET", "/v1/repos"), ("GET", "/healthz"), ("GET", "/metrics"),
                     ("GET", "/v1/knowledge/{entry_id}")])


@dataclass
class FuzzReport:
    """What one engine run sent and what its checks found."""

    cases: Counter[tuple[str, str]] = field(default_factory=Counter)  # (operation, phase) -> cases sent
    checks: set[str] = field(default_factory=set)  # checks that ran on some response
    failures: dict[tuple[str, str, str], str] = field(default_factory=dict)  # (operation, check, title) -> a request
    errors: list[str] = field(default_factory=list)  # the engine's own errors (a schema it could not use, ...)

    def record(self, event: events.ScenarioFinished) -> None:
        recorder = event.recorder
        self.cases[(event.label or "", event.phase.value)] += len(recorder.cases)
        for case_id, results in recorder.checks.items():
            for result in results:
                self.checks.add(result.name)
                if result.status.value != "failure":
                    continue
                title = getattr(getattr(result.failure_info, "failure", None), "title", "")
                key = (event.label or "", result.name, title)
                if key not in self.failures:
                    self.failures[key] = f"{event.phase.value} phase: {_request_of(recorder, case_id)}"


def _request_of(recorder: Any, case_id: str) -> str:
    case = recorder.cases[case_id].value
    interaction = recorder.interactions.get(case_id)
    status = interaction.response.status_code if interaction is not None and interaction.response else None
    return f"{case.method} {case.formatted_path} query={case.query!r} body={case.body!r} -> {status}"


def fuzz(app: Any, token: str) -> FuzzReport:
    config = SchemathesisConfig.from_dict({
        "seed": FUZZ_SEED,
        "headers": {"Authorization": f"Bearer {token}"},
        "generation": {"max-examples": FUZZ_EXAMPLES, "mode": "all", "database": "none"},
        "phases": {"stateful": {"enabled": False}},
        "checks": {"enabled": True, "negative_data_rejection": {"expected-statuses": REFUSALS}},
        "suppress-health-check": ["all"],
    })
    report = FuzzReport()
    for event in from_schema(schemathesis.openapi.from_asgi("/openapi.json", app, config=config)).execute():
        if isinstance(event, events.ScenarioFinished):
            report.record(event)
        elif isinstance(event, (events.NonFatalError, events.FatalError)):
            report.errors.append(str(getattr(event, "info", event)))
    return report


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """The ingress app with auth required: the main token and one scoped to the index's repositories."""
    root = tmp_path_factory.mktemp("http-fuzz")
    config = make_tiny_index(root, f"auth.allowed_hosts=[{FUZZ_HOST}]")
    token_file, _ = ensure_token_file(root / "secrets" / "token")
    tokens = root / "secrets" / "tokens.yaml"
    tokens.write_text(yaml.safe_dump([{"name": "tiny-team", "token": SCOPED_TOKEN, "repos": SCOPE}]))
    secured = variant(config, "auth.mode=required", f"auth.token_file={token_file}", f"auth.tokens_file={tokens}")
    app = ingress_app(make_core(secured, local_stage_handles(config)))
    return app, {"scoped": SCOPED_TOKEN, "unrestricted": token_file.read_text().strip()}


@pytest.fixture(scope="module", params=["scoped", "unrestricted"])
def report(served, request) -> FuzzReport:
    app, tokens = served
    return fuzz(app, tokens[request.param])


def test_every_operation_of_the_document_is_fuzzed_in_every_phase(served, report):
    app, _ = served
    schema = schemathesis.openapi.from_asgi("/openapi.json", app)
    published = sorted((op.method.upper(), op.path) for op in (r.ok() for r in schema.get_all_operations()))
    assert published == OPERATIONS
    for method, path in OPERATIONS:
        for phase in PHASES:
            assert report.cases[(f"{method} {path}", phase)] > 0, (method, path, phase, dict(report.cases))


def _patterns(value: Any) -> list[str]:
    if isinstance(value, dict):
        own = [value["pattern"]] if isinstance(value.get("pattern"), str) else []
        return own + [p for v in value.values() for p in _patterns(v)]
    return [p for v in value for p in _patterns(v)] if isinstance(value, list) else []


def test_every_pattern_of_the_document_is_one_a_validator_can_use(served):
    """A pattern the validator cannot compile (a lone surrogate's range, say) is no constraint to a client:
    the document would allow what the server refuses."""
    app, _ = served
    patterns = _patterns(schemathesis.openapi.from_asgi("/openapi.json", app).raw_schema)
    assert len(patterns) > 10
    for pattern in patterns:
        jsonschema_rs.validator_for({"type": "string", "pattern": pattern})


def test_the_contract_checks_ran(report):
    assert CONTRACT_CHECKS <= report.checks, sorted(CONTRACT_CHECKS - report.checks)


def test_every_check_passes_on_every_route(report):
    assert not report.errors, report.errors
    found = "\n".join(f"{operation}: {check} ({title}): {request}"
                      for (operation, check, title), request in sorted(report.failures.items()))
    assert not report.failures, found
