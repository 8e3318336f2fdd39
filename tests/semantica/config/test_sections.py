"""The product `Config` that every build and query loads: its sections and its leaf-field budget are listed here,
so a new section or a grown one is a decision made in this file, and no training job's setting is in it (those
are `semantica.config.training.TrainConfig`, conf/train.yaml)."""

from __future__ import annotations

import dataclasses
import typing

from semantica.config import Config, TrainConfig, field_count, load_config

# every section of `Config` (a nested dataclass is a section of its own) with its leaf fields, in order
SECTIONS = {
    "paths": 2,
    "discover": 7,
    "chunk": 5,
    "encoder": 12,
    "faiss": 7,
    "lucene": 5,
    "index": 6,
    "token_vectors": 9,
    "shards": 3,
    "branches": 2,
    "intent": 3,
    "retrieval": 5,
    "graph": 6,
    "fusion": 7,
    "late_interaction": 8,
    "cross_encoder": 7,
    "rerank": 1,
    "context": 6,
    "query": 9,
    "graph_ops": 5,
    "exact": 12,
    "localizer": 35,
    "serve": 5,
    "auth": 5,
    "limits": 4,
    "admission": 7,
    "mcp": 9,
    "daemon": 7,
    "ray": 13,
    "metrics": 2,
    "freshness": 5,
    "watch": 2,
    "knowledge": 15,
    "plan": 8,
    "observability": 6,
    "repo_map": 2,
    "feedback_weights": 6,
    "planning": 1,
    "planning.analyzer": 2,
    "planning.modes": 3,
    "planning.decompose": 3,
    "history": 14,
}
FIELD_BUDGET = 281  # leaf fields in all (the target, 300, is met): lower this as sections leave, never raise it quietly


def _types(cls: type) -> set[type]:
    """Every dataclass type in a config tree, the root included."""
    hints = typing.get_type_hints(cls)
    found = {cls}
    for item in dataclasses.fields(cls):
        if dataclasses.is_dataclass(hints[item.name]):
            found |= _types(hints[item.name])
    return found


def test_the_product_config_has_exactly_the_listed_sections_and_fields() -> None:
    assert field_count() == SECTIONS  # a new, dropped or resized section: change SECTIONS on purpose


def test_the_product_config_stays_within_its_field_budget() -> None:
    assert sum(field_count().values()) <= FIELD_BUDGET


def test_no_training_section_or_setting_is_in_the_product_config() -> None:
    product, training = _types(Config), _types(TrainConfig) - {TrainConfig}
    assert product & training == set()
    assert {f.name for f in dataclasses.fields(TrainConfig)} & {f.name for f in dataclasses.fields(Config)} == set()
    dumped = dataclasses.asdict(load_config(None, [], environ={}))
    assert not {"pairs", "mine", "localizer_train", "train_encoder"} & set(dumped)
    assert not {"corpus", "snapshot_every", "max_staleness", "max_queries_per_repo"} & set(dumped["localizer"])
