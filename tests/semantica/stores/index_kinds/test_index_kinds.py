"""The index-kind registry on a real index: the built-in kinds own every shard file and open the same
readers a direct open gives, and a toy kind (one module's worth of code plus a registry line) is written by
the indexer and searched by a toy retriever through the real pipeline."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from pipelines.indexer import Indexer
from semantica.api import SearchRequest
from semantica.layout import IndexLayout
from semantica.schema import ShardInfo
from semantica.snapshot import Snapshot
from semantica.stores.index_kinds import KindWritten, WriteContext, index_kinds, register_index_kind, unregister_index_kind
from semantica.stores.lucene import LuceneShardSearcher
from semantica.stores.vectors import VectorShardPaths, VectorShardSearcher
from tests.conftest import make_config
from tests.dated_git import one_commit_repo

pytestmark = pytest.mark.timeout(600)
REPO = "kinds/shop"
FILES = {
    "shop/cart.py": 'from shop.prices import price_of\n\n\nclass Cart:\n    """A shopping cart."""\n\n'
                    '    def __init__(self):\n        self.items = []\n\n    def total(self):\n'
                    '        return sum(price_of(n) for n in self.items)\n',
    "shop/prices.py": 'PRICES = {"apple": 3}\n\n\ndef price_of(name):\n    """Price of one item in cents."""\n'
                      '    return PRICES.get(name, 0)\n',
    "docs/shipping.md": "# Shipping\n\nParcels leave the warehouse daily.\n",
}
TABLES = {"chunks.parquet", "symbols.parquet", "edges.parquet", "errors.parquet", "pagerank.parquet", "files.parquet"}
TOY = "pathwords"


class PathWordsKind:
    """A toy index kind: word of a file path -> the chunk ids of that file, one JSON file per snapshot."""

    name = TOY
    directories = (TOY,)

    def write(self, context: WriteContext) -> KindWritten:
        words: dict[str, list[str]] = {}
        for chunk in context.inputs.chunks:
            for word in re.split(r"[/._-]+", chunk.path.lower()):
                if word:
                    words.setdefault(word, []).append(chunk.chunk_id)
        (context.root / TOY).mkdir()
        (context.root / TOY / "words.json").write_text(json.dumps(words, sort_keys=True))
        return KindWritten([ShardInfo(TOY, f"{TOY}/words.json", len(words), "")], {f"{TOY}_words": len(words)})

    def open(self, snapshot: Any) -> dict[str, list[str]]:
        paths = snapshot.shard_paths(TOY)
        return json.loads(paths[0].read_text()) if paths else {}


def _repo(root: Path) -> Path:
    return one_commit_repo(root / "repo", FILES)


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """One real index written with the toy kind registered (the built-in kinds are written as always)."""
    root = tmp_path_factory.mktemp("index-kinds")
    config = make_config(root, f"serve.feedback_dir={root / 'feedback'}", f"index.kinds=[faiss,lucene,tokens,history,{TOY}]",
                         "history.index=false")  # history: a registered kind that writes nothing here
    register_index_kind(PathWordsKind())
    try:
        Indexer(config, progress=False).index(str(_repo(root)), REPO)
    finally:
        unregister_index_kind(TOY)
    return root, config


def _snapshot(config) -> Snapshot:
    return Snapshot.open(IndexLayout(config.paths.index_root).current(REPO), config)


def test_every_file_of_a_snapshot_is_a_table_or_belongs_to_a_registered_kind(built):
    _, config = built
    snapshot = _snapshot(config)
    register_index_kind(PathWordsKind())
    try:
        directories = {d for kind in index_kinds() for d in kind.directories}
    finally:
        unregister_index_kind(TOY)
    files = set(snapshot.manifest.checksums)
    owned = {f for f in files if f.split("/", 1)[0] in directories}
    assert files - owned == TABLES
    assert {f.split("/", 1)[0] for f in owned} == {"vectors", "lucene", "tokens", TOY}
    assert {s.kind for s in snapshot.manifest.shards} == {"faiss", "lucene", TOY}
    counts = snapshot.manifest.counts
    assert counts[f"{TOY}_words"] == len(json.loads(
        (snapshot.paths.root / TOY / "words.json").read_text()))
    assert snapshot.manifest.token_vectors["chunks"] == len(snapshot.chunks)


def test_registry_readers_answer_as_the_direct_readers(built):
    _, config = built
    snapshot = _snapshot(config)
    direct_lucene = [LuceneShardSearcher(p, config.lucene) for p in snapshot.shard_paths("lucene")]
    assert len(direct_lucene) == 1
    query = "price of one item in cents"
    through_registry = snapshot.index("lucene")[0].search(query, 5)
    assert through_registry == direct_lucene[0].search(query, 5)
    chunks = snapshot.chunk_by_id
    assert chunks[through_registry[0][0]].path == "shop/prices.py"  # the committed expectation

    index = snapshot.shard_paths("faiss")[0]
    direct_vectors = VectorShardSearcher(VectorShardPaths(index, index.with_name(index.stem + ".ids.npy")),
                                         config.faiss)
    probe = np.random.default_rng(0).standard_normal((1, snapshot.manifest.dim)).astype(np.float32)
    scores, rows = snapshot.index("faiss")[0].search(probe, 5)
    direct_scores, direct_rows = direct_vectors.search(probe, 5)
    assert rows.tolist() == direct_rows.tolist() and np.allclose(scores, direct_scores)
    assert snapshot.vector_shards is snapshot.index("faiss") and snapshot.lucene_shards is snapshot.index("lucene")
    assert snapshot.token_vectors is snapshot.index("tokens") and snapshot.token_vectors is not None
    assert snapshot.history is None  # a history index is stored only with `history.index`


def test_a_toy_index_kind_is_searched_by_a_toy_retriever_through_the_pipeline(built):
    from serving.pipeline import SearchPipeline
    from serving.retrievers.base import BaseRetriever, RetrievalQuery, ScoredList
    from serving.retrievers.registry import register_retriever, unregister_retriever

    class PathWordsRetriever(BaseRetriever):
        """Chunks of files whose path holds a query word, read from the toy index kind."""

        def __init__(self, snapshot: Snapshot) -> None:
            super().__init__(snapshot.chunk_by_id)
            self.words = snapshot.index(TOY)

        def _search(self, query: RetrievalQuery, k: int) -> ScoredList:
            found = [cid for w in query.text.lower().split() for cid in self.words.get(w, [])]
            return [(cid, 1.0) for cid in dict.fromkeys(found)][:k]

    root, _ = built
    register_index_kind(PathWordsKind())
    register_retriever(TOY, lambda repo: PathWordsRetriever(repo.snapshot))
    try:
        config = make_config(root, f"serve.feedback_dir={root / 'feedback'}",
                             f"retrieval.retrievers=[vector,lexical,symbol,graph,{TOY}]", f"fusion.rrf_k.{TOY}=60",
                             f"fusion.extra_weights.{TOY}=1.0")
        pipeline = SearchPipeline(config)
        response = pipeline.search(SearchRequest(query="shipping", repos=[REPO], k=5, strategies=[TOY]))
        assert response.hits and {h.path for h in response.hits} == {"docs/shipping.md"}
        assert all(set(h.ranks) == {TOY} for h in response.hits)
    finally:
        unregister_retriever(TOY)
        unregister_index_kind(TOY)


def test_an_unregistered_kind_in_conf_is_a_clear_error(tmp_path):
    from pipelines.shards import PartitionedShardWriter, PreviousShards, ShardInputs, ShardLinker
    from semantica.config import ConfigError

    writer = PartitionedShardWriter(make_config(tmp_path, "index.kinds=[faiss,nope]"))
    with pytest.raises(ConfigError, match="index.kinds: unknown index kind 'nope'; registered: faiss, lucene"):
        writer.write(tmp_path, ShardInputs([], np.zeros((0, 4), np.float32), [], "m"),
                     ShardLinker(PreviousShards(), tmp_path))
