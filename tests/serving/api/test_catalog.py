"""`serving.api.catalog` is what `--help` prints: every route and tool the fronts serve, none they do not.
(The live MCP tool list is checked against it in tests/serving/api/mcp/test_mcp.py, the live routes in
tests/serving/api/http/test_http_errors.py.)"""

from __future__ import annotations

import contextlib
import io

import pytest

from jobs.cli import build_parser
from serving.api.catalog import ROUTES, TOOLS


def help_of(command: str) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), pytest.raises(SystemExit):
        build_parser(command).parse_args([command, "--help"])
    return out.getvalue()


def test_mcp_help_names_every_tool():
    text = help_of("mcp")
    assert all(f"  {name} " in text for name in TOOLS), text


def test_serve_help_names_every_route():
    text = help_of("serve")
    assert all(f"  {path} " in text for path in ROUTES), text
