"""The knowledge store (SQLite + FTS5) and the trust score, with an injected clock."""

from __future__ import annotations

import datetime as dt

import pytest

from serving.knowledge.entry import Status, Verification
from serving.knowledge.store import KnowledgeBase, KnowledgeInputError, UnknownEntryError
from serving.knowledge.trust import TRUST_WEIGHTS, TrustScorer
from tests.conftest import make_config

START = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)


class Clock:
    def __init__(self) -> None:
        self.now = START

    def __call__(self) -> dt.datetime:
        return self.now


@pytest.fixture
def base(tmp_path):
    clock = Clock()
    kb = KnowledgeBase(make_config(tmp_path), clock)
    yield kb, clock
    kb.close()


def test_add_edit_keeps_history_and_search_finds_the_current_text(base):
    kb, clock = base
    store = kb.store("team/shop")
    entry = store.add("Views never call checkout", "Views must not call checkout() directly.", kind="rule",
                      symbols=["checkout"])
    clock.now += dt.timedelta(days=1)
    edited = store.edit(entry.id, {"text": "Views call CartService.pay, never checkout()."}, actor="ann", why="renamed")
    assert edited.version == 2 and edited.updated != entry.updated
    [old] = store.history(entry.id)
    assert old["entry"]["text"] == "Views must not call checkout() directly." and old["actor"] == "ann"
    assert [e.id for e in store.search("where is CartService pay", 5)] == [entry.id]
    assert store.search("must directly", 5) == []  # the old text is no longer indexed
    assert (kb.directory / "team+shop.sqlite").exists() and not (kb.directory / "global.sqlite").exists()


def test_retired_entry_stays_readable_with_its_reason_and_is_not_searched(base):
    kb, _ = base
    store = kb.store()
    entry = store.add("Flag X is deprecated", "Use flag Y instead of flag X.")
    store.set_status(entry.id, Status.RETIRED, "cli", "flag X was removed")
    kept = store.get(entry.id)
    assert kept.status == "retired" and kept.retire_reason == "flag X was removed" and kept.text == entry.text
    assert store.search("flag deprecated", 5) == []
    assert kb.find(entry.id).repo == ""
    with pytest.raises(UnknownEntryError):
        kb.find("k-nope")


@pytest.mark.parametrize("fields, status", [
    ({"text": "x" * 9000}, 413),
    ({"text": "bin\x00ary"}, 422),
    ({"text": "  "}, 422),
    ({"kind": "opinion"}, 422),
    ({"paths": "src/"}, 422),
])
def test_bad_input_is_a_clear_error(base, fields, status):
    kb, _ = base
    values = {"title": "t", "text": "some text", **fields}
    with pytest.raises(KnowledgeInputError) as error:
        kb.store().add(**values)
    assert error.value.status == status
    assert kb.store().entries() == []


def test_trust_formula_and_decay_curve(base):
    kb, clock = base
    config = kb.config.knowledge
    scorer = TrustScorer(config)
    entry = kb.store().add("A rule", "Always do the thing.", kind="rule")
    w = TRUST_WEIGHTS
    fresh = w.source * config.source_reliability["person"] + w.verification * 0.5 + w.freshness * 1.0
    assert scorer.score(entry, START) == pytest.approx(fresh)
    curve = [scorer.score(entry, START + dt.timedelta(days=d * config.trust_half_life_days)) for d in range(4)]
    assert curve == sorted(curve, reverse=True)
    assert curve[0] - curve[1] == pytest.approx(w.freshness * 0.5)  # one half-life halves the freshness share
    entry.verification = Verification.FAILED.value
    assert scorer.score(entry, START) == pytest.approx((fresh - w.verification * 0.5) * w.failed_factor)
    entry.pinned = True
    assert scorer.score(entry, START) > config.threshold
    entry.votes = -50
    entry.pinned = False
    assert scorer.score(entry, START) < scorer.score(kb.store().get(entry.id), START)


def test_revision_moves_on_every_write(base):
    kb, _ = base
    store = kb.store("a/b")
    before = store.revision()
    entry = store.add("t", "text")
    store.update(entry.id, "x", "y", lambda e: setattr(e, "votes", 1.0))
    assert store.revision() == before + 2


def test_a_store_from_before_reviews_holds_its_agent_entries(base):
    """An older store file has no review columns: its agent entries read as pending, never as approved."""
    import sqlite3

    base, clock = base
    store = base.store("")
    agent = store.add("Agents say", "an agent wrote this", source_kind="agent")
    person = store.add("People say", "a person wrote this")
    base.close()
    with sqlite3.connect(store.path) as db:  # the file as an older version wrote it
        db.execute("ALTER TABLE entries DROP COLUMN review")
        db.execute("ALTER TABLE entries DROP COLUMN reviewed_by")
        db.execute("UPDATE entries SET status = 'active' WHERE id = ?", (agent.id,))
    reopened = KnowledgeBase(base.config, clock).store("")
    assert reopened.get(agent.id).needs_review and reopened.get(agent.id).review == "pending"
    assert not reopened.get(person.id).needs_review
    assert reopened.update(agent.id, "x", "touch", lambda e: None).status == Status.CANDIDATE.value
