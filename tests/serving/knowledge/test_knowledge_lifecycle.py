"""Knowledge on a real index (a tiny git repository indexed here): add -> verify -> inject -> feedback -> decay
-> re-verify fails after a rename -> retire; ADR candidates; a conflict waits for review and is not injected."""

from __future__ import annotations

import datetime as dt
import subprocess

import pytest

from serving.knowledge.after_index import after_index
from serving.knowledge.curator import Curator
from serving.knowledge.entry import Status, Verification
from serving.knowledge.service import KnowledgeService
from serving.pipeline import SearchPipeline
from tests.conftest import make_config

pytestmark = pytest.mark.timeout(600)
REPO = "tiny/ledger"
START = dt.datetime(2026, 3, 1, tzinfo=dt.UTC)
PRICES = ('PRICES = {"apple": 300, "pear": 400}\n\n\ndef price_of(name):\n'
          '    """Price of one item, in integer cents."""\n    return PRICES.get(name, 0)\n')
FILES = {
    "shop/prices.py": PRICES,
    "shop/cart.py": ("from shop.prices import price_of\n\n\nclass Cart:\n    def __init__(self):\n        self.items = []\n\n"
                     "    def total(self):\n        return sum(price_of(n) * q for n, q in self.items)\n"),
    "docs/adr/0001-money-in-cents.md": ("# Money is stored in integer cents\n\n## Context\n\nFloats lose cents.\n\n"
                                        "## Decision\n\nEvery price and total is an integer number of cents; "
                                        "shop/prices.py is the only place prices are defined.\n"),
    "README.md": "# Ledger\n\nA tiny shop ledger.\n",
}
RULE = {"title": "Prices are integer cents, never floats",
        "text": "price_of returns an integer number of cents; never convert prices to float dollars in the cart.",
        "kind": "rule", "paths": ["shop/prices.py"], "symbols": ["price_of"], "evidence": ["tests/test_prices.py"]}
QUESTION = "how does price_of compute the price of cart items in cents"


class Clock:
    def __init__(self) -> None:
        self.now = START

    def __call__(self) -> dt.datetime:
        return self.now


def _git(repo, *args):
    subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True)


def _commit(repo, message):
    _git(repo, "add", "-A")
    _git(repo, "-c", "user.email=t@e", "-c", "user.name=t", "commit", "-qm", message)


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    from pipelines.indexer import Indexer

    root = tmp_path_factory.mktemp("knowledge")
    repo = root / "repo"
    for name, text in FILES.items():
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(text)
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    _commit(repo, "init")
    config = make_config(root, "planning.enabled=false")
    Indexer(config, progress=False).index(str(repo), REPO)
    clock = Clock()
    service = KnowledgeService(config, clock)
    return config, repo, clock, service


def _pipeline(config, service, *overrides):
    from dataclasses import replace

    pipeline = SearchPipeline(config)
    pipeline.knowledge._service = service
    for override in overrides:
        section, value = override
        pipeline.knowledge.settings = replace(pipeline.knowledge.settings, **{section: value})
    return pipeline


def _context(pipeline, query=QUESTION):
    from semantica.api import SearchRequest

    return pipeline.search(SearchRequest(query=query, repos=[REPO], k=5)).context


