"""The MCP token-budget contract over the real pipeline, through the SDK's in-process client: over 100+
calls of every budgeted tool on a small real index no answer exceeds `budget_tokens`, counted
independently of the server (the raw `tokenizers` file with padding and truncation off, over the exact
text content the client receives); cursors return the rest in rank order, a bad cursor is a JSON-RPC
error, and every tool is annotated."""

from __future__ import annotations

import json
import re
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_PARAMS

from semantica.runtime.token_count import TOKENIZER_FILE, TokenCounter
from serving.api.mcp.server import SemanticaTools, build_server
from serving.pipeline import SearchPipeline
from tests.conftest import REPO_ROOT, make_config

pytestmark = pytest.mark.timeout(900)
CALLS_PER_TOOL = 100
# per tool, from just above its envelope plus one item (search: ~705 + a hit ~120 + its file with history ~360;
# repo_map: ~390 with its freshness + seeds up to ~150 + a file ~50)
BUDGETS = {"search": (1300, 1400, 1600, 1800, 2000, 2500, 3000, 4000),
           "get_context": (550, 600, 700, 800, 1000, 1500, 2500, 4000),
           "repo_map": (650, 700, 800, 1000, 1200, 1500, 2000, 2500),
           "grep": (700, 800, 900, 1000, 1200, 1500, 2500, 4000)}
SMALL_CORPUS = ("serving/api/mcp/*.py", "serving/knowledge/*.py", "serving/core/context.py", "docs/mcp.md")


def not_a_syncer(**_: Any) -> dict[str, Any]:
    raise AssertionError("these tests never sync")


def call_all(tools: SemanticaTools, calls: list[tuple[str, dict[str, Any]]]) -> list[Any]:
    """Each call's result, or the MCPError it raised, through the SDK's in-process client."""
    out: list[Any] = []

    async def main() -> None:
        async with Client(build_server(tools)) as client:
            for name, arguments in calls:
                try:
                    out.append(await client.call_tool(name, arguments))
                except MCPError as exc:
                    out.append(exc)

    anyio.run(main)
    return out


class IndependentCount:
    """The encoder's tokenizer file read raw (not through the server's counter), padding and truncation off."""

    def __init__(self, model_path: str) -> None:
        from tokenizers import Tokenizer

        from semantica.runtime.encoder import resolve_model_path

        self.tokenizer = Tokenizer.from_file(str(resolve_model_path(model_path) / TOKENIZER_FILE))
        self.tokenizer.no_padding()
        self.tokenizer.no_truncation()

    def __call__(self, text: str) -> int:
        return len(self.tokenizer.encode(text, add_special_tokens=False).ids)


@pytest.fixture(scope="module")
def small_tools(tmp_path_factory) -> tuple[SemanticaTools, str]:  # noqa: ANN001
    """A real index of a few files of this repository (code, comments, a doc), built here."""
    from pipelines.indexer import Indexer

    config = make_config(tmp_path_factory.mktemp("budget"), f"discover.include_globs={json.dumps(list(SMALL_CORPUS))}")
    Indexer(config, progress=False).index(str(REPO_ROOT), "budget/small")
    return SemanticaTools(config, SearchPipeline(config), syncer=not_a_syncer), "budget/small"


@pytest.fixture(scope="module")
def tools(small_tools: tuple[SemanticaTools, str]) -> SemanticaTools:
    return small_tools[0]


@pytest.fixture(scope="module")
def count(tools: SemanticaTools) -> IndependentCount:
    return IndependentCount(tools.config.encoder.model_path)


def answer_tokens(count: IndependentCount, result: Any) -> int:
    assert not result.is_error, result.content
    [content] = result.content
    return count(content.text)


BUDGETED_TOOLS = ("search", "get_context", "repo_map", "grep")
WORDS = ("token budget cursor", "knowledge entry trust", "pack blocks into context", "TokenCounter count",
         "CursorCodec decode offset", "how is an entry verified", "render the answer as JSON", "curator promotes",
         "store sqlite fts5", "freshness of a snapshot", "tool error for bad arguments", "BudgetPacker.pack")


