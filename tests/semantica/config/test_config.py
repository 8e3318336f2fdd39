import pytest

from semantica.config import DEFAULT_CONFIG_FILE, Config, ConfigError, config_from_dict, config_to_dict, load_config


def test_default_yaml_matches_the_rfc_values():
    config = load_config(DEFAULT_CONFIG_FILE, environ={})
    assert config.fusion.rrf_k == {"vector": 70.0, "lexical": 70.0, "symbol": 50.0, "graph": 50.0, "exact": 20.0}
    assert config.fusion.profiles["concept"]["vector"] == 0.7
    assert config.fusion.cutoffs["flow"] == 15
    assert config.graph.edge_costs["IMPORTS"] == 2.0
    assert config.cross_encoder.enabled is False
    assert config == Config()


def test_env_and_cli_overrides_in_priority_order(tmp_path):
    conf = tmp_path / "c.yaml"
    conf.write_text("faiss:\n  nprobe: 8\n")
    env = {"SEMANTICA__FAISS__NPROBE": "16", "SEMANTICA__CROSS_ENCODER__ENABLED": "true"}
    assert load_config(conf, environ={}).faiss.nprobe == 8
    assert load_config(conf, environ=env).faiss.nprobe == 16
    config = load_config(conf, ["faiss.nprobe=4", "fusion.rrf_k.vector=60"], environ=env)
    assert config.faiss.nprobe == 4
    assert config.fusion.rrf_k["vector"] == 60.0 and config.fusion.rrf_k["lexical"] == 70.0
    assert config.cross_encoder.enabled is True


@pytest.mark.parametrize(
    "override, message",
    [("faiss.nope=1", "unknown key"), ("faiss.nprobe=abc", "expected int"), ("nprobe", "section.field=value"),
     ("cross_encoder.enabled=maybe", "true/false")],
)
def test_bad_values_give_clear_errors(override, message):
    with pytest.raises(ConfigError, match=message):
        load_config(DEFAULT_CONFIG_FILE, [override], environ={})


def test_the_learned_function_ranker_is_no_setting():
    """The function ranker was measured and left off (lab/README.md): functions keep the fixed fusion."""
    with pytest.raises(ConfigError, match=r"localizer: unknown key\(s\) \['learned_functions'\]"):
        load_config(DEFAULT_CONFIG_FILE, ["localizer.learned_functions=true"], environ={})


def test_missing_file_is_an_error(tmp_path):
    with pytest.raises(ConfigError, match="does not exist"):
        load_config(tmp_path / "absent.yaml", environ={})


def test_round_trip_through_dict():
    config = load_config(DEFAULT_CONFIG_FILE, ["chunk.max_tokens=99"], environ={})
    assert config_from_dict(config_to_dict(config)) == config


def test_the_history_localizer_defaults_turn_back_with_set():
    """History indexing and the learned file ranker with history are on by default; `--set` restores the
    previous defaults (candidates-first, no history in the index) one key at a time."""
    new = load_config(None, [], environ={})
    history = new.history
    assert (history.index, history.max_commits) == (True, 3000)
    loc = new.localizer
    assert (loc.learned_files, loc.history_features, loc.model_dir) == (True, True, "models/localizer-history")
    old = load_config(None, ["history.index=false", "history.max_commits=20000",
                             "localizer.learned_files=false",
                             "localizer.history_features=false", "localizer.model_dir=models/localizer"], environ={})
    assert (old.history.index, old.history.max_commits) == (False, 20000)
    loc = old.localizer
    assert (loc.learned_files, loc.history_features, loc.model_dir) == (False, False, "models/localizer")


@pytest.mark.parametrize("key", ["history.functions=true", "history.max_blob_bytes=10", "localizer.history_functions=true"])
def test_function_level_history_is_no_setting(key):
    """History is read files-only (the learned file ranker's features): the function-level read and its blob limit
    are no settings of the product."""
    with pytest.raises(ConfigError, match="unknown key"):
        load_config(None, [key], environ={})


def test_the_fusion_fix_prior_is_no_setting():
    """The fix prior's decay served the history fusion, which left the product: `history.prior_half_life_days`
    is no setting (the localizer's history features count changes and fixes undecayed)."""
    with pytest.raises(ConfigError, match="unknown key"):
        load_config(None, ["history.prior_half_life_days=30"], environ={})


def test_an_empty_string_setting_stays_empty():
    """`--set localizer.dense_model=` (YAML null) turns the channel off; it must not name a model called 'None'."""
    assert load_config(None, ["localizer.dense_model="], environ={}).localizer.dense_model == ""


def test_a_missing_semantica_config_file_is_refused_like_config(tmp_path, monkeypatch):
    from semantica.config import ConfigError, load_config

    monkeypatch.setenv("SEMANTICA_CONFIG", str(tmp_path / "nonexistent.yaml"))
    with pytest.raises(ConfigError, match=r"nonexistent\.yaml \(from SEMANTICA_CONFIG\) does not exist"):
        load_config()


@pytest.mark.parametrize("override, message", [
    ("paths.index_root=[a, b]", "expected a string, got a list"),
    ("paths.index_root={a: b}", "expected a string, got a dict"),
    ("retrieval.timeout_s=nan", "expected a finite number"),
    ("retrieval.timeout_s=.inf", "expected a finite number"),
    ("retrieval.timeout_s=-inf", "expected a finite number"),
    ("lucene.threads=1.5", "expected int"),
    ("lucene.threads=true", "expected int"),
])
def test_overrides_of_the_wrong_shape_are_refused(override, message):
    from semantica.config import ConfigError, load_config

    with pytest.raises(ConfigError, match=message):
        load_config(overrides=[override])


def test_an_alias_bomb_and_an_endless_file_are_refused_by_size(tmp_path):
    import time

    from semantica.config import ConfigError, load_config

    bomb = "[" + ", ".join(f"&a{i} [" + ", ".join([f"*a{i - 1}" if i else "x"] * 9) + "]" for i in range(9)) + "]"
    started = time.monotonic()
    with pytest.raises(ConfigError, match="expands to over"):
        load_config(overrides=[f"discover.include_globs={bomb}"])
    with pytest.raises(ConfigError, match="is over"):
        load_config("/dev/zero")
    assert time.monotonic() - started < 30
    assert load_config(overrides=["lucene.threads=2.0"]).lucene.threads == 2
