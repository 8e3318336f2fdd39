"""MCP knowledge tools over a real index: an agent proposes an entry (a candidate) and finds it; bad input
is a tool error; get_context carries trusted entries."""

from __future__ import annotations

import pytest
from mcp.server.mcpserver.exceptions import ToolError

from serving.api.mcp.server import SemanticaTools
from serving.knowledge.curator import Curator
from serving.pipeline import SearchPipeline
from tests.serving.ray.test_app import REPO_NAME, make_tiny_index

pytestmark = pytest.mark.timeout(300)


@pytest.fixture(scope="module")
def tools(tmp_path_factory):
    config = make_tiny_index(tmp_path_factory.mktemp("knowledge-mcp"), "planning.enabled=false")
    return SemanticaTools(config, SearchPipeline(config))


def test_agent_proposal_is_a_candidate_until_a_person_approves_it(tools):
    out = tools.knowledge_propose(title="Cart.total sums price_of", kind="fact", repo=REPO_NAME,
                                  text="Cart.total multiplies price_of by the quantity of every cart item.",
                                  symbols=["Cart.total", "price_of"], evidence=["shop/cart.py"], source_ref="agent-7")
    entry = out.entry
    assert entry["status"] == "candidate" and entry["source_kind"] == "agent" and entry["verification"] == "green"
    assert out.warnings == [] and out.conflicts == []
    assert tools.knowledge_search(query="cart total price_of", repos=[REPO_NAME]).entries == []  # not active yet
    found = tools.knowledge_search(query="cart total price_of", repos=[REPO_NAME], status=["candidate"]).entries
    assert [e["id"] for e in found] == [entry["id"]] and tools.knowledge_search(query="cart").content_trust == "untrusted"
    assert entry["evidence_resolved"] == ["shop/cart.py"] and entry["review"] == "pending"
    service = tools.pipeline.knowledge.service
    Curator(service).run([REPO_NAME])  # verified, with real evidence: still no person said yes
    assert tools.knowledge_search(query="cart total price_of", repos=[REPO_NAME]).entries == []
    context = tools.get_context(query="how does the cart total use price_of", repos=[REPO_NAME])
    assert context.knowledge == [] and "knowledge:" not in context.text and context.content_trust == "untrusted"
    service.resolve(entry["id"], keep=True, actor="alice", repos=[REPO_NAME])
    promoted = tools.knowledge_search(query="cart total price_of", repos=[REPO_NAME]).entries
    assert [e["id"] for e in promoted] == [entry["id"]]
    assert promoted[0]["status"] == "active" and promoted[0]["reviewed_by"] == "alice"
    context = tools.get_context(query="how does the cart total use price_of", repos=[REPO_NAME])
    assert [k["id"] for k in context.knowledge] == [entry["id"]] and context.text.startswith("# knowledge:")
    assert context.knowledge[0]["author_kind"] == "agent" and context.knowledge[0]["review"] == "approved"
    assert "author=agent review=approved by alice content=untrusted" in context.text.split("\n", 1)[0]


@pytest.mark.parametrize("kwargs, words", [
    ({"text": "x" * 9000}, "max_text_chars"),
    ({"text": "nul \x00"}, "binary"),
    ({"kind": "gossip"}, "unknown kind"),
])
def test_bad_proposals_are_tool_errors(tools, kwargs, words):
    with pytest.raises(ToolError, match=words):
        tools.knowledge_propose(**{"title": "t", "text": "some text", "repo": REPO_NAME, **kwargs})
    with pytest.raises(ToolError, match="unknown status"):
        tools.knowledge_search(query="x", status=["maybe"])


def test_a_proposal_about_an_unpublished_repository_opens_no_store(tools):
    directory = tools.pipeline.knowledge.service.base.directory
    before = set(directory.glob("*"))
    for n in range(20):
        with pytest.raises(ToolError, match="no published snapshot"):
            tools.knowledge_propose(title="t", text="some text", repo=f"tiny/ghost-{n}")
    assert set(directory.glob("*")) == before


def test_a_proposal_about_a_malformed_repository_name_is_a_tool_error(tools):
    with pytest.raises(ToolError):
        tools.knowledge_propose(title="t", text="some text", repo="../etc")
