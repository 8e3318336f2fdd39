"""The dense channel's head ordered by a LambdaRank model (`localizer.dense_head_ranker`): the model reads each head
function's localizer features, its place, its cosine and the cosine's rank; a function without a feature row or a
vector gets NaN, never zero; a model trained on other features, or none, is a clear error; and the channel falls
back to the fusion where the localizer built no feature rows."""

from __future__ import annotations

import dataclasses
from concurrent.futures import Future

import lightgbm as lgb
import numpy as np
import pytest

from semantica.config import EncoderConfig, load_config
from semantica.config.loader import ConfigError
from semantica.encoder import Encoder, resolve_model_path
from semantica.localizer.dense import HEAD_RANKER_FEATURES, HEAD_RANKER_FILE, DenseFusion, HeadRanker, HeadRankerError, cosines
from semantica.localizer.features import FUNCTION_FEATURES, CandidateConfig, CandidateGenerator
from semantica.localizer.snapshot import SnapshotBuilder
from serving.core.localizer.dense import DenseFunctionChannel

COSINE_RANK = HEAD_RANKER_FEATURES.index("cosine_rank")
MINILM = str(resolve_model_path(""))


def train(directory, features=HEAD_RANKER_FEATURES) -> None:
    """A real LambdaRank model that learned 'the best cosine of the head is the gold function'."""
    rng = np.random.default_rng(3)
    rows, labels = [], []
    for _ in range(60):
        cos = rng.random(6)
        order = np.argsort(-cos)
        rank = np.empty(6)
        rank[order] = np.arange(1, 7)
        block = rng.random((6, len(features)))
        block[:, features.index("cosine")] = cos
        block[:, features.index("cosine_rank")] = rank
        rows.append(block)
        labels += (rank == 1).astype(int).tolist()
    data = lgb.Dataset(np.vstack(rows), label=labels, group=[6] * 60, feature_name=list(features))
    model = lgb.train({"objective": "lambdarank", "min_data_in_leaf": 2, "num_leaves": 4, "verbosity": -1,
                       "seed": 3, "deterministic": True, "num_threads": 1}, data, num_boost_round=20)
    directory.mkdir(parents=True, exist_ok=True)
    model.save_model(str(directory / HEAD_RANKER_FILE))


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    directory = tmp_path_factory.mktemp("head")
    train(directory)
    return directory


def test_the_model_orders_the_head_and_reads_nan_where_nothing_is_known(model_dir):
    ranker = HeadRanker(str(model_dir))
    head = ["a.py::f", "a.py::g", "tests/test_a.py::t", "b.py::h"]
    features = {"a.py::f": np.zeros(len(FUNCTION_FEATURES), dtype=np.float32),
                "a.py::g": np.ones(len(FUNCTION_FEATURES), dtype=np.float32)}  # t and h: no localizer row
    cosine = {"a.py::f": 0.2, "a.py::g": 0.1, "b.py::h": 0.7}  # the test function: no vector
    rows = ranker.rows(head, features, cosine)
    assert rows.shape == (4, len(HEAD_RANKER_FEATURES))
    assert np.isnan(rows[2, COSINE_RANK]) and np.isnan(rows[3, : len(FUNCTION_FEATURES)]).all()
    assert rows[:, HEAD_RANKER_FEATURES.index("head_rank")].tolist() == [1, 2, 3, 4]
    assert rows[3, COSINE_RANK] == 1 and rows[0, COSINE_RANK] == 2
    order = ranker.order(head, features, cosine)
    assert sorted(order) == sorted(head)  # nothing lost; the best cosine above the other vectors
    assert order.index("b.py::h") < min(order.index("a.py::f"), order.index("a.py::g"))
    assert ranker.order([], {}, {}) == []


def test_a_missing_or_foreign_model_is_a_clear_error(tmp_path):
    with pytest.raises(HeadRankerError, match="no head.txt"):
        HeadRanker(str(tmp_path / "none"))
    train(tmp_path / "other", (*FUNCTION_FEATURES, "head_rank", "cosine", "cosine_rank", "extra"))
    with pytest.raises(HeadRankerError, match="other features"):
        HeadRanker(str(tmp_path / "other"))
    with pytest.raises(ConfigError, match="needs localizer.dense_model"):
        load_config(None, ["localizer.dense_model=", "localizer.dense_head_ranker=models/x"])


FILES = {"shop/cart.py": "def add_item(cart, item):\n    cart.items.append(item)\n\n\n"
                         "def cart_total(cart):\n    return sum(i.price for i in cart.items)\n\n\n"
                         "def clear(cart):\n    cart.items = []\n",
         "shop/tax.py": "def vat(amount):\n    return amount * 0.2\n"}
QUERY = "the cart total ignores the price of each item"


def test_the_channel_uses_the_model_where_the_localizer_built_rows_and_the_fusion_elsewhere(model_dir):
    snapshot = SnapshotBuilder().build(FILES)
    cands = CandidateGenerator(CandidateConfig()).build(snapshot, QUERY)
    assert cands.function_features.shape[1] == len(FUNCTION_FEATURES)
    config = dataclasses.replace(load_config(None, []).localizer, dense_model=MINILM, dense_depth=3,
                                 dense_rrf_k=1.0, dense_weight=0.01, dense_file_depth=0,
                                 dense_head_ranker=str(model_dir))  # a fusion that hardly moves the order
    channel = DenseFunctionChannel(config, EncoderConfig())
    sources = {f.key: "\n".join(FILES[f.path].splitlines()[f.start - 1: f.end]) for f in snapshot.functions}
    functions = list(reversed(cands.functions))  # the blended order: the best cosine last
    encoder = Encoder(EncoderConfig(model_path=MINILM))
    query = Future()
    query.set_result(encoder.encode([QUERY], config.dense_query_max_length)[0])
    learned, _ = channel.rerank(query, functions, [], sources.get, None, cands)
    head = functions[:3]
    cos = cosines(query.result(), head, channel.vectors([sources[k] for k in head]))
    features = dict(zip(cands.functions, cands.function_features))
    assert learned == HeadRanker(str(model_dir)).order(head, features, cos) + functions[3:]
    assert learned[0] == max(cos, key=cos.get) != functions[0]  # the model put the best cosine first
    bare = CandidateGenerator(CandidateConfig()).build(snapshot, QUERY, features=False)
    fused, _ = channel.rerank(query, functions, [], sources.get, None, bare)  # no rows: the fusion
    assert fused == DenseFusion(3, 1.0, 0.01).fuse(functions, cos) == functions != learned
    assert channel.rerank(query, functions, [], sources.get)[0] == fused
