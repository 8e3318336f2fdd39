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
