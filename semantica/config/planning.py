"""Configuration sections of query planning (serving/planning/), split out of
`semantica.config` by concern: `Config` composes them like every other section, and each mirrors a
block of conf/default.yaml (`repo_map`, `feedback_weights`, `planning`)."""

from __future__ import annotations

from dataclasses import dataclass, field

# -- query planning: repository map, learned weights (serving/planning/) -----------------------


@dataclass
class RepoMapConfig:
    """Repository map (`semantica map`, /v1/map, MCP `repo_map`): files ranked by personalised PageRank over the
    file graph, seeded with the query's identifiers resolved through the symbol table (Aider's repo map).

    Scope selection (`scope_mode`): for a broad query (>= `scope_min_query_words` words) over a large repository
    (>= `scope_min_files` files), the map's top `scope_top_files` files boost (or narrow to) the search hits."""

    damping: float = 0.85
    edge_weights: dict[str, float] = field(default_factory=lambda: {
        "CALLS": 1.0, "INHERITS": 1.0, "REFERENCES": 0.5, "IMPORTS": 0.5, "OVERRIDES": 0.5, "TESTS": 0.2})
    reverse_weight: float = 0.5  # each edge also links the defining file back to the user, at this fraction
    code_identifier_weight: float = 1.0  # snake_case / CamelCase / dotted names in the query
    plain_word_weight: float = 0.2  # a plain word that is exactly a symbol's name (e.g. `search`)
    min_plain_word_chars: int = 4
    path_weight: float = 3.0  # a file path (or its tail) named in the query
    max_seed_definitions: int = 20  # a name defined in more places than this is too common to seed
    symbols_per_file: int = 6
    signature_max_chars: int = 160
    default_tokens: int = 1024
    max_tokens: int = 32768
    scope_mode: str = "off"  # off | boost | narrow (serving.planning.repo_map.ScopeMode)
    scope_min_files: int = 300
    scope_min_query_words: int = 12
    scope_top_files: int = 30
    scope_boost: float = 0.3  # boost mode: a hit in the map's top files gets score * (1 + scope_boost)


@dataclass
class FeedbackWeightsConfig:
    """Per-repository, per-intent strategy weights learned from /v1/feedback (`semantica weights`).

    Each feedback record moves the EMA of its intent's strategy shares toward the strategies that ranked the
    selected hit; the multiplier on the conf profile is clipped to [min_multiplier, max_multiplier]. Below
    `min_count` records the defaults are used; above, the learned multiplier is blended in with confidence
    n / (n + confidence_k). Learned weights are used only after the offline A/B (`weights --ab`) says they win."""

    enabled: bool = True
    ema_rate: float = 0.1
    min_multiplier: float = 0.5
    max_multiplier: float = 2.0
    min_count: int = 20
    confidence_k: float = 20.0
    holdout_fraction: float = 0.3
    min_holdout: int = 10
    min_gain: float = 0.0  # learned wins when its mean reciprocal rank on held-back feedback beats default by more
    weights_file: str = "feedback-weights.json"  # under paths.index_root/<repo>/
    seed: int = 13


# -- query planning (serving/planning/) ----------------------------------------------------------------

PLANNING_STOP_WORDS = [
    "a", "an", "the", "is", "are", "was", "were", "be", "been", "of", "to", "in", "on", "at", "for", "by", "with",
    "from", "and", "or", "not", "it", "this", "that", "these", "those", "there", "do", "does", "did", "i", "we",
    "you", "my", "our", "me", "can", "could", "should", "would", "will", "when", "where", "what", "which", "who",
    "how", "why", "if", "then", "so", "as", "into", "about", "any", "some", "all", "get", "gets", "use", "used",
]


@dataclass
class PlanningAnalyzerConfig:
    """Query features -> search mode (serving/planning/analyzer.py). Rules, first match wins:
    quoted code in a short query, or a short all-identifier query -> exact_vector; stack-trace frames, file paths, an
    identifier share >= `lexical_identifier_share` or a stop-word-free keyword bag -> lexical_heavy;
    a breadth marker ("all", "examples of" ...) -> mmr_diverse; prose of >= `vector_min_words` words
    without identifiers -> vector_heavy; else hybrid."""

    enabled: bool = True  # off: every query is hybrid (multipliers 1) unless the request forces a mode
    max_chars: int = 4000  # only this many leading characters are analysed (caps the work)
    exact_max_words: int = 3
    quoted_max_words: int = 30  # quoted code in an issue-length text is one clue among many, not the target
    min_trace_frames: int = 1
    min_paths: int = 1
    lexical_identifier_share: float = 0.5
    keyword_bag_min_words: int = 2
    keyword_bag_max_words: int = 6
    keyword_bag_min_density: float = 1.0
    vector_min_words: int = 6
    diverse_max_words: int = 20  # a breadth marker in an issue-length text says nothing
    diverse_markers: list[str] = field(default_factory=lambda: [
        "all", "every", "each", "examples", "overview", "various", "different", "kinds of", "ways to", "list of"])
    stop_words: list[str] = field(default_factory=lambda: list(PLANNING_STOP_WORDS))


