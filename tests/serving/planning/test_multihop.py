"""Multi-hop (issue 15): from the first hits, definitions -> uses over a real snapshot's graph reach a
target no retriever ranks first on the words alone."""

from __future__ import annotations

import pytest

from semantica.config import MultiHopConfig
from serving.core.intent import IntentClassifier
from serving.planning.multihop import MultiHop
from tests.conftest import make_config
from tests.dated_git import one_commit_repo

R = "acme/http"
FILES = {
    "http/parser.py": "def parse_header_line(line):\n"
                      "    \"\"\"Split a raw header line into name and value; reject a header line without a colon.\"\"\"\n"
                      "    if ':' not in line:\n        raise ValueError('header line without a colon')\n"
                      "    name, value = line.split(':', 1)\n    return name.strip(), value.strip()\n",
    "http/client.py": "from http.parser import parse_header_line\n\n\n"
                      "def open_session(url, raw):\n    \"\"\"Open a session to url and keep its metadata.\"\"\"\n"
                      "    meta = dict(parse_header_line(item) for item in raw)\n    return url, meta\n",
    "http/cookies.py": "def cookie_jar(values):\n    \"\"\"A jar of cookies; a header line of cookies has no colon here.\"\"\"\n"
                       "    return {v: True for v in values}\n",
    "http/status.py": "def reason(code):\n    \"\"\"The reason phrase of a status line.\"\"\"\n    return {200: 'OK'}.get(code, '')\n",
}
QUERY = "which callers of the code that rejects a header line without a colon must handle the error"


@pytest.fixture(scope="module")
def http_index(tmp_path_factory):
    from pipelines.indexer import Indexer

    repo = one_commit_repo(tmp_path_factory.mktemp("http") / "repo", FILES)
    root = tmp_path_factory.mktemp("http-index")
    Indexer(make_config(root, "token_vectors.enabled=false"), progress=False).index(str(repo), R, "HEAD")
    return root


def _pipeline(root, *overrides):
    from serving.pipeline import SearchPipeline

    # multihop's own function order: the learned localizer's blend on top is measured in lab/notes/localizer.md
    return SearchPipeline(make_config(root, "token_vectors.enabled=false", "late_interaction.enabled=false",
                                      "graph_ops.route_queries=false", "localizer.enabled=false", *overrides))


def _chunk(pipeline, path: str, symbol: str) -> str:
    snapshot = pipeline.snapshots.get(R)
    return next(c.chunk_id for c in snapshot.chunks if c.path == path and c.symbol == symbol)


def test_uses_and_definitions_reach_the_other_step(http_index):
    pipeline = _pipeline(http_index)
    graph = pipeline.graph_ops.graph(pipeline.snapshots.get(R))
    parser = _chunk(pipeline, "http/parser.py", "parse_header_line")
    client = _chunk(pipeline, "http/client.py", "open_session")
    assert MultiHop(MultiHopConfig(directions=["uses"])).neighbours(graph, [parser]) == [(client, 1)]
    assert MultiHop(MultiHopConfig(directions=["definitions"])).neighbours(graph, [client]) == [(parser, 1)]
    assert MultiHop(MultiHopConfig(directions=["definitions"])).neighbours(graph, [parser]) == []
    with pytest.raises(ValueError, match="unknown hopdirection 'callers'"):
        MultiHop(MultiHopConfig(directions=["callers"]))


def test_two_step_question_moves_the_caller_up_and_off_is_as_before(http_index):
    def function_rank(response) -> int:
        names = [f["function"] for f in response.functions]
        return names.index("http/client.py::open_session") + 1

    from serving.pipeline import SearchRequest

    assert IntentClassifier().classify(QUERY).dominant.value == "flow"
    off = _pipeline(http_index, "planning.multihop.enabled=false").search(SearchRequest(query=QUERY, k=5))
    on = _pipeline(http_index, "planning.multihop.enabled=true").search(SearchRequest(query=QUERY, k=5))
    assert "multihop" not in (off.plan or {}) and on.plan["multihop"]["reached"] >= 1
    assert on.functions[0]["function"] == "http/parser.py::parse_header_line"  # step one: the words
    assert function_rank(on) == 2 < function_rank(off)  # step two: its caller, only one edge away
