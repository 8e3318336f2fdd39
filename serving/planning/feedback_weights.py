"""Strategy weights learned from `/v1/feedback`, per repository and intent, behind an offline A/B gate.

Learning (`semantica weights --learn`): each feedback record names the hits a user found useful. The query is
replayed (retrieval only) to get every strategy's ranked list; a selected chunk credits each strategy that
found it with 1 / (rrf_k_s + rank_s), and the credits, as shares, pull an exponential moving average of the
query's intent's strategy shares (`EMA_RATE`). The learned multiplier of a strategy is that share over the
conf profile's share, clipped to [MIN_MULTIPLIER, MAX_MULTIPLIER]; it is blended in with confidence
n / (n + CONFIDENCE_K) and not at all below `min_count` records of that intent.

A/B gate: records are split (seeded, `HOLDOUT_FRACTION` held back); the weights are learned on one part, then the other
part is fused with the conf profiles and with the learned ones, and the reciprocal rank of the first selected
chunk compared. Only a verdict of `learned` (mean RR better by more than `min_gain`, over >= `min_holdout`
records) lets the search use them. Everything, verdict included, is in `<index_root>/<repo>/feedback-weights.json`.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import random
import threading
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from semantica.api import SearchRequest
from semantica.config import Config, FeedbackWeightsConfig, FusionConfig
from semantica.feature_schema import FEATURE_STRATEGIES
from semantica.hits import RankedList
from semantica.layout import IndexLayout
from semantica.ondisk.repo_names import normalize_repo_name
from serving.core.fusion import WeightedRRF
from serving.core.intent import INTENTS, Intent, IntentClassifier

if TYPE_CHECKING:
    from serving.stages import Stages

VERDICT_LEARNED = "learned"
VERDICT_DEFAULT = "default"
VERDICT_NONE = "untested"

# the learner's constants (formula parameters, not per-deployment settings; `feedback_weights` keeps the switch and gates)
EMA_RATE = 0.1  # each feedback record moves its intent's strategy shares this far toward its credits
MIN_MULTIPLIER = 0.5  # a learned multiplier on the conf profile is clipped to [MIN_MULTIPLIER, MAX_MULTIPLIER]
MAX_MULTIPLIER = 2.0
CONFIDENCE_K = 20.0  # the learned multiplier is blended in with confidence n / (n + CONFIDENCE_K)
HOLDOUT_FRACTION = 0.3  # the A/B gate holds back this share of the records


@dataclass
class FeedbackSample:
    """One feedback record about one repository: the query and the chunks the user selected."""

    record_id: str
    query: str
    repo: str
    chunk_ids: list[str]
    ts: str = ""


@dataclass
class ReplayedSample:
    """A sample with its replayed retriever lists (what fusion would see for that query now)."""

    sample: FeedbackSample
    intent: Intent
    lists: dict[str, RankedList]


def read_feedback(directory: str | Path, repo: str) -> list[FeedbackSample]:
    """The positive feedback records about `repo` (a record naming several repositories counts per chunk's
    repository when its hits say which; a rating <= 0 is not a vote for the hit), oldest first."""
    samples: list[FeedbackSample] = []
    for file in sorted(Path(directory).glob("feedback-*.jsonl")):
        for line in file.read_text(encoding="utf-8").splitlines():
            try:
                record = json.loads(line)
            except json.JSONDecodeError:
                continue  # a torn last line of a crashed writer; the rest is intact
            if not isinstance(record, dict) or not isinstance(record.get("query"), str):
                continue
            rating = record.get("rating")
            if isinstance(rating, int | float) and rating <= 0:
                continue
            chunks = [c for c in record.get("chunk_ids") or [] if isinstance(c, str)]
            repos = [str(r) for r in record.get("repos") or []]
            for hit in record.get("hits") or []:
                if isinstance(hit, dict) and isinstance(hit.get("chunk_id"), str):
                    if hit.get("repo") in (None, repo) or not repos:
                        chunks.append(hit["chunk_id"])
            if repos and repo not in repos and not any(isinstance(h, dict) and h.get("repo") == repo
                                                       for h in record.get("hits") or []):
                continue
            if chunks:
                samples.append(FeedbackSample(str(record.get("id", "")), record["query"], repo,
                                              list(dict.fromkeys(chunks)), str(record.get("ts", ""))))
    return sorted(samples, key=lambda s: (s.ts, s.record_id))


@dataclass
class IntentState:
    """The EMA of one intent's strategy shares and how many records moved it."""

    shares: dict[str, float]
    count: int = 0


