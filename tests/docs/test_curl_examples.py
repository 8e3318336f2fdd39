"""Every documented HTTP and MCP example runs, live: each fenced `curl` of docs/ is sent to the real ingress app
(stages in Serve's local testing mode, over a small real index holding what the examples name) and must
succeed; the MCP client block of docs/mcp.md starts the real `semantica mcp` over stdio with the block's own
arguments and answers a search. The docs' tool and route tables name every tool and route the servers have.

A placeholder of the reader's machine (a checkout path, `$TOKEN`) is replaced by this test's own; nothing
else of an example is changed."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import anyio
import pytest

from serving.api.catalog import ROUTES, TOOLS
from tests.conftest import REPO_ROOT
from tests.serving.local_ingress import client, local_stage_handles, make_core, run
from tests.serving.ray.test_app import make_tiny_index

pytestmark = pytest.mark.timeout(600)
ROOT = Path(__file__).resolve().parents[2]
DATA = re.compile(r"(?:^|\s)(?:-d|--data(?:-raw)?)\s")
JSON_TYPE = "content-type: application/json"
EXAMPLE_REPO = "me/app"
CHECKOUT_PLACEHOLDER = "/srv/src/app"
TOKEN_PLACEHOLDERS = ("$TOKEN", "$(cat .semantica/serve-token)")
EXAMPLE_FILES = {  # what the examples ask about: a hook registry, its callers, a retry policy, redirects
    "app/hooks.py": 'HOOKS = {}\n\n\ndef register_hook(name, fn):\n    """Register fn under name."""\n'
                    '    HOOKS[name] = fn\n',
    "app/client.py": 'from app.hooks import register_hook\n\n\nclass RetryPolicy:\n    """The retry policy: how '
                     'often a request is retried."""\n\n    attempts = 3\n\n\ndef follow_redirects(response):\n'
                     '    """How are redirects followed: up to five hops."""\n    return response\n\n\n'
                     'def setup():\n    register_hook("redirect", follow_redirects)\n',
}


def curl_examples() -> list[tuple[str, list[str]]]:
    found = []
    for page in sorted((ROOT / "docs").glob("*.md")):
        for number, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1):
            text = line.strip().strip("`")
            if text.startswith("curl") and DATA.search(text):
                found.append((f"{page.name}:{number}", shlex.split(text)))
    return found


def test_there_are_curl_examples_with_bodies():
    assert len(curl_examples()) >= 4


@pytest.mark.parametrize("where, argv", curl_examples(), ids=[w for w, _ in curl_examples()])
def test_every_curl_body_is_json_with_its_content_type(where, argv):
    headers = [argv[i + 1].lower() for i, arg in enumerate(argv[:-1]) if arg in ("-H", "--header")]
    bodies = [argv[i + 1] for i, arg in enumerate(argv[:-1]) if arg in ("-d", "--data", "--data-raw")]
    assert any(h.replace(" ", "") == JSON_TYPE.replace(" ", "") for h in headers), where
    assert bodies and all(isinstance(json.loads(body), dict) for body in bodies), where


def _git_checkout(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    subprocess.run(["git", "-C", str(root), "add", "-A"], check=True)
    subprocess.run(["git", "-C", str(root), "-c", "user.email=t@e", "-c", "user.name=t", "commit", "-qm", "i"],
                   check=True)
    return root


@pytest.fixture(scope="module")
def live(tmp_path_factory):
    """The tiny index plus the examples' repository, and the real ingress app over them."""
    from pipelines.indexer import Indexer

    root = tmp_path_factory.mktemp("docs-live")
    config = make_tiny_index(root)
    checkout = _git_checkout(root / "app", EXAMPLE_FILES)
    Indexer(config, progress=False).index(str(checkout), EXAMPLE_REPO)
    return config, checkout, make_core(config, local_stage_handles(config))


def _request(argv: list[str], checkout: Path) -> tuple[str, str, dict[str, str], bytes]:
    """curl's argv as (method, path, headers, body), the reader's placeholders replaced by this test's."""
    headers: dict[str, str] = {}
    body = b""
    url = ""
    args = iter(argv[1:])
    for arg in args:
        if arg in ("-H", "--header"):
            name, _, value = next(args).partition(":")
            for placeholder in TOKEN_PLACEHOLDERS:
                value = value.replace(placeholder, "docs-example-token")
            headers[name.strip()] = value.strip()
        elif arg in ("-d", "--data", "--data-raw"):
            body = next(args).replace(CHECKOUT_PLACEHOLDER, str(checkout)).encode()
        elif not arg.startswith("-"):
            url = arg
    path = urlsplit(url if "://" in url else f"http://{url}").path
    return ("POST" if body else "GET"), path, headers, body


@pytest.mark.parametrize("where, argv", curl_examples(), ids=[w for w, _ in curl_examples()])
def test_every_curl_example_succeeds_live(live, where, argv):
    _, checkout, core = live
    method, path, headers, body = _request(argv, checkout)

    async def send() -> Any:
        async with client(core) as http:
            return await http.request(method, path, headers=headers, content=body)

    answer = run(send())
    assert answer.status_code in (200, 201), f"{where}: {answer.status_code} {answer.text[:500]}"
    assert isinstance(answer.json(), dict | list), where


def _client_block() -> dict[str, Any]:
    text = (ROOT / "docs" / "mcp.md").read_text(encoding="utf-8")
    [block] = [json.loads(b) for b in re.findall(r"```json\n(.*?)```", text, re.S) if "mcpServers" in b]
    return block["mcpServers"]["semantica"]


def test_the_documented_mcp_client_block_starts_a_server_that_answers(live):
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    config, _, _ = live
    server = _client_block()
    args = [config.paths.index_root if a.endswith("/.semantica/index") else a for a in server["args"]]
    params = StdioServerParameters(command=sys.executable, args=["-m", "jobs.cli", *args],
                                   env={**os.environ, **server["env"]}, cwd=str(REPO_ROOT))
    out: dict[str, Any] = {}

    async def session() -> None:
        async with stdio_client(params) as (read, write), ClientSession(read, write) as mcp:
            await mcp.initialize()
            out["tools"] = {tool.name for tool in (await mcp.list_tools()).tools}
            out["search"] = await mcp.call_tool("search", {"query": "register_hook", "repos": [EXAMPLE_REPO]})

    anyio.run(session)
    assert server["command"].endswith("/semantica") and args[0] == "mcp"
    assert out["tools"] == set(TOOLS)
    assert not out["search"].is_error and out["search"].structured_content["hits"], out["search"].content


def test_the_docs_tables_name_every_tool_and_route():
    mcp_table = (ROOT / "docs" / "mcp.md").read_text(encoding="utf-8")
    http_table = (ROOT / "docs" / "http.md").read_text(encoding="utf-8")
    assert [name for name in TOOLS if f"`{name}`" not in mcp_table] == []
    assert [path for path in ROUTES if f" {path}`" not in http_table and f" {path}," not in http_table] == []
