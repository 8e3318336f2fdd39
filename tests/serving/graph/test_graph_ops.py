"""Exact graph answers over real parses (small fixtures, psf/requests) and through query/CLI/ingress."""

from __future__ import annotations

import json
import textwrap

import pytest

from pipelines.discover import RepoSource
from pipelines.parse import FileParser, GraphResolver
from pipelines.source_files import SourceFile, git_blob_sha
from semantica.config import ChunkConfig, DiscoverConfig
from semantica.languages import language_of
from serving.graph.ops import GraphOps, SnapshotGraph, UnknownNameError
from serving.graph.structural import GraphOp
from tests.conftest import REQUESTS_COMMIT

REPO = "test/flow"
FILES = {
    "app/util.py": """
        def helper(x):
            return x + 1


        def other(x):
            return x
        """,
    "app/base.py": """
        from app import util


        class Base:
            def run(self):
                return self.step()

            def step(self):
                first = util.helper(1)
                return first + util.helper(2)
        """,
    "app/child.py": """
        from app.base import Base


        def helper(x):
            return x


        class Child(Base):
            def step(self):
                value = helper(2)
                return super().step() + value


        def main():
            return Child().run()
        """,
}


def graph_of(files: dict[str, str], repo: str = REPO) -> SnapshotGraph:
    parser = FileParser(ChunkConfig())
    parsed = []
    for path, text in files.items():
        text = textwrap.dedent(text).lstrip("\n")
        parsed.append(parser.parse(repo, SourceFile(path, git_blob_sha(text.encode()), language_of(path), text)))
    edges = GraphResolver().resolve(parsed)
    return SnapshotGraph(repo, [s for p in parsed for s in p.symbols], edges, [c for p in parsed for c in p.chunks])


@pytest.fixture(scope="module")
def flow() -> SnapshotGraph:
    return graph_of(FILES)


def test_callers_cite_the_call_line_and_say_how(flow: SnapshotGraph) -> None:
    result = GraphOps().run_graphs(GraphOp.CALLERS, "app/util.py::helper", [flow])
    [answer] = result.answers
    assert (answer.qualname, answer.citation, answer.resolution) == ("Base.step", "app/base.py:9", "import")
    chunk = next(c for c in flow.chunks_by_path["app/base.py"] if c.chunk_id == answer.chunk_id)
    assert chunk.start_line <= 9 <= chunk.end_line and chunk.symbol == "Base.step"
    assert answer.sites == ["app/base.py:9", "app/base.py:10"]  # every call line, not only the first


def test_routed_answers_carry_rank_and_a_graph_score_when_retrieval_missed_them(flow: SnapshotGraph) -> None:
    from semantica.hits import Hit
    from serving.graph.route import RoutedAnswer

    result = GraphOps().run_graphs(GraphOp.CALLERS, "Base.step", [flow])
    chunks = {c.chunk_id: c for cs in flow.chunks_by_path.values() for c in cs}
    retrieved = Hit(chunk_id=result.answers[0].chunk_id, score=0.7, fused_score=0.03, ranks={"lexical": 1})
    merged = RoutedAnswer(result, (1.0, 0.8, 0.5, 0.25)).merge([retrieved], chunks)
    routed = RoutedAnswer(result, (1.0, 0.8, 0.5, 0.25))
    alone = routed.merge([], chunks)
    assert [a.resolution for a in result.answers] == ["self", "inheritance"]  # Base.run, Child.step (super)
    assert merged[0].score == 0.7  # retrieval found it: its own score
    assert [h.score for h in alone] == [1.0, 1.0] and all(h.fused_score == 0.0 for h in alone)
    info = [routed.by_chunk[h.chunk_id] for h in alone]
    assert [(i["rank"], i["score"], i["retrieved"]) for i in info] == [(1, 1.0, False), (2, 1.0, False)]
    name_only = RoutedAnswer(result, (1.0, 0.8, 0.5, 0.25))
    result.answers[1].resolution = "name"
    assert [h.score for h in name_only.merge([], chunks)] == [1.0, 0.5]