def test_every_budgeted_answer_fits_by_an_independent_count(small_tools: tuple[SemanticaTools, str],
                                                            count: IndependentCount) -> None:
    """100+ calls of each budgeted tool; the text content the client receives, counted by the raw tokenizer,
    is within `budget_tokens` (the padded counter this replaces counted every text as 128 and let 4x through)."""
    tools, repo = small_tools
    calls: list[tuple[str, dict[str, Any]]] = []
    for n in range(CALLS_PER_TOOL):
        query = f"{WORDS[n % len(WORDS)]} {n}" if n >= len(WORDS) else WORDS[n]
        budget = {name: budgets[n % len(budgets)] for name, budgets in BUDGETS.items()}
        calls += [("search", {"query": query, "budget_tokens": budget["search"]}),
                  ("get_context", {"query": query, "budget_tokens": budget["get_context"]}),
                  ("repo_map", {"repo": repo, "query": query, "budget_tokens": budget["repo_map"]}),
                  ("grep", {"pattern": WORDS[n % len(WORDS)].split()[n % 2 - 1], "ignore_case": True,
                            "budget_tokens": budget["grep"]})]
    results = call_all(tools, calls)
    measured: dict[str, list[tuple[int, int]]] = {name: [] for name in BUDGETED_TOOLS}
    cut = 0
    for (name, arguments), result in zip(calls, results):
        assert not isinstance(result, Exception), (name, arguments, result)
        assert not result.is_error, (name, arguments, result.content)
        [content] = result.content
        tokens = count(content.text)
        assert tokens <= arguments["budget_tokens"], (name, arguments, tokens)
        assert json.loads(content.text) == result.structured_content  # the text is the structured answer
        assert "\n  " not in content.text[:200]  # compact JSON, not the SDK's indented default
        measured[name].append((tokens, arguments["budget_tokens"]))
        cut += result.structured_content["next_cursor"] is not None
    assert all(len(v) >= CALLS_PER_TOOL for v in measured.values())
    assert cut > 0  # small budgets really cut answers short
    assert max(t for t, b in measured["search"]) > 128  # not a constant count


ENVELOPE_TOLERANCE = 0.1
DOCUMENTED_ENVELOPE = re.compile(r"`(search|get_context|grep|repo_map)` about ([\d,]+)")


def test_the_documented_envelopes_are_the_measured_ones(tools: SemanticaTools) -> None:
    """docs/mcp-agents.md's smallest useful budgets: each tool's envelope (the answer without items, the number its
    too-small-budget tool error names) within 10% of the page's."""
    text = (REPO_ROOT / "docs" / "mcp-agents.md").read_text(encoding="utf-8")
    section = text.split("**Smallest useful budget:**", 1)[1].split("\n- **", 1)[0]
    documented = {m.group(1): int(m.group(2).replace(",", "")) for m in DOCUMENTED_ENVELOPE.finditer(section)}
    calls = [("search", {"query": "token budget cursor", "budget_tokens": 1}),
             ("get_context", {"query": "token budget cursor", "budget_tokens": 1}),
             ("grep", {"pattern": "cursor", "budget_tokens": 1}),
             ("repo_map", {"repo": "budget/small", "budget_tokens": 1})]
    measured = {name: int(re.search(r"needs (\d+)", result.content[0].text).group(1))  # type: ignore[union-attr]
                for (name, _), result in zip(calls, call_all(tools, calls))}
    assert set(documented) == set(BUDGETED_TOOLS)
    assert all(abs(measured[n] - documented[n]) <= ENVELOPE_TOLERANCE * documented[n] for n in documented), \
        (measured, documented)


def test_the_counter_counts_real_tokens(tools: SemanticaTools) -> None:
    counter = TokenCounter(tools.config.encoder.model_path)
    assert counter.count("a") == 1
    assert counter.count("word " * 1000) == 1000


def test_cursors_return_the_rest_in_rank_order(tools: SemanticaTools, count: IndependentCount) -> None:
    query = "BudgetPacker pack items into the budget"
    [full] = call_all(tools, [("search", {"query": query})])
    expected = [h["citation"] for h in full.structured_content["hits"]]
    seen: list[str] = []
    cursor = None
    for _ in range(len(expected) + 1):
        arguments = {"query": query, "budget_tokens": 2000, **({"cursor": cursor} if cursor else {})}
        [page] = call_all(tools, [("search", arguments)])
        assert answer_tokens(count, page) <= 2000
        seen += [h["citation"] for h in page.structured_content["hits"]]
        cursor = page.structured_content["next_cursor"]
        if cursor is None:
            break
    assert seen == expected and len(expected) > 1


