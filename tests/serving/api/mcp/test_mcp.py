"""`semantica mcp` driven by the official MCP SDK's own client over stdio, in a real subprocess.

No mocks: the server process indexes a small git repository built here (tree-sitter, MiniLM, FAISS,
Lucene), answers searches over it, and syncs after a file is edited.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from serving.api.catalog import TOOLS
from tests.conftest import REPO_ROOT, free_port

pytestmark = pytest.mark.timeout(600)

FILES = {
    "ledger/calc.py": 'def add(a, b):\n    """Add two amounts of money."""\n    return a + b\n\n\n'
                      'def total(items):\n    """Sum every amount in the ledger."""\n    return sum(add(0, i) for i in items)\n',
    "ledger/book.py": 'from ledger.calc import total\n\n\nclass Ledger:\n    """Records amounts and reports the balance."""\n\n'
                      '    def __init__(self):\n        self.amounts = []\n\n'
                      '    def record(self, amount):\n        self.amounts.append(amount)\n        return total(self.amounts)\n',
    "README.md": "# Ledger\n\nA tiny ledger that records amounts.\n",
}
PORT_ATTEMPTS = 5
EXPECTED_TOOLS = set(TOOLS)  # the live tool list is the catalog `--help` and the docs print


def git_repo(root: Path, files: dict[str, str]) -> Path:
    root.mkdir(parents=True)
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    subprocess.run(["git", "init", "-q", "-b", "main", str(root)], check=True)
    commit(root, "init")
    return root


def commit(root: Path, message: str) -> None:
    subprocess.run(["git", "-C", str(root), "add", "-A"], check=True)
    subprocess.run(["git", "-C", str(root), "-c", "user.email=t@example.com", "-c", "user.name=t", "commit", "-qm",
                    message], check=True)


def server_params(index_root: Path) -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable,
        # a private cache: the session asserts how many files a first and a second sync parse
        args=["-m", "jobs.cli", "mcp", "--index-root", str(index_root), "--set", f"paths.cache_dir={index_root.parent / 'cache'}"],
        env={**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"},
        cwd=str(REPO_ROOT),
    )


def run_session(index_root: Path, script: Any) -> Any:
    """Start `semantica mcp` as a subprocess, initialize a client session and run `script(session)`."""
    result: dict[str, Any] = {}

    async def main() -> None:
        with open(index_root.parent / "mcp-stderr.log", "w") as errlog:
            async with stdio_client(server_params(index_root), errlog=errlog) as (read, write):
                async with ClientSession(read, write) as session:
                    result["init"] = await session.initialize()
                    result["value"] = await script(session)

    anyio.run(main)
    return result


def structured(result: Any) -> dict[str, Any]:
    assert not result.is_error, result.content
    assert result.structured_content is not None
    return result.structured_content


def error_text(result: Any) -> str:
    assert result.is_error, result.structured_content
    return " ".join(getattr(c, "text", "") for c in result.content)


def test_mcp_session_index_search_context_sync(tmp_path: Path) -> None:
    repo = git_repo(tmp_path / "ledger", FILES)
    index_root = tmp_path / "index"

    async def script(session: ClientSession) -> dict[str, Any]:
        out: dict[str, Any] = {}
        tools = (await session.list_tools()).tools
        out["tools"] = {t.name: t for t in tools}
        out["first_sync"] = structured(await session.call_tool("sync", {"path": str(repo), "repo": "acme/ledger"}))
        out["repos"] = structured(await session.call_tool("list_repos", {}))
        out["search"] = structured(await session.call_tool("search", {"query": "Ledger record", "k": 5}))
        out["forced_mode"] = structured(await session.call_tool(
            "search", {"query": "Ledger record", "k": 5, "mode": "vector_heavy"}))
        out["callers"] = structured(await session.call_tool("callers", {"name": "total"}))
        out["callees"] = structured(await session.call_tool("callees", {"name": "Ledger.record"}))
        out["filtered"] = structured(await session.call_tool(
            "search", {"query": "sum amounts", "repos": ["acme/ledger"], "paths": ["ledger/calc.py"], "languages": ["python"]}))
        out["context"] = structured(await session.call_tool(
            "get_context", {"query": "how is the total of the ledger computed", "budget_tokens": 900}))
        out["fresh_sync"] = structured(await session.call_tool("sync", {"repo": "acme/ledger"}))
        (repo / "ledger" / "calc.py").write_text(FILES["ledger/calc.py"] + '\n\ndef refund_penalty(amount):\n'
                                                 '    """Charge a refund penalty of ten percent."""\n    return amount * 0.1\n')
        out["stale_status"] = structured(await session.call_tool("index_status", {"repo": "acme/ledger"}))
        out["second_sync"] = structured(await session.call_tool("sync", {"repo": "acme/ledger"}))
        out["after"] = structured(await session.call_tool("search", {"query": "refund_penalty", "k": 3}))
        out["status"] = structured(await session.call_tool("index_status", {}))
        # bad arguments: tool errors, and the server keeps answering
        out["errors"] = {
            "empty_query": error_text(await session.call_tool("search", {"query": ""})),
            "k_zero": error_text(await session.call_tool("search", {"query": "x", "k": 0})),
            "k_huge": error_text(await session.call_tool("search", {"query": "x", "k": 10_000})),
            "wrong_type": error_text(await session.call_tool("search", {"query": "x", "repos": "acme/ledger"})),
            "unknown_mode": error_text(await session.call_tool("search", {"query": "x", "mode": "fastest"})),
            "unknown_repo": error_text(await session.call_tool("search", {"query": "x", "repos": ["nope/nope"]})),
            "unknown_branch": error_text(await session.call_tool("search", {"query": "x", "branch": "nope"})),
            "budget": error_text(await session.call_tool("get_context", {"query": "x", "budget_tokens": 10**9})),
            "sync_nothing": error_text(await session.call_tool("sync", {})),
            "sync_not_git": error_text(await session.call_tool("sync", {"path": str(tmp_path)})),
            "status_unknown": error_text(await session.call_tool("index_status", {"repo": "nope/nope"})),
            "unknown_tool": error_text(await session.call_tool("no_such_tool", {})),
            "unknown_name": error_text(await session.call_tool("callers", {"name": "no_such_function"})),
            "deep": error_text(await session.call_tool("callees", {"name": "total", "depth": 999})),
        }
        out["still_alive"] = structured(await session.call_tool("list_repos", {}))
        return out

    result = run_session(index_root, script)
    assert result["init"].server_info.name == "semantica"
    out = result["value"]

    tools = out["tools"]
    assert set(tools) == EXPECTED_TOOLS
    for tool in tools.values():
        assert tool.description and len(tool.description) > 60  # says when to use it
        assert tool.output_schema and tool.output_schema["type"] == "object"
    search_schema = tools["search"].input_schema
    assert search_schema["required"] == ["query"]
    assert {"query", "repos", "k", "paths", "languages"} <= set(search_schema["properties"])
    assert tools["sync"].annotations.read_only_hint is False and tools["search"].annotations.read_only_hint is True

    first = out["first_sync"]
    assert first["reindexed"] and first["reason"] == "first index" and first["files_parsed"] == 3
    assert sorted(first["added"]) == ["README.md", "ledger/book.py", "ledger/calc.py"]
    assert [r["repo"] for r in out["repos"]["repos"]] == ["acme/ledger"]
    assert out["repos"]["repos"][0]["path"] == str(repo.resolve()) and out["repos"]["repos"][0]["branch"] == "main"

    hits = out["search"]["hits"]
    assert hits and any(h["path"] == "ledger/book.py" and "def record" in h["content"] for h in hits)
    assert all(h["citation"] == f"{h['path']}:{h['start_line']}-{h['end_line']}" for h in hits)
    fresh = out["search"]["freshness"]["acme/ledger"]  # keyed by repository, as on the CLI and over HTTP
    assert fresh["repo"] == "acme/ledger" and fresh["stale"] is False and fresh["commit"] and fresh["built_at"]
    assert {h["path"] for h in out["filtered"]["hits"]} == {"ledger/calc.py"}
    assert out["search"]["plan"]["mode"] == "lexical_heavy"  # a stop-word-free keyword bag: the planner's pick
    assert out["forced_mode"]["plan"]["mode"] == "vector_heavy"  # a forced mode is what the plan records

    context = out["context"]
    assert context["blocks"] and context["tokens_used"] <= 900 and context["budget"] == 900
    assert all(f"# {b['citation']}" in context["text"] for b in context["blocks"])

    assert out["fresh_sync"]["reindexed"] is False and out["fresh_sync"]["reason"].startswith("up to date")

    stale = out["stale_status"]["repos"][0]
    assert stale["stale"] is True and stale["changed"]["edited"] == ["ledger/calc.py"]
    second = out["second_sync"]
    assert second["reindexed"] and second["edited"] == ["ledger/calc.py"] and not second["added"]
    assert second["files_parsed"] == 1 and second["files_reused"] == 2  # unchanged files come from the cache
    assert second["chunks_reused"] > 0
    assert second["previous_snapshot_id"] == first["snapshot_id"] != second["snapshot_id"]
    assert any("refund_penalty" in h["content"] for h in out["after"]["hits"])
    # structural tools: exact answers from the code graph, cited at the call line
    callers = {a["qualname"]: a for a in out["callers"]["answers"]}
    assert "Ledger.record" in callers and callers["Ledger.record"]["citation"] == "ledger/book.py:12"
    assert callers["Ledger.record"]["sites"][0] == "ledger/book.py:12"  # every call line, the citation first
    assert {a["qualname"] for a in out["callees"]["answers"]} >= {"total"}
    assert out["callers"]["freshness"]["acme/ledger"]["commit"]  # graph answers carry the same freshness
    assert out["after"]["freshness"]["acme/ledger"]["stale"] is False
    assert out["status"]["repos"][0]["stale"] is False

    errors = out["errors"]
    assert "query is empty" in errors["empty_query"] or "at least 1" in errors["empty_query"]
    assert "greater than or equal to 1" in errors["k_zero"]
    assert "above the maximum" in errors["k_huge"]
    assert "valid list" in errors["wrong_type"]
    assert "fastest" in errors["unknown_mode"] and "mmr_diverse" in errors["unknown_mode"]
    assert "nope/nope" in errors["unknown_repo"] and "acme/ledger" in errors["unknown_repo"]
    assert "no repository has a snapshot of branch 'nope'" in errors["unknown_branch"]
    assert "above the maximum" in errors["budget"]
    assert "repo" in errors["sync_nothing"] and "path" in errors["sync_nothing"]
    assert "not a git repository" in errors["sync_not_git"]
    assert "nope/nope" in errors["status_unknown"]
    assert "no_such_function" in errors["unknown_name"]
    assert "depth" in errors["deep"]
    assert "no_such_tool" in errors["unknown_tool"]
    assert [r["repo"] for r in out["still_alive"]["repos"]] == ["acme/ledger"]


def test_mcp_streamable_http_transport(tmp_path: Path) -> None:
    """The same server over streamable HTTP (loopback), driven by the SDK's HTTP client."""
    import time

    import httpx
    from mcp.client.streamable_http import streamable_http_client

    params = server_params(tmp_path / "index")
    log = open(tmp_path / "http-stderr.log", "w")
    for _attempt in range(PORT_ATTEMPTS):  # a free port can be taken by another process before the server binds it
        port = free_port()
        proc = subprocess.Popen([params.command, *params.args, "--transport", "streamable-http", "--port", str(port)],
                                env=params.env, cwd=params.cwd, stdout=log, stderr=subprocess.STDOUT)
        url = f"http://127.0.0.1:{port}/mcp"
        deadline = time.monotonic() + 120
        while proc.poll() is None:
            try:
                httpx.get(url, timeout=1)
                break
            except httpx.TransportError:
                assert time.monotonic() < deadline, "the HTTP MCP server did not start in 120 s"
                time.sleep(0.5)
        if proc.poll() is None:  # alive after answering: it is our server on that port, not another process
            break
        log.flush()
        assert "address already in use" in (tmp_path / "http-stderr.log").read_text(), \
            (tmp_path / "http-stderr.log").read_text()
    else:
        pytest.fail(f"no free port in {PORT_ATTEMPTS} attempts")
    try:
        async def main() -> dict[str, Any]:
            async with streamable_http_client(url) as (read, write):
                async with ClientSession(read, write) as session:
                    await session.initialize()
                    names = {t.name for t in (await session.list_tools()).tools}
                    repos = structured(await session.call_tool("list_repos", {}))
                    missing = error_text(await session.call_tool("search", {"query": "anything"}))
                    return {"names": names, "repos": repos, "missing": missing}

        out = anyio.run(main)
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        log.close()
    assert out["names"] == EXPECTED_TOOLS
    assert out["repos"] == {"repos": []}
    assert "no repository is indexed yet" in out["missing"]
