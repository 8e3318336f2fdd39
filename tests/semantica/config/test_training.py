"""The training jobs' own config (semantica/config/training.py): conf/train.yaml loads value for value, with the
loader `Config` uses (env SEMANTICA_TRAIN__SECTION__FIELD < overrides), and the product config refuses its keys."""

from __future__ import annotations

import dataclasses

import pytest
import yaml

from semantica.config import (
    TRAIN_CONFIG_FILE,
    TRAIN_SECTIONS,
    ConfigError,
    TrainConfig,
    is_train_override,
    load_config,
    load_train_config,
)


def test_train_yaml_sets_every_section_and_equals_the_defaults() -> None:
    shipped = yaml.safe_load(TRAIN_CONFIG_FILE.read_text())
    assert tuple(shipped) == TRAIN_SECTIONS
    loaded = load_train_config(TRAIN_CONFIG_FILE, environ={})
    assert loaded == TrainConfig()
    assert dataclasses.asdict(loaded) == {section: {**dataclasses.asdict(getattr(TrainConfig(), section)), **values}
                                          for section, values in shipped.items()}


def test_env_and_overrides_in_priority_order_and_bad_keys_fail_clearly() -> None:
    env = {"SEMANTICA_TRAIN__LOCALIZER_TRAIN__SEED": "7", "SEMANTICA__FAISS__NPROBE": "3"}
    assert load_train_config(None, [], environ=env).localizer_train.seed == 7
    assert load_train_config(None, ["localizer_train.seed=9"], environ=env).localizer_train.seed == 9
    assert load_train_config(None, ["localizer_corpus.max_query_chars=99"], environ={}).localizer_corpus.max_query_chars == 99
    with pytest.raises(ConfigError, match="unknown key"):
        load_train_config(None, ["faiss.nprobe=4"], environ={})
    with pytest.raises(ConfigError, match="unknown key"):
        load_config(None, ["train_encoder.epochs=2"], environ={})  # a training setting is not the product's


def test_a_training_override_is_told_apart_by_its_section() -> None:
    assert is_train_override("pairs.corpus=[a/b]") and is_train_override(" train_encoder.epochs = 2")
    assert not is_train_override("localizer.top_files=3") and not is_train_override("paths.index_root=x")
