"""Feedback-learned strategy weights: EMA direction and bounds, the minimum count, the A/B gate, reset."""

from __future__ import annotations

import dataclasses
import json

from jobs.cli import main
from semantica.api import SearchRequest
from semantica.config import Config, FeedbackWeightsConfig, FusionConfig
from serving.api.http.feedback import FeedbackLog
from serving.core.intent import Intent
from serving.pipeline import SearchPipeline
from serving.planning.feedback_weights import (
    VERDICT_DEFAULT,
    VERDICT_LEARNED,
    AbGate,
    FeedbackSample,
    LearnedWeights,
    ReplayedSample,
    WeightLearner,
    WeightsStore,
    read_feedback,
)

CONCEPT_QUERY = "how are the amounts a customer paid kept and summed"  # classified concept: vector-heavy profile


def _lexical_wins(n: int) -> list[ReplayedSample]:
    """Queries where the user picked the chunk lexical ranked first; vector ranked two other chunks above it."""
    samples = []
    for i in range(n):
        lists = {"lexical": [(f"good{i}", 1), (f"bad{i}", 2)],
                 "vector": [(f"bad{i}", 1), (f"other{i}", 2), (f"good{i}", 30)]}
        samples.append(ReplayedSample(FeedbackSample(f"r{i}", CONCEPT_QUERY, "acme/shop", [f"good{i}"]),
                                      Intent.CONCEPT, lists))
    return samples


def test_feedback_moves_weights_toward_the_strategy_that_found_the_hit_within_bounds():
    config = FeedbackWeightsConfig(min_count=5)  # multipliers within [0.5, 2.0]
    learner = WeightLearner(config, FusionConfig())
    state = learner.learn(_lexical_wins(3), LearnedWeights("acme/shop"))
    mult = learner.multipliers(state, "concept")
    assert mult["lexical"] > 1.0 > mult["vector"] and mult["symbol"] < 1.0
    assert learner.profiles(state) == FusionConfig().profiles  # 3 < min_count: the defaults, untouched
    assert learner.multipliers(state, "symbol") == {s: 1.0 for s in FusionConfig().profiles["symbol"]}

    state = learner.learn(_lexical_wins(500), state)
    mult = learner.multipliers(state, "concept")
    # lexical's share tends to 0.585 (2.9x its 0.2), symbol's and graph's to 0 (0x): clipped, never past
    assert mult["lexical"] == 2.0 and mult["symbol"] == mult["graph"] == 0.5
    assert 0.5 < mult["vector"] < 0.6  # 0.415 / 0.7: inside the bounds, left as learned
    profile, default = learner.profiles(state)["concept"], FusionConfig().profiles["concept"]
    confidence = learner.confidence(503)
    assert 0.95 < confidence < 1.0
    assert abs(profile["lexical"] - default["lexical"] * (1 + confidence)) < 1e-9
    assert default["lexical"] < profile["lexical"] <= 2.0 * default["lexical"]
    assert 0.5 * default["vector"] <= profile["vector"] < default["vector"]
    assert learner.profiles(state)["code"] == default_profile("code")  # other intents keep the defaults


def default_profile(intent: str) -> dict[str, float]:
    return dict(FusionConfig().profiles[intent])


def test_the_ab_gate_adopts_weights_that_win_on_held_back_feedback_only():
    config = dataclasses.replace(Config(), feedback_weights=FeedbackWeightsConfig(min_count=5, min_holdout=5))
    won = AbGate(config).run("acme/shop", _lexical_wins(40))
    assert won.ab["verdict"] == VERDICT_LEARNED and won.ab["holdout"] == 12 and won.ab["train"] == 28
    # default: the pick third (vector's two first); learned (lexical up, with confidence 28/48): second
    assert won.ab["mrr_default"] == 0.3333 and won.ab["mrr_learned"] == 0.5
    assert won.ab["wins"] == 12 and won.ab["losses"] == 0

    vector_wins = [ReplayedSample(dataclasses.replace(s.sample, chunk_ids=[f"bad{i}"]), s.intent, s.lists)
                   for i, s in enumerate(_lexical_wins(40))]  # the pick both fusions already rank first
    tied = AbGate(config).run("acme/shop", vector_wins)
    assert tied.ab["verdict"] == VERDICT_DEFAULT and tied.ab["mrr_learned"] == tied.ab["mrr_default"] == 1.0

    few = AbGate(config).run("acme/shop", _lexical_wins(10))
    assert few.ab["verdict"] == VERDICT_DEFAULT and "min_holdout" in few.ab["why"]


