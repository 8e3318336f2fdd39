"""The docs' tool and route tables are the live servers': docs/mcp.md names every tool of `semantica mcp` with its
exact inputs, docs/mcp-agents.md every tool with whether it is read-only, docs/http.md every route of the HTTP app
(method and path) with the exact fields of each documented body. A tool, route or field added without its docs row
fails here; so does a row for one that is gone."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import anyio
import pytest

from jobs.commands.mcp import build
from serving.api.http.routes import BODY_MODELS
from serving.ray.app import ingress_app
from tests.conftest import make_config
from tests.serving.local_ingress import local_stage_handles, make_core

pytestmark = pytest.mark.timeout(300)
DOCS = Path(__file__).resolve().parents[2] / "docs"
CODE = re.compile(r"`([^`]+)`")
ROUTE = re.compile(r"^(GET|POST|PUT|DELETE|PATCH) (/\S*)$")
FIELD = re.compile(r"\s*([a-z_]+)")
PARAMETER = re.compile(r"\{[^}]*\}")
UNDOCUMENTED_PATHS = {"/redoc", "/docs/oauth2-redirect"}  # FastAPI's alternatives to /docs
"""Paths the app serves that the route table leaves out on purpose."""


def table(page: str, header: str) -> list[list[str]]:
    """The cells of each row of the table in `page` whose header row starts with `header`."""
    lines = (DOCS / page).read_text(encoding="utf-8").splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(header))
    rows = []
    for line in lines[start + 2:]:
        if not line.startswith("|"):
            break
        rows.append([cell.strip() for cell in re.split(r"(?<!\\)\|", line.strip())[1:-1]])
    return rows


def top_level_fields(cell: str) -> set[str]:
    """The field names of the first `{...}` of a cell, at its top level (`{repos: [{name, path}], files}` ->
    {repos, files}); alternatives are written `a \\| b`."""
    body = cell[cell.index("{") + 1:]
    pieces, depth, current = [], 0, ""
    for char in body:
        if char in "[{":
            depth += 1
        elif char in "]}":
            if depth == 0:
                break
            depth -= 1
        if depth == 0 and char in ",|":
            pieces.append(current)
            current = ""
        elif char != "\\":
            current += char
    pieces.append(current)
    return {m.group(1) for piece in pieces if (m := FIELD.match(piece))}


@pytest.fixture(scope="module")
def live_tools(tmp_path_factory) -> dict[str, Any]:
    """`semantica mcp`'s tool list, as a client lists it (`jobs.commands.mcp.build`: the command's own server)."""
    server = build(make_config(tmp_path_factory.mktemp("tables")))

    async def listed() -> dict[str, Any]:
        return {tool.name: tool for tool in await server.list_tools()}

    return anyio.run(listed)


@pytest.fixture(scope="module")
def live_routes(tmp_path_factory) -> dict[tuple[str, str], dict[str, Any]]:
    """(method, path) -> its OpenAPI operation, of the real ingress app."""
    config = make_config(tmp_path_factory.mktemp("routes"))
    app = ingress_app(make_core(config, local_stage_handles(config)))
    served = {(method, PARAMETER.sub("{}", route.path)) for route in app.routes for method in getattr(route, "methods", ()) or ()
              if method != "HEAD" and route.path not in UNDOCUMENTED_PATHS}
    document = app.openapi()["paths"]
    operations = {(method.upper(), PARAMETER.sub("{}", path)): operation for path, methods in document.items()
                  for method, operation in methods.items()}
    return {key: operations.get(key, {}) for key in served}


def test_docs_mcp_table_names_every_tool_with_its_inputs(live_tools):
    documented: dict[str, set[str]] = {}
    for tools, inputs, *_ in table("mcp.md", "| tool | input |"):
        for name in CODE.findall(tools):
            documented[name] = set(CODE.findall(inputs))
    assert set(documented) == set(live_tools)
    for name, tool in live_tools.items():
        assert documented[name] == set(tool.input_schema.get("properties", {})), name


def test_docs_mcp_agents_table_names_every_tool_and_whether_it_writes(live_tools):
    documented: dict[str, bool] = {}
    for tools, read_only, *_ in table("mcp-agents.md", "| tool | read-only |"):
        for name in CODE.findall(tools):
            documented[name] = read_only == "yes"
    assert set(documented) == set(live_tools)
    assert {name: tool.annotations.read_only_hint for name, tool in live_tools.items()} == documented


def test_docs_http_table_names_every_route_and_each_body_s_fields(live_routes):
    documented: dict[tuple[str, str], str] = {}
    for routes, answer in table("http.md", "| route |"):
        for route in CODE.findall(routes):
            method, path = ROUTE.match(route).groups()  # type: ignore[union-attr]
            documented[(method, PARAMETER.sub("{}", path))] = answer
    assert set(documented) == set(live_routes)  # path parameters by position: `{id}` is `{entry_id}`
    bodies = {model.__name__: set(model.model_fields) for model in BODY_MODELS}
    for (method, path), answer in documented.items():
        schema = live_routes[(method, path)].get("requestBody", {}).get("content", {}).get("application/json", {})
        model = schema.get("schema", {}).get("$ref", "").rsplit("/", 1)[-1]
        if model:
            assert answer.startswith("`{"), f"{method} {path}: its row does not list its body's fields"
            assert top_level_fields(answer) == bodies[model], (method, path, top_level_fields(answer) ^ bodies[model])