@dataclass
class LearnedWeights:
    """The persisted state of one repository (`feedback-weights.json`)."""

    repo: str
    intents: dict[str, IntentState] = field(default_factory=dict)
    ab: dict[str, Any] = field(default_factory=lambda: {"verdict": VERDICT_NONE})
    updated: str = ""

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @staticmethod
    def from_dict(values: dict[str, Any]) -> LearnedWeights:
        intents = {k: IntentState(**v) for k, v in (values.get("intents") or {}).items()}
        return LearnedWeights(values["repo"], intents, values.get("ab") or {"verdict": VERDICT_NONE},
                              values.get("updated", ""))


class WeightLearner:
    """The EMA update and the bounded, confidence-blended profiles it implies."""

    def __init__(self, config: FeedbackWeightsConfig, fusion: FusionConfig) -> None:
        self.config = config
        self.fusion = fusion

    def default_shares(self, intent: str) -> dict[str, float]:
        profile = self.fusion.profiles[intent]
        total = sum(profile.values()) or 1.0
        return {s: w / total for s, w in profile.items()}

    def credit(self, lists: dict[str, RankedList], selected: Iterable[str]) -> dict[str, float] | None:
        """Each weighted strategy's share of the selected chunks' unweighted RRF credit (the feature schema's
        strategies: the ones with a profile weight to learn); None when none found them."""
        wanted = set(selected)
        credit = dict.fromkeys(FEATURE_STRATEGIES, 0.0)
        for strategy, ranked in lists.items():
            if strategy not in credit:
                continue
            for chunk_id, rank in ranked:
                if chunk_id in wanted:
                    credit[strategy] += 1.0 / (self.fusion.rrf_k[strategy] + rank)
        total = sum(credit.values())
        return {s: c / total for s, c in credit.items()} if total > 0 else None

    def update(self, state: LearnedWeights, intent: Intent, shares: dict[str, float]) -> None:
        current = state.intents.setdefault(intent.value, IntentState(self.default_shares(intent.value)))
        rate = EMA_RATE
        current.shares = {s: (1 - rate) * current.shares.get(s, 0.0) + rate * shares.get(s, 0.0)
                          for s in current.shares}
        current.count += 1

    def confidence(self, count: int) -> float:
        if count < self.config.min_count:
            return 0.0
        return count / (count + CONFIDENCE_K)

    def multipliers(self, state: LearnedWeights, intent: str) -> dict[str, float]:
        """Learned share / default share per strategy, within [MIN_MULTIPLIER, MAX_MULTIPLIER]."""
        learned = state.intents.get(intent)
        defaults = self.default_shares(intent)
        if learned is None:
            return {s: 1.0 for s in defaults}
        return {s: min(MAX_MULTIPLIER, max(MIN_MULTIPLIER, learned.shares.get(s, 0.0) / d if d > 0 else 1.0))
                for s, d in defaults.items()}

    def profiles(self, state: LearnedWeights) -> dict[str, dict[str, float]]:
        """The fusion profiles to search with: conf x (1 + confidence x (multiplier - 1))."""
        out: dict[str, dict[str, float]] = {}
        for intent, profile in self.fusion.profiles.items():
            state_of = state.intents.get(intent)
            confidence = self.confidence(state_of.count) if state_of else 0.0
            mult = self.multipliers(state, intent)
            out[intent] = {s: w * (1 + confidence * (mult.get(s, 1.0) - 1)) for s, w in profile.items()}
        return out

    def learn(self, samples: list[ReplayedSample], state: LearnedWeights | None = None) -> LearnedWeights:
        state = state or LearnedWeights(samples[0].sample.repo if samples else "")
        for replayed in samples:
            shares = self.credit(replayed.lists, replayed.sample.chunk_ids)
            if shares is not None:
                self.update(state, replayed.intent, shares)
        return state


