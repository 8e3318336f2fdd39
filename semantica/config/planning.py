"""Configuration sections of query planning (serving/planning/), split out of
`semantica.config` by concern: `Config` composes them like every other section, and each mirrors a
block of conf/default.yaml (`repo_map`, `feedback_weights`, `planning`)."""

from __future__ import annotations

from dataclasses import dataclass, field

# -- query planning: repository map, learned weights (serving/planning/) -----------------------


@dataclass
class RepoMapConfig:
    """Repository map (`semantica map`, /v1/map, MCP `repo_map`): files ranked by personalised PageRank over the
    file graph, seeded with the query's identifiers resolved through the symbol table (Aider's repo map). The
    ranking's weights and caps are constants of serving/planning/repo_map.py."""

    default_tokens: int = 1024
    max_tokens: int = 32768


@dataclass
class FeedbackWeightsConfig:
    """Per-repository, per-intent strategy weights learned from /v1/feedback (`semantica weights`).

    Each feedback record moves the EMA of its intent's strategy shares toward the strategies that ranked the
    selected hit; the multiplier on the conf profile is clipped. Below `min_count` records the defaults are used;
    above, the learned multiplier is blended in with a confidence that grows with the count. Learned weights are
    used only after the offline A/B (`weights --ab`) says they win. The rate, clip bounds, confidence constant and
    held-back share are constants of serving/planning/feedback_weights.py."""

    enabled: bool = True
    min_count: int = 20
    min_holdout: int = 10
    min_gain: float = 0.0  # learned wins when its mean reciprocal rank on held-back feedback beats default by more
    weights_file: str = "feedback-weights.json"  # under paths.index_root/<repo>/
    seed: int = 13


# -- query planning (serving/planning/) ----------------------------------------------------------------

@dataclass
class PlanningAnalyzerConfig:
    """Query features -> search mode (serving/planning/analyzer.py). Rules, first match wins:
    quoted code in a short query, or a short all-identifier query -> exact_vector; stack-trace frames, file paths, a
    high identifier share or a stop-word-free keyword bag -> lexical_heavy; a breadth marker ("all", "examples of"
    ...) -> mmr_diverse; prose without identifiers -> vector_heavy; else hybrid. The rules' thresholds, markers and
    stop words are constants of analyzer.py."""

    enabled: bool = True  # off: every query is hybrid (multipliers 1) unless the request forces a mode
    max_chars: int = 4000  # only this many leading characters are analysed (caps the work)


@dataclass
class PlanningModesConfig:
    """Per-mode multipliers on the intent weights of weighted RRF (serving/core/fusion.py), and MMR for a
    request that forces mmr_diverse (a selected one keeps the relevance order: MMR was neutral on the golden set)."""

    multipliers: dict[str, dict[str, float]] = field(default_factory=lambda: {
        "hybrid": {"vector": 1.0, "lexical": 1.0, "symbol": 1.0, "graph": 1.0},
        "vector_heavy": {"vector": 1.6, "lexical": 0.7, "symbol": 0.7, "graph": 0.8},
        "lexical_heavy": {"vector": 0.7, "lexical": 1.6, "symbol": 1.2, "graph": 0.8},
        "mmr_diverse": {"vector": 1.0, "lexical": 1.0, "symbol": 1.0, "graph": 1.0},
        "exact_vector": {"vector": 1.3, "lexical": 1.0, "symbol": 1.6, "graph": 0.6},
    })
    mmr_lambda: float = 0.7  # relevance vs novelty (1 = plain relevance order)
    mmr_top_n: int = 30  # hits MMR reorders (the rest keep their order below them)


@dataclass
class DecomposeConfig:
    """A query's stack-trace frames looked up in the snapshot (serving/planning/decompose.py, direct.py) and
    fused into the `direct_into` lists (serving/planning/merge.py): main rank r adds `MAIN_WEIGHT / (RRF_K + r)`,
    the frame lookup's rank r adds `frame_weight / (RRF_K + r)`. The frame cap is a constant of decompose.py."""

    enabled: bool = True
    frame_weight: float = 2.0  # 0 = off
    direct_into: list[str] = field(default_factory=lambda: ["vector", "lexical"])  # the frame list folds here


@dataclass
class PlanningConfig:
    """The query planner (serving/planning/planner.py): each piece has its own switch and section."""

    enabled: bool = True
    analyzer: PlanningAnalyzerConfig = field(default_factory=PlanningAnalyzerConfig)
    modes: PlanningModesConfig = field(default_factory=PlanningModesConfig)
    decompose: DecomposeConfig = field(default_factory=DecomposeConfig)  # a query's stack frames


@dataclass
class PlanningSettings:
    """The query-planning sections of `Config` (serving/planning/)."""

    repo_map: RepoMapConfig = field(default_factory=RepoMapConfig)
    feedback_weights: FeedbackWeightsConfig = field(default_factory=FeedbackWeightsConfig)
    planning: PlanningConfig = field(default_factory=PlanningConfig)