def test_bad_cursors_are_jsonrpc_errors(tools: SemanticaTools) -> None:
    [page] = call_all(tools, [("search", {"query": "CursorCodec.decode", "budget_tokens": 1500})])
    cursor = page.structured_content["next_cursor"]
    assert cursor
    results = call_all(tools, [
        ("search", {"query": "CursorCodec.decode", "cursor": "not-a-cursor!"}),
        ("search", {"query": "another query", "cursor": cursor}),
        ("get_context", {"query": "CursorCodec.decode", "cursor": cursor}),
        ("search", {"query": "CursorCodec.decode", "cursor": cursor, "budget_tokens": 5000}),
    ])
    for bad in results[:3]:
        assert isinstance(bad, MCPError) and bad.code == INVALID_PARAMS, bad
    assert "other arguments" in results[1].message and "continues `search`" in results[2].message
    assert not isinstance(results[3], Exception) and results[3].structured_content["hits"]


def test_too_small_a_budget_is_a_tool_error(tools: SemanticaTools) -> None:
    [result] = call_all(tools, [("search", {"query": "TokenCounter", "budget_tokens": 5})])
    assert result.is_error and "too small" in result.content[0].text


WRITING_TOOLS = {"sync", "knowledge_propose"}  # re-index / store an entry; every other tool only reads


def test_every_tool_is_annotated(tools: SemanticaTools) -> None:
    listed: list[Any] = []

    async def main() -> None:
        async with Client(build_server(tools)) as client:
            listed.extend((await client.list_tools()).tools)

    anyio.run(main)
    assert {t.name for t in listed} >= {"search", "get_context", "repo_map", "sync", "list_repos"}
    for tool in listed:
        assert tool.annotations is not None and tool.annotations.read_only_hint is not None, tool.name
        assert tool.annotations.read_only_hint == (tool.name not in WRITING_TOOLS), tool.name
        assert tool.output_schema is not None, tool.name