def with_profiles(fusion: FusionConfig, profiles: dict[str, dict[str, float]]) -> WeightedRRF:
    """The configured fusion with learned per-intent profiles in place of the conf ones."""
    return WeightedRRF(dataclasses.replace(fusion, profiles=profiles))


def reciprocal_rank(fusion: WeightedRRF, replayed: ReplayedSample, classifier: IntentClassifier) -> float:
    hits = fusion.fuse(replayed.lists, classifier.classify(replayed.sample.query))
    wanted = set(replayed.sample.chunk_ids)
    return next((1.0 / rank for rank, hit in enumerate(hits, 1) if hit.chunk_id in wanted), 0.0)


class AbGate:
    """Learn on one part of the feedback, compare default vs learned fusion on the held-back part."""

    def __init__(self, config: Config, stages: Stages | None = None) -> None:
        from serving.stages import build_stages  # serving.stages builds the planner: imported when used

        self.config = config
        self.learner = WeightLearner(config.feedback_weights, config.fusion)
        self.stages = stages or build_stages(config)  # the default fusion and the classifier a query gets

    def split(self, samples: list[ReplayedSample]) -> tuple[list[ReplayedSample], list[ReplayedSample]]:
        c = self.config.feedback_weights
        order = list(range(len(samples)))
        random.Random(c.seed).shuffle(order)
        n_hold = int(round(len(samples) * HOLDOUT_FRACTION))
        held = set(order[:n_hold])
        return ([s for i, s in enumerate(samples) if i not in held], [s for i, s in enumerate(samples) if i in held])

    def run(self, repo: str, samples: list[ReplayedSample], skipped: int = 0) -> LearnedWeights:
        c = self.config.feedback_weights
        train, held = self.split(samples)
        state = self.learner.learn(train, LearnedWeights(repo))
        default = self.stages.fusion
        learned = with_profiles(self.config.fusion, self.learner.profiles(state))
        rr_default = [reciprocal_rank(default, s, self.stages.intent) for s in held]
        rr_learned = [reciprocal_rank(learned, s, self.stages.intent) for s in held]
        mean_default = sum(rr_default) / len(held) if held else 0.0
        mean_learned = sum(rr_learned) / len(held) if held else 0.0
        if len(held) < c.min_holdout:
            verdict, why = VERDICT_DEFAULT, f"only {len(held)} held-back records (min_holdout {c.min_holdout})"
        elif mean_learned - mean_default > c.min_gain:
            verdict, why = VERDICT_LEARNED, "learned weights rank the selected hits higher on held-back feedback"
        else:
            verdict, why = VERDICT_DEFAULT, "learned weights do not beat the defaults on held-back feedback"
        state.ab = {"verdict": verdict, "why": why, "train": len(train), "holdout": len(held), "skipped": skipped,
                    "mrr_default": round(mean_default, 4), "mrr_learned": round(mean_learned, 4),
                    "wins": sum(a > b for a, b in zip(rr_learned, rr_default)),
                    "losses": sum(a < b for a, b in zip(rr_learned, rr_default)),
                    "tested": dt.datetime.now(dt.UTC).isoformat(timespec="seconds")}
        state.updated = state.ab["tested"]
        return state


