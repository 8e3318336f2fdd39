"""`from_table` (a snapshot's chunks, symbols and edges built column-wise, as a cold query loads them) makes the
records `from_row` makes of each row, on a real snapshot's tables and on a table whose columns are out of order."""

from __future__ import annotations

import pyarrow as pa
import pytest

from pipelines.indexer import Indexer
from semantica.layout import IndexLayout
from semantica.schema import Chunk, Edge, Symbol
from semantica.snapshot import read_parquet
from tests.conftest import make_config
from tests.dated_git import one_commit_repo

pytestmark = pytest.mark.timeout(600)
FILES = {
    "shop/cart.py": "from shop.prices import price_of\n\n\nclass Cart:\n    def total(self, items):\n"
                    "        return sum(price_of(n) for n in items)\n",
    "shop/prices.py": "PRICES = {'apple': 3}\n\n\ndef price_of(name):\n    return PRICES.get(name, 0)\n",
}


@pytest.fixture(scope="module")
def paths(tmp_path_factory):
    root = tmp_path_factory.mktemp("tables")
    config = make_config(root, "token_vectors.enabled=false")
    Indexer(config, progress=False).index(str(one_commit_repo(root / "repo", FILES)), "tables/shop")
    return IndexLayout(config.paths.index_root).current("tables/shop")


@pytest.mark.parametrize(("record", "table"), [(Chunk, "chunks"), (Symbol, "symbols"), (Edge, "edges")])
def test_a_snapshot_table_loads_as_its_rows_do(paths, record, table) -> None:
    loaded = read_parquet(getattr(paths, table))
    by_rows = [record.from_row(r) for r in loaded.to_pylist()]
    assert by_rows and record.from_table(loaded) == by_rows


def test_columns_out_of_order_and_extra_columns_load_as_rows_do(paths) -> None:
    loaded = read_parquet(paths.edges)
    shuffled = loaded.select(list(reversed(loaded.column_names))).append_column("later_field", pa.array(
        ["x"] * loaded.num_rows))
    assert Edge.from_table(shuffled) == [Edge.from_row(r) for r in shuffled.to_pylist()]


def test_rows_are_what_asdict_makes(paths) -> None:
    """`to_row` field by field equals `dataclasses.asdict` with Enums as values, for every record of a real
    snapshot and for a record holding an Enum and a list."""
    import dataclasses
    from enum import Enum

    from semantica.schema import ChunkKind, FileError

    def reference(record):  # noqa: ANN001, ANN202
        return {k: (v.value if isinstance(v, Enum) else v) for k, v in dataclasses.asdict(record).items()}

    for record, table in ((Chunk, "chunks"), (Symbol, "symbols"), (Edge, "edges")):
        records = record.from_table(read_parquet(getattr(paths, table)))
        assert records and [r.to_row() for r in records] == [reference(r) for r in records]
    chunk = Chunk.from_table(read_parquet(paths.chunks))[0]
    chunk.kind = ChunkKind.FUNCTION
    edge = dataclasses.replace(Edge.from_table(read_parquet(paths.edges))[0], lines=[3, 5])
    error = FileError(repo="r", path="p", stage="discover", reason="binary")
    for record in (chunk, edge, error):
        assert record.to_row() == reference(record)
    assert chunk.to_row()["kind"] == ChunkKind.FUNCTION.value and edge.to_row()["lines"] == [3, 5]