def test_sync_reports_progress(tmp_path) -> None:  # noqa: ANN001
    """A real sync of a one-file repository: the client gets a start and an end progress notification."""
    import subprocess

    from pipelines.sync import RepoSyncer
    from tests.conftest import make_config

    repo = tmp_path / "tiny"
    repo.mkdir()
    (repo / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    subprocess.run(["git", "-C", str(repo), "add", "-A"], check=True)
    subprocess.run(["git", "-C", str(repo), "-c", "user.email=t@example.com", "-c", "user.name=t", "commit", "-qm", "x"],
                   check=True)
    config = make_config(tmp_path)
    syncer = RepoSyncer(config)
    tools = SemanticaTools(config, SearchPipeline(config), syncer=lambda **kw: syncer.sync(**kw).to_dict())
    progress: list[tuple[float, float | None, str | None]] = []
    out: list[Any] = []

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append((value, total, message))

    async def main() -> None:
        async with Client(build_server(tools)) as client:
            out.append(await client.call_tool("sync", {"path": str(repo)}, progress_callback=on_progress))

    anyio.run(main)
    assert out[0].structured_content["reindexed"] is True
    assert [p[:2] for p in progress] == [(0, 1), (1, 1)] and progress[-1][2] == "first index"


def test_a_cursor_from_before_a_reindex_is_refused(tmp_path) -> None:  # noqa: ANN001
    """Its offsets index the old snapshot's ranking: the new one may have added hits in front of them. The agent
    reads a tool error saying to search again (a JSON-RPC error many clients never show the model)."""
    import subprocess

    from pipelines.indexer import Indexer

    repo = tmp_path / "r"
    repo.mkdir()
    for n in range(6):
        (repo / f"m{n}.py").write_text(f'def cursor_page_{n}(x):\n    """Cursor page {n} of the results."""\n'
                                       f"    return x + {n}\n")
    git = ["git", "-C", str(repo), "-c", "user.email=t@e", "-c", "user.name=t"]
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-qm", "one"], check=True)
    config = make_config(tmp_path)
    Indexer(config, progress=False).index(str(repo), "acme/pages")
    tools = SemanticaTools(config, SearchPipeline(config), syncer=not_a_syncer)
    arguments = {"query": "cursor page of the results", "repos": ["acme/pages"], "budget_tokens": 1000}
    [first] = call_all(tools, [("search", arguments)])
    cursor = first.structured_content["next_cursor"]
    assert cursor
    [same] = call_all(tools, [("search", {**arguments, "cursor": cursor})])
    assert not isinstance(same, Exception) and not same.is_error  # the same index: the cursor continues
    (repo / "m9.py").write_text('def cursor_page_new(x):\n    """The newest cursor page of the results."""\n    return x\n')
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-qm", "two"], check=True)
    Indexer(config, progress=False).index(str(repo), "acme/pages")
    [stale] = call_all(tools, [("search", {**arguments, "cursor": cursor})])
    assert not isinstance(stale, Exception) and stale.is_error, stale  # a tool error the model reads (N18)
    assert "the index changed" in stale.content[0].text and "search again" in stale.content[0].text


def test_a_budget_above_a_tools_maximum_is_a_tool_error(tools: SemanticaTools) -> None:
    results = call_all(tools, [("get_context", {"query": "x", "budget_tokens": 10**9}),
                               ("repo_map", {"repo": "budget/small", "budget_tokens": 10**9})])
    for result in results:
        assert result.is_error and "budget_tokens=1000000000 is above the maximum" in result.content[0].text


def block_texts(answer: dict[str, Any]) -> list[str]:
    """Each block's lines as a get_context answer's text shows them (after its `# citation` line)."""
    text, blocks = answer["text"], answer["blocks"]
    starts = [text.index(f"# {b['citation']}\n") + len(f"# {b['citation']}\n") for b in blocks]
    ends = [text.index(f"\n\n# {b['citation']}\n") for b in blocks[1:]] + [len(text)]
    return [text[start:end] for start, end in zip(starts, ends)]


def test_get_context_has_one_unit_the_budgets(tools: SemanticaTools, count: IndependentCount) -> None:
    """get_context's blocks are counted in `budget_tokens`' unit and cut only by it: before, the pipeline first
    packed whitespace words into 95% of the budget, so paging a small budget ended (no cursor) long before the
    blocks one large call returns, and `tokens` and `tokens_used` counted words."""
    query = "how does the budget packer cut items and encode a cursor"
    [whole] = call_all(tools, [("get_context", {"query": query, "budget_tokens": 16000})])
    expected = [b["citation"] for b in whole.structured_content["blocks"]]
    seen: list[str] = []
    cursor = None
    for _ in range(len(expected) + 1):
        arguments = {"query": query, "budget_tokens": 800, **({"cursor": cursor} if cursor else {})}
        [page] = call_all(tools, [("get_context", arguments)])
        answer = page.structured_content
        assert answer_tokens(count, page) <= 800
        assert [b["tokens"] for b in answer["blocks"]] == [count(b["citation"]) + count(t)
                                                           for b, t in zip(answer["blocks"], block_texts(answer))]
        assert answer["tokens_used"] == sum(b["tokens"] for b in answer["blocks"])
        seen += [b["citation"] for b in answer["blocks"]]
        cursor = answer["next_cursor"]
        if cursor is None:
            break
    assert seen == expected and len(expected) > 3


def test_repo_map_is_cut_by_the_budget_alone(tools: SemanticaTools, count: IndependentCount) -> None:
    """As get_context: the map was first packed into `budget_tokens` by itself, so paging a small budget ended
    long before the files of one large call; its `tokens` counted the whole map, not the files sent."""
    arguments = {"repo": "budget/small", "query": "BudgetPacker TokenCounter"}
    [whole] = call_all(tools, [("repo_map", {**arguments, "budget_tokens": tools.config.repo_map.max_tokens})])
    assert whole.structured_content["next_cursor"] is None  # the whole map of this small index
    expected = [f["path"] for f in whole.structured_content["files"]]
    seen: list[str] = []
    cursor = None
    for _ in range(len(expected) + 1):
        [page] = call_all(tools, [("repo_map", {**arguments, "budget_tokens": 700, **({"cursor": cursor} if cursor else {})})])
        answer = page.structured_content
        assert answer_tokens(count, page) <= 700
        assert answer["tokens"] == sum(count(line) for line in answer["text"].split("\n")) and answer["budget"] == 700
        seen += [f["path"] for f in answer["files"]]
        cursor = answer["next_cursor"]
        if cursor is None:
            break
    assert seen == expected and len(expected) > 3