def test_ambiguous_name_is_answered_for_every_candidate(flow: SnapshotGraph) -> None:
    result = GraphOps().run_graphs(GraphOp.CALLERS, "helper", [flow])
    assert result.ambiguous and "ambiguous" in result.to_dict()["note"]
    assert sorted(result.candidates) == [f"{REPO}:app/child.py::helper", f"{REPO}:app/util.py::helper"]
    assert {(a.qualname, a.target.split("::")[0]) for a in result.answers} == {
        ("Base.step", "app/util.py"), ("Child.step", "app/child.py")}


def test_callees_and_transitive_callers(flow: SnapshotGraph) -> None:
    ops = GraphOps()
    direct = ops.run_graphs(GraphOp.CALLEES, "Child.step", [flow])
    assert {(a.qualname, a.resolution) for a in direct.answers} == {("Base.step", "inheritance"), ("helper", "local")}
    deep = ops.run_graphs(GraphOp.CALLERS, "app/util.py::helper", [flow], depth=3)
    assert [(a.qualname, a.depth) for a in deep.answers] == [
        ("Base.step", 1), ("Base.run", 2), ("Child.step", 2), ("main", 3)]  # main: Child().run(), by type
    assert {a.resolution for a in deep.answers if a.depth == 2} == {"self", "inheritance"}
    # Base.run's self.step() may run Child.step: an override edge, ranked after the exact ones
    callees = ops.run_graphs(GraphOp.CALLEES, "Base.run", [flow]).answers
    assert [(a.qualname, a.resolution) for a in callees] == [("Base.step", "self"), ("Child.step", "override")]


def test_defs_refs_impls_imports(flow: SnapshotGraph) -> None:
    ops = GraphOps()
    [d] = ops.run_graphs(GraphOp.DEFS, "Base", [flow]).answers
    assert d.citation.startswith("app/base.py:4-")
    impls = ops.run_graphs(GraphOp.IMPLS, "Base.step", [flow]).answers
    assert [(a.qualname, a.resolution) for a in impls] == [("Child.step", "inheritance")]
    assert [a.qualname for a in ops.run_graphs(GraphOp.IMPLS, "Base", [flow]).answers] == ["Child"]
    importers = ops.run_graphs(GraphOp.IMPORTERS, "app.base", [flow]).answers
    assert [a.node for a in importers] == ["file:app/child.py"]
    refs = ops.run_graphs(GraphOp.REFS, "Base", [flow]).answers
    assert "Child" in {a.qualname for a in refs}  # a subclass uses its base
    with pytest.raises(UnknownNameError):
        ops.run_graphs(GraphOp.CALLERS, "no_such_function", [flow])


def test_name_case_is_the_codes_and_folds_only_as_a_fallback(flow: SnapshotGraph) -> None:
    assert flow.lookup("Base") == ["app/base.py::Base"]
    assert flow.lookup("base") == ["app/base.py::Base"]  # nothing spelled `base`: case-insensitive fallback
    assert flow.lookup("base.Base.run") == ["app/base.py::Base.run"]  # module tail + qualname


# -- psf/requests at a fixed commit --------------------------------------------------------------


@pytest.fixture(scope="module")
def requests_graph(requests_clone) -> SnapshotGraph:
    src = RepoSource(str(requests_clone), REQUESTS_COMMIT, DiscoverConfig())
    entries, _ = src.entries()
    parser = FileParser(ChunkConfig())
    parsed = [parser.parse("psf/requests", f) for f in src.read(entries) if isinstance(f, SourceFile)]
    edges = GraphResolver().resolve(parsed)
    return SnapshotGraph("psf/requests", [s for p in parsed for s in p.symbols], edges,
                         [c for p in parsed for c in p.chunks])


