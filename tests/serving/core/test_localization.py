"""The localization tail the pipeline and the replay share: its three steps and their switches."""

from __future__ import annotations

import dataclasses

import pytest

from jobs.eval.replay import ChunkRef
from semantica.config import ConfigError, load_config
from serving.core.localization import LocalizationInputs
from serving.stages import build_stages

R = "acme/shop"
CHUNKS = {
    "c1": ChunkRef(R, "shop/shipping.py", "courier_for", "function"),
    "c2": ChunkRef(R, "shop/billing.py", "invoice_total", "function"),
    "c3": ChunkRef(R, "shop/shipping.py", "parcel_weight", "function"),
}
LISTS = {"vector": [("c1", 1), ("c2", 2), ("c3", 3)], "lexical": [("c3", 1), ("c1", 2)]}


def tail_and_inputs(*overrides: str):
    """The tail with the learned step off unless an override turns it on (it is on by default)."""
    config = load_config(None, ["localizer.enabled=false", *overrides], environ={})
    stages = build_stages(config)
    intent = stages.intent.classify("which courier ships a heavy parcel")
    return stages.localization, LocalizationInputs(LISTS, CHUNKS, intent, depth=10)


def paths(ranked):
    return [item["path"] for item in ranked]


def test_fixed_fusion_and_no_learned_step_when_off():
    tail, inputs = tail_and_inputs()
    files, functions = tail.run(inputs, lambda *_: pytest.fail("localizer.enabled is off"))
    assert paths(files) == ["shop/shipping.py", "shop/billing.py"]  # shipping holds two of the three hits
    assert {f["function"] for f in functions} == {"shop/shipping.py::courier_for", "shop/shipping.py::parcel_weight",
                                                  "shop/billing.py::invoice_total"}


def test_voters_are_attached_to_the_files_they_voted_for():
    tail, inputs = tail_and_inputs()
    voter = type("Voter", (), {"to_dict": lambda self: {"sha": "abc"}})()
    inputs = dataclasses.replace(inputs, voters={f"{R}\x00shop/billing.py": [voter]})
    files, _ = tail.run(inputs, lambda *_: pytest.fail("off"))
    assert [f.get("history") for f in files] == [None, [{"sha": "abc"}]]


def test_learned_blend_replaces_the_lists_and_a_failure_raises_or_degrades():
    tail, inputs = tail_and_inputs("localizer.enabled=true")
    learned = ([{"repo": R, "path": "shop/billing.py"}], [{"repo": R, "function": "shop/billing.py::invoice_total"}])
    assert tail.run(inputs, lambda files, functions: learned) == learned

    def broken(files, functions):
        raise RuntimeError("no model")

    with pytest.raises(RuntimeError, match="no model"):
        tail.run(inputs, broken)
    errors = []
    files, _ = tail.run(inputs, broken, on_learned_error=errors.append)
    assert paths(files) == ["shop/shipping.py", "shop/billing.py"] and [str(e) for e in errors] == ["no model"]


def test_an_unknown_voter_is_a_config_error_naming_the_registered_retrievers():
    with pytest.raises(ConfigError, match=r"query\.localize_strategies: unknown strategy 'lexicl'.*lexical"):
        tail_and_inputs("query.localize_strategies=[vector,lexicl]")
    tail, inputs = tail_and_inputs("query.localize_strategies=[VECTOR]")  # names fold case like the registry
    assert tail.localizer.voters == {"vector"}