def test_lifecycle_on_a_real_index(world):
    from pipelines.indexer import Indexer

    config, repo, clock, service = world
    # index time: the ADR becomes a candidate, verified against the snapshot and promoted
    done = after_index(config, REPO, service)
    [adr_id] = done["candidates"]
    adr = service.base.find(adr_id).get(adr_id)
    assert adr.status == Status.ACTIVE.value and adr.source_kind == "adr" and adr.kind == "decision"
    assert adr.text.startswith("Every price and total is an integer number of cents")
    assert any(c["change"] == "promoted" and c["id"] == adr_id for c in done["changes"])
    assert after_index(config, REPO, service)["candidates"] == []  # unchanged file: nothing new

    # add -> verify
    added = service.add(REPO, RULE, actor="ann")
    rule = added.entry
    assert added.warnings == [] and rule.verification == Verification.GREEN.value
    assert rule.trust >= config.knowledge.threshold
    bad = service.add(REPO, {**RULE, "title": "Refunds", "text": "refund_order reverses a payment in cents.",
                             "symbols": ["refund_order"], "paths": []})
    assert bad.entry.verification == Verification.FAILED.value
    assert bad.warnings and "refund_order" in bad.warnings[0]  # a warning, not a crash

    # inject: first in the context, with trust, source and verification; the boosted hit; the ADR doc deduplicated
    pipeline = _pipeline(config, service)
    context = _context(pipeline)
    used = [k["id"] for k in context["knowledge"]]
    assert used[0] == rule.id and adr_id in used
    assert context["text"].startswith(f"# knowledge:{rule.id} [rule] trust=")
    assert "source=person" in context["text"] and "(green)" in context["text"]
    assert not any(b["path"] == "docs/adr/0001-money-in-cents.md" for b in context["blocks"])
    assert context["tokens_used"] <= context["budget"]
    pipeline.knowledge.flush()
    from semantica.api import SearchRequest

    explained = pipeline.search(SearchRequest(query=QUESTION + " explained", repos=[REPO], k=5, explain=True)).hits
    boosted = [h for h in explained if "knowledge boost" in (h.explanation or "")]
    paths = {h.path for h in boosted}  # the files and symbols the entries name, nothing else
    assert "shop/prices.py" in paths and paths <= {"shop/prices.py", "docs/adr/0001-money-in-cents.md"}
    pipeline.knowledge.flush()
    off = _context(_pipeline(config, service, ("enabled", False)))
    assert off["knowledge"] == [] and not off["text"].startswith("# knowledge:")
    assert service.base.find(rule.id).get(rule.id).uses == 2

    # feedback moves trust, both ways
    before = service.base.find(rule.id).get(rule.id).trust
    assert pipeline.knowledge.feedback([rule.id, "k-unknown"], 1.0, [REPO]) == [rule.id]
    up = service.base.find(rule.id).get(rule.id).trust
    pipeline.knowledge.feedback([rule.id], -1.0, [REPO])
    pipeline.knowledge.feedback([rule.id], -1.0, [REPO])
    down = service.base.find(rule.id).get(rule.id).trust
    assert up > before > down

    # decay: unused for two half-lives, the curator lowers trust and says why
    clock.now += dt.timedelta(days=2 * config.knowledge.trust_half_life_days)
    report = Curator(service).run([REPO])
    decayed = service.base.find(rule.id).get(rule.id)
    assert decayed.trust < down and decayed.status == Status.ACTIVE.value
    assert report.repos[REPO]["verified"] >= 2

    # rename the symbol, re-index, curate: the rule fails verification and is demoted, so it is not injected
    (repo / "shop/prices.py").write_text(PRICES.replace("price_of", "cost_of"))
    (repo / "shop/cart.py").write_text(FILES["shop/cart.py"].replace("price_of", "cost_of"))
    _commit(repo, "rename price_of -> cost_of")
    Indexer(config, progress=False).index(str(repo), REPO)
    report = Curator(service).run([REPO])
    demoted = [c for c in report.changes if c.id == rule.id and c.change == "demoted"]
    assert demoted and "price_of" in demoted[0].why and demoted[0].trust_after < demoted[0].trust_before
    assert rule.id not in [k["id"] for k in _context(_pipeline(config, service))["knowledge"]]

    # below the floor for longer than the grace period: retired, still readable with its reason
    clock.now += dt.timedelta(days=config.knowledge.grace_days + 1)
    report = Curator(service).run([REPO])
    retired = service.base.find(rule.id).get(rule.id)
    assert retired.status == Status.RETIRED.value, report.to_dict()
    assert "below floor" in retired.retire_reason and "price_of" in retired.retire_reason
    assert service.show(rule.id)["history"]  # every status change kept


def test_a_conflict_goes_to_review_and_is_not_injected(world):
    config, _, _, service = world
    keep = service.add(REPO, {"title": "Cart totals are cached", "text": "Cart.total results are cached per cart.",
                              "kind": "fact", "symbols": ["Cart.total"]}).entry
    clash = service.add(REPO, {"title": "Cart totals are never cached",
                               "text": "Cart.total results are never cached per cart.", "kind": "fact",
                               "symbols": ["Cart.total"]})
    assert clash.conflicts == [keep.id]
    queue = {e.id for e in service.review_queue([REPO])}
    assert {keep.id, clash.entry.id} <= queue
    used = [k["id"] for k in _context(_pipeline(config, service), "are Cart total results cached per cart")["knowledge"]]
    assert keep.id not in used and clash.entry.id not in used
    kept = service.resolve(keep.id, keep=True, reason="the cache exists", repos=[REPO])
    assert kept.status == Status.ACTIVE.value
    lost = service.base.find(clash.entry.id).get(clash.entry.id)
    assert lost.status == Status.RETIRED.value and keep.id in lost.retire_reason


def test_an_unreadable_store_degrades_the_answer(world, tmp_path):
    from dataclasses import replace

    from semantica.api import SearchRequest

    config, _, _, _ = world
    broken = tmp_path / "knowledge"
    broken.mkdir()
    (broken / "tiny+ledger.sqlite").write_bytes(b"this is not a database" * 100)
    pipeline = SearchPipeline(replace(config, knowledge=replace(config.knowledge, directory=str(broken))))
    response = pipeline.search(SearchRequest(query=QUESTION, repos=[REPO], k=5))
    assert response.hits and response.context["knowledge"] == []
    assert [d["stage"] for d in response.degraded] == ["knowledge"]