def test_learn_show_use_and_reset_on_a_real_index(planning_repo, tmp_path, capsys):
    base = planning_repo.config
    feedback_dir = tmp_path / "feedback"
    overrides = ["feedback_weights.min_count=3", "feedback_weights.min_holdout=1", "feedback_weights.min_gain=-1.0",
                 f"serve.feedback_dir={feedback_dir}"]
    config = dataclasses.replace(base, serve=dataclasses.replace(base.serve, feedback_dir=str(feedback_dir)),
                                 feedback_weights=FeedbackWeightsConfig(min_count=3, min_holdout=1, min_gain=-1.0))
    pipeline = SearchPipeline(config)
    log = FeedbackLog(str(feedback_dir))
    queries = ["record a payment in the ledger", "total of the amounts", "charge the cart", "checkout request",
               "refund the cart", "lowercase dashes for urls", "ledger amounts", "handle the posted cart"]
    for query in queries:
        top = pipeline.search(SearchRequest(query=query, repos=[planning_repo.name], k=3)).hits[0]
        log.append({"query": query, "chunk_ids": [top.chunk_id], "repos": [planning_repo.name], "hits": []})
    log.append({"query": "ignored", "chunk_ids": ["nope"], "repos": ["acme/other"], "hits": []})
    log.append({"query": "disliked", "chunk_ids": [top.chunk_id], "repos": [planning_repo.name], "rating": -1})
    assert len(read_feedback(feedback_dir, planning_repo.name)) == len(queries)

    common = ["--index-root", base.paths.index_root, "--set", f"paths.cache_dir={base.paths.cache_dir}",
              *[x for o in overrides for x in ("--set", o)]]
    assert main(["weights", "--repo", planning_repo.name, "--learn", "--json", *common]) == 0
    learned = json.loads(capsys.readouterr().out)[0]
    assert learned["using"] == "learned" and learned["ab"]["verdict"] == VERDICT_LEARNED  # min_gain -1: adopted
    assert learned["ab"]["train"] + learned["ab"]["holdout"] == len(queries)
    assert sum(row["count"] for row in learned["intents"].values()) > 0
    store = WeightsStore(config)
    assert store.path(planning_repo.name).is_file()
    assert SearchPipeline(config).ranking_hooks.learned.for_repos([planning_repo.name]) is not None

    assert main(["weights", "--repo", planning_repo.name, *common]) == 0
    assert "using learned; A/B learned" in capsys.readouterr().out
    assert main(["weights", "--reset", "--repo", planning_repo.name, *common]) == 0
    assert "learned weights removed" in capsys.readouterr().out
    assert not store.path(planning_repo.name).exists()
    assert SearchPipeline(config).ranking_hooks.learned.for_repos([planning_repo.name]) is None
    assert store.describe(planning_repo.name)["using"] == "defaults"


def test_a_default_verdict_keeps_the_search_on_the_conf_profiles(planning_repo, tmp_path):
    config = dataclasses.replace(planning_repo.config, paths=dataclasses.replace(
        planning_repo.config.paths, index_root=planning_repo.config.paths.index_root))
    store = WeightsStore(config)
    state = AbGate(dataclasses.replace(config, feedback_weights=FeedbackWeightsConfig(min_count=5, min_holdout=50))
                   ).run(planning_repo.name, _lexical_wins(40))
    assert state.ab["verdict"] == VERDICT_DEFAULT
    store.write(state)
    try:
        pipeline = SearchPipeline(config)
        assert pipeline.ranking_hooks.learned.for_repos([planning_repo.name]) is None
        request = dict(query=CONCEPT_QUERY, repos=[planning_repo.name], explain=True)
        before = pipeline.search(SearchRequest(**request))
        assert pipeline.search(SearchRequest(**request)).cached
        state.ab["verdict"] = VERDICT_LEARNED
        store.write(state)
        after = pipeline.search(SearchRequest(**request))  # new weights: not the cached answer
        assert not after.cached and after.hits[0].features[9] > before.hits[0].features[9]
        assert pipeline.ranking_hooks.learned.for_repos([planning_repo.name]) is not None
        assert pipeline.ranking_hooks.learned.for_repos([planning_repo.name, "acme/other"]) is None  # one repo only
        hit = pipeline.search(SearchRequest(query=CONCEPT_QUERY, repos=[planning_repo.name], explain=True)).hits[0]
        default = SearchPipeline(dataclasses.replace(config, feedback_weights=FeedbackWeightsConfig(enabled=False)))
        plain = default.search(SearchRequest(query=CONCEPT_QUERY, repos=[planning_repo.name], explain=True)).hits[0]
        lexical_weight = hit.features[9]  # weight_lexical (semantica.hits.FEATURE_NAMES)
        assert lexical_weight > plain.features[9]
    finally:
        store.reset(planning_repo.name)