def test_who_calls_register_hook_on_requests(requests_graph: SnapshotGraph) -> None:
    answers = GraphOps().run_graphs(GraphOp.CALLERS, "register_hook", [requests_graph]).answers
    assert ("Request.__init__", "requests/models.py:152") in [(a.qualname, a.citation) for a in answers[:3]]
    chunk = next(c for c in requests_graph.chunks_by_path["requests/models.py"] if c.chunk_id == answers[0].chunk_id)
    assert chunk.start_line <= 152 <= chunk.end_line  # the chunk holding the call, not __init__'s first chunk


def test_what_does_handle_401_call_on_requests(requests_graph: SnapshotGraph) -> None:
    answers = GraphOps().run_graphs(GraphOp.CALLEES, "HTTPDigestAuth.handle_401", [requests_graph]).answers
    names = {a.qualname for a in answers}
    assert {"HTTPDigestAuth.build_digest_header", "parse_dict_header"} <= names
    assert "HTTPDigestAuth.handle_401" not in names


# -- through the query pipeline, the CLI and the ingress (a real tiny index) ---------------------


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    from tests.serving.ray.test_app import make_tiny_index

    return make_tiny_index(tmp_path_factory.mktemp("graph-ops"))


def test_query_routes_a_structural_question_and_keeps_the_graph_answer_first(tiny) -> None:
    from semantica.api import SearchRequest
    from serving.pipeline import SearchPipeline

    response = SearchPipeline(tiny).search(SearchRequest(query="who calls price_of", k=5))
    assert response.graph is not None and response.graph["op"] == "callers"
    first = response.hits[0]
    assert first.symbol == "Cart.total" and first.graph["citation"] == "shop/cart.py:14"
    assert first.graph["resolution"] == "import"
    assert first.graph["rank"] == 1 and first.graph["sites"] == ["shop/cart.py:14"] and first.score > 0
    assert all(h.graph is None for h in response.hits[1:])  # retrieval hits follow, unmarked
    plain = SearchPipeline(tiny).search(SearchRequest(query="how is the cart total computed", k=5))
    assert plain.graph is None and all(h.graph is None for h in plain.hits)


def test_cli_callers_json_and_errors(tiny, capsys) -> None:
    from jobs.cli import main

    root = str(tiny.paths.index_root)
    assert main(["callers", "price_of", "--index-root", root, "--json"]) == 0
    answer = json.loads(capsys.readouterr().out)
    assert [(a["qualname"], a["citation"]) for a in answer["answers"]] == [("Cart.total", "shop/cart.py:14")]
    assert main(["callees", "Cart.total", "--index-root", root]) == 0
    assert "shop/prices.py:4  price_of  [import]" in capsys.readouterr().out
    assert main(["defs", "nothing_here", "--index-root", root]) == 1
    assert "no symbol or module named 'nothing_here'" in capsys.readouterr().err
    assert main(["callers", "price_of", "--depth", "99", "--index-root", root]) == 1


def test_ingress_graph_endpoint_maps_errors(tiny) -> None:
    from ray import serve

    from semantica.errors import describe, kind_of
    from serving.graph.service import GraphRequestError
    from serving.ray.app import build_graph, deployment_options

    handle = serve.run(build_graph(tiny, deployment_options(None)), _local_testing_mode=True)
    body = handle.graph.remote({"op": "callers", "name": "price_of"}).result()
    assert [a["citation"] for a in body["answers"]] == ["shop/cart.py:14"] and body["snapshots"]
    with pytest.raises(GraphRequestError) as bad:
        handle.graph.remote({"op": "friends", "name": "price_of"}).result()
    assert kind_of(bad.value).http_status == 422 and "callers, callees, defs" in describe(bad.value).body()["message"]
    with pytest.raises(LookupError) as unknown:
        handle.graph.remote({"op": "defs", "name": "nothing_here"}).result()
    assert kind_of(unknown.value).http_status == 404