@dataclass
class PlanningModesConfig:
    """Per-mode multipliers on the intent weights of weighted RRF (serving/core/fusion.py), and MMR for
    mmr_diverse."""

    multipliers: dict[str, dict[str, float]] = field(default_factory=lambda: {
        "hybrid": {"vector": 1.0, "lexical": 1.0, "symbol": 1.0, "graph": 1.0},
        "vector_heavy": {"vector": 1.6, "lexical": 0.7, "symbol": 0.7, "graph": 0.8},
        "lexical_heavy": {"vector": 0.7, "lexical": 1.6, "symbol": 1.2, "graph": 0.8},
        "mmr_diverse": {"vector": 1.0, "lexical": 1.0, "symbol": 1.0, "graph": 1.0},
        "exact_vector": {"vector": 1.3, "lexical": 1.0, "symbol": 1.6, "graph": 0.6},
    })
    mmr_enabled: bool = False  # a selected mmr_diverse reorders by MMR (a request forcing it always does)
    mmr_lambda: float = 0.7  # relevance vs novelty (1 = plain relevance order)
    mmr_top_n: int = 30  # hits MMR reorders (the rest keep their order below them)
    apply_to_localize: bool = False  # the mode's multipliers also weight file/function localization (docs/defaults.md)


@dataclass
class PlanningBudgetsConfig:
    """Result budgets across repositories (serving/planning/budgets.py): the primary repository gets
    `primary_share` of K, the others split the rest; merged primary first, deduplicated by content sha."""

    enabled: bool = False  # unmeasured: no multi-repository golden set yet (lab/notes/results-log.md, "Query planning")
    primary_share: float = 0.6


@dataclass
class DecomposeConfig:
    """Issue-length queries split into sub-queries (serving/planning/decompose.py), fused per strategy.

    A sub-query's list enters each strategy's list by weighted RRF: main rank r adds
    `main_weight / (rrf_k + r)`, a sub-query of kind K at rank r adds `weights[K] / (rrf_k + r)`.
    Frames and paths are looked up directly in the snapshot ("direct" lists) and fold into `direct_into`.
    """

    enabled: bool = True
    min_query_chars: int = 300  # shorter queries are not split (unless they hold a traceback)
    max_identifiers: int = 8  # identifiers in the identifiers sub-query
    max_calls: int = 8  # names the report's code calls, in the calls sub-query
    max_errors: int = 2  # exception lines, last first
    max_frames: int = 8  # stack frames, innermost first
    max_paths: int = 6
    error_max_chars: int = 300
    gist_max_chars: int = 1200
    gist_min_words: int = 4  # a prose line has at least this many words
    min_path_segments: int = 2  # a frame path matches an indexed file by at least this many trailing segments
    rrf_k: float = 60.0
    main_weight: float = 1.0
    max_list: int = 150  # merged list length per strategy
    weights: dict[str, float] = field(default_factory=lambda: {
        "identifiers": 0.0, "calls": 0.0, "error": 0.0, "frame": 2.0, "path": 0.0, "gist": 0.0})  # frames only
    strategies: dict[str, list[str]] = field(default_factory=lambda: {
        "identifiers": ["lexical", "symbol"], "calls": ["symbol", "lexical"], "error": ["lexical", "vector"],
        "gist": ["vector", "lexical"]})
    direct_into: list[str] = field(default_factory=lambda: ["vector", "lexical"])  # frame/path lists fold here
    # "kind.strategy" -> the strategies that sub-query list feeds instead of its own (default: its own)
    routes: dict[str, list[str]] = field(default_factory=dict)


@dataclass
class PlanningConfig:
    """The query planner (serving/planning/planner.py): each piece has its own switch and section."""

    enabled: bool = True
    analyzer: PlanningAnalyzerConfig = field(default_factory=PlanningAnalyzerConfig)
    modes: PlanningModesConfig = field(default_factory=PlanningModesConfig)
    budgets: PlanningBudgetsConfig = field(default_factory=PlanningBudgetsConfig)
    decompose: DecomposeConfig = field(default_factory=DecomposeConfig)  # sub-queries of issue-length queries


@dataclass
class PlanningSettings:
    """The query-planning sections of `Config` (serving/planning/)."""

    repo_map: RepoMapConfig = field(default_factory=RepoMapConfig)
    feedback_weights: FeedbackWeightsConfig = field(default_factory=FeedbackWeightsConfig)
    planning: PlanningConfig = field(default_factory=PlanningConfig)