class WeightsStore:
    """`feedback-weights.json` beside each repository's snapshots: read (cached by mtime), write, reset."""

    def __init__(self, config: Config) -> None:
        self.config = config
        self.layout = IndexLayout(config.paths.index_root)
        self.learner = WeightLearner(config.feedback_weights, config.fusion)
        self._cache: dict[str, tuple[float, LearnedWeights]] = {}
        self._lock = threading.Lock()

    def path(self, repo: str) -> Path:
        return self.layout.repo_dir(normalize_repo_name(repo)) / self.config.feedback_weights.weights_file

    def read(self, repo: str) -> LearnedWeights | None:
        file = self.path(repo)
        try:
            mtime = file.stat().st_mtime
        except FileNotFoundError:
            return None
        with self._lock:
            cached = self._cache.get(repo)
            if cached and cached[0] == mtime:
                return cached[1]
        state = LearnedWeights.from_dict(json.loads(file.read_text()))
        with self._lock:
            self._cache[repo] = (mtime, state)
        return state

    def write(self, state: LearnedWeights) -> Path:
        file = self.path(state.repo)
        file.parent.mkdir(parents=True, exist_ok=True)
        tmp = file.with_suffix(".tmp")
        tmp.write_text(json.dumps(state.to_dict(), indent=1))
        tmp.replace(file)
        return file

    def reset(self, repo: str) -> bool:
        try:
            self.path(repo).unlink()
            return True
        except FileNotFoundError:
            return False

    def profiles_for(self, repo: str) -> dict[str, dict[str, float]] | None:
        """The learned profiles when learning is on and the A/B verdict says they win; else None (defaults)."""
        if not self.config.feedback_weights.enabled:
            return None
        state = self.read(repo)
        if state is None or state.ab.get("verdict") != VERDICT_LEARNED:
            return None
        return self.learner.profiles(state)

    def describe(self, repo: str) -> dict[str, Any]:
        """What `semantica weights` prints: per intent the count, confidence, multipliers and profile in use."""
        state = self.read(repo) or LearnedWeights(repo)
        in_use = self.profiles_for(repo)
        intents = {}
        for intent in (i.value for i in INTENTS):
            learned = state.intents.get(intent)
            count = learned.count if learned else 0
            intents[intent] = {"count": count, "confidence": round(self.learner.confidence(count), 4),
                               "multipliers": {s: round(m, 4) for s, m in self.learner.multipliers(state, intent).items()},
                               "profile_in_use": {s: round(w, 4) for s, w in
                                                  (in_use or self.config.fusion.profiles)[intent].items()}}
        return {"repo": repo, "file": str(self.path(repo)), "using": "learned" if in_use else "defaults",
                "ab": state.ab, "updated": state.updated, "intents": intents}


class LearnedFusion:
    """The query-time hook: a `WeightedRRF` with a repository's learned profiles, or None for the defaults."""

    def __init__(self, config: Config) -> None:
        self.config = config
        self.store = WeightsStore(config)
        self._fusions: dict[str, tuple[int, WeightedRRF]] = {}

    def tag(self, repos: list[str]) -> tuple[str, ...]:
        """The weights file's modification time for a one-repository query (a stat; () when there is none)."""
        if len(repos) != 1 or not self.config.feedback_weights.enabled:
            return ()
        try:
            return (f"weights@{self.store.path(repos[0]).stat().st_mtime_ns}",)
        except (FileNotFoundError, ValueError):
            return ()

    def for_repos(self, repos: list[str]) -> WeightedRRF | None:
        if len(repos) != 1 or not self.config.feedback_weights.enabled:  # per repository: one-repo queries only
            return None
        profiles = self.store.profiles_for(repos[0])
        if profiles is None:
            return None
        key = hash(json.dumps(profiles, sort_keys=True))
        cached = self._fusions.get(repos[0])
        if cached is None or cached[0] != key:
            cached = self._fusions[repos[0]] = (key, with_profiles(self.config.fusion, profiles))
        return cached[1]


def replay_samples(pipeline: Any, samples: list[FeedbackSample]) -> tuple[list[ReplayedSample], int]:
    """Each sample's retriever lists from the current snapshot (retrieval and fusion only, no reranking);
    a sample none of whose chunks exists any more (the repository was re-indexed since) is skipped."""
    classifier = pipeline.intent  # the pipeline's own stage (build_stages)
    replayed: list[ReplayedSample] = []
    skipped = 0
    for sample in samples:
        request = SearchRequest(query=sample.query, repos=[sample.repo], late_interaction=False,
                                cross_encoder=False)
        chunks = pipeline.snapshots.get(sample.repo).chunk_by_id
        if not any(c in chunks for c in sample.chunk_ids):
            skipped += 1
            continue
        _, lists = pipeline.search_with_lists(request)
        replayed.append(ReplayedSample(sample, classifier.classify(sample.query).dominant, lists))
    return replayed, skipped
