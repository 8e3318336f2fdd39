"""The query area of `Config`: retrievers, fusion, rerankers, localization and context packing.
Each section mirrors a block of conf/default.yaml."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class IntentConfig:
    """Rule-based intent classifier."""

    temperature: float = 1.0
    base_score: float = 0.5
    max_expansions: int = 16


@dataclass
class RetrievalConfig:
    """How deep each retriever goes."""

    k_per_retriever: int = 100
    timeout_s: float = 30.0
    symbol_fuzzy_max_names: int = 4
    repo_parallelism: int = 8  # repositories a multi-repository query searches at once
    # the registered retrievers a query runs (serving/retrievers/registry.py); a request may narrow them
    retrievers: list[str] = field(default_factory=lambda: ["vector", "lexical", "symbol", "graph", "exact"])


@dataclass
class GraphConfig:
    """Cost-aware graph walk (RFC values). The test-path penalty, directed seeds, flow scales and PageRank
    weight are constants of serving/retrievers/graph.py, the index-time PageRank damping of pipelines/write.py."""

    edge_costs: dict[str, float] = field(
        default_factory=lambda: {
            "CALLS": 1.0, "OVERRIDES": 1.1, "INHERITS": 1.25, "REFERENCES": 1.4,
            "CONTAINS": 1.7, "IMPORTS": 2.0, "TESTS": 2.5,
        }
    )
    max_cost: float = 4.0
    max_nodes: int = 200
    seeds: int = 10
    store: str = "embedded"
    memgraph_uri: str = ""


@dataclass
class FusionConfig:
    """Weighted RRF + consensus (RFC values). The boosts' probability floors, the expansion boost and the
    consensus beta and cap are constants of serving/core/fusion.py."""

    rrf_k: dict[str, float] = field(
        default_factory=lambda: {"vector": 70.0, "lexical": 70.0, "symbol": 50.0, "graph": 50.0, "exact": 20.0}
    )
    profiles: dict[str, dict[str, float]] = field(
        default_factory=lambda: {
            "code": {"vector": 0.5, "lexical": 0.3, "symbol": 0.1, "graph": 0.1},
            "symbol": {"vector": 0.2, "lexical": 0.2, "symbol": 0.5, "graph": 0.1},
            "flow": {"vector": 0.2, "lexical": 0.1, "symbol": 0.2, "graph": 0.5},
            "concept": {"vector": 0.7, "lexical": 0.2, "symbol": 0.05, "graph": 0.05},
            "balanced": {"vector": 0.4, "lexical": 0.3, "symbol": 0.2, "graph": 0.1},
        }
    )
    flow_boost: float = 1.3
    symbol_boost: float = 1.2
    consensus_q0: float = 10.0
    cutoffs: dict[str, int] = field(
        default_factory=lambda: {"symbol": 20, "flow": 15, "concept": 60, "code": 40, "balanced": 40}
    )
    # registered retrievers beyond the four strategies: name -> raw weight (normalised with the profile's)
    extra_weights: dict[str, float] = field(default_factory=lambda: {"exact": 1.5})


@dataclass
class LateInteractionConfig:
    """ColBERT-style MaxSim over token embeddings of the top fused hits."""

    enabled: bool = True
    model_path: str = ""
    top_n: int = 30
    doc_max_length: int = 256
    weight: float = 0.5
    memory_cache_items: int = 4096
    dtype: str = "float16"
    skip_identifier_queries: bool = True  # a query that is one (dotted) identifier skips the stage (docs/fast.md)


@dataclass
class CrossEncoderConfig:
    """Conditional cross-encoder. Off by default: no weights can be had offline. The gate's word count and
    keywords and the score blend's weights are constants of serving/rerankers/cross_encoder.py."""

    enabled: bool = False
    model_path: str = ""
    device: str = "auto"
    batch_size: int = 16
    max_length: int = 384
    top_n: int = 20
    intents: list[str] = field(default_factory=lambda: ["flow", "concept"])


@dataclass
class RerankConfig:
    """Which registered rerankers run after fusion, in this order (`serving.rerankers.registry.RERANKERS`)."""

    order: list[str] = field(default_factory=lambda: ["late_interaction", "cross_encoder"])


@dataclass
class ContextConfig:
    """Cited context packing."""

    token_budget: int = 4000
    fill_ratio: float = 0.95
    context_lines: int = 2
    max_block_lines: int = 24
    localizer_first: bool = True  # spend the budget on the localizer's top functions before the hits
    localizer_functions: int = 5  # how many of the answer's top functions lead when localizer_first


@dataclass
class QueryConfig:
    """Request validation and the in-process pipeline."""

    default_k: int = 10
    max_k: int = 200
    max_query_chars: int = 20_000
    deadline_s: float = 60.0  # a query still running this long stops before its next stage (504)
    query_cache_items: int = 256
    file_rank_depth: int = 50
    localize_test_factor: float = 0.5
    localize_strategies: list[str] = field(default_factory=lambda: ["vector", "lexical"])
    localize_path_boost: float = 5.0


@dataclass
class GraphOpsConfig:
    """Exact structural answers (callers, callees, defs, refs, impls, imports) from the code graph."""

    route_queries: bool = True  # `semantica query` answers a structural question from the graph first
    route_depth: int = 1  # transitive depth of a routed question's answer
    default_depth: int = 1  # `semantica callers ...` / POST /v1/graph without a depth
    max_depth: int = 5  # a request deeper than this is refused (HTTP 422)
    # a routed exact answer's score by resolution tier (bindings, unique name, bare name, unresolved), / depth
    tier_scores: list[float] = field(default_factory=lambda: [1.0, 0.8, 0.5, 0.25])


@dataclass
class ExactConfig:
    """Exact and regex search (semantica/stores/exact, serving/retrievers/exact.py, docs/grep.md): a trigram index of
    every indexed file's content (`index`), RE2 as the verifier, and the guardrails of one request. The trigrams sent
    per literal and the retriever's shortest fragment are constants of serving/retrievers/exact.py."""

    index: bool = True  # write the `exact` index kind (trigram postings + file contents) into each snapshot
    compress_level: int = 0  # zlib level of the stored contents; 0 stores them raw (inflating was half a query's time)
    shard_bytes: int = 16 << 20  # text per shard: each pattern queries every shard, each query a fixed cost
    max_pattern_chars: int = 1000  # a longer pattern is a 400
    max_mem_bytes: int = 8 << 20  # RE2's budget for one compiled pattern (its `max_mem`); larger is a 400
    deadline_s: float = 5.0  # a request stops scanning after this and answers what it has, `truncated`
    max_matches_per_file: int = 500  # matching lines kept per file (rg's --max-count is per file; ours is not)
    default_max_count: int = 200  # matching lines per answer when the request names none
    max_matches: int = 5000  # the most a request may ask for (`max_count` above it is capped)
    max_context_lines: int = 10  # `-C N` above it is capped
    max_line_chars: int = 2000  # a reported line is cut to this many characters
    retriever_max_lines: int = 200  # the `exact` retriever: matching lines it turns into chunk hits


@dataclass
class QuerySettings:
    """The query sections of `Config`: what a search runs, how it fuses and reranks, what it returns."""

    intent: IntentConfig = field(default_factory=IntentConfig)
    retrieval: RetrievalConfig = field(default_factory=RetrievalConfig)
    graph: GraphConfig = field(default_factory=GraphConfig)
    fusion: FusionConfig = field(default_factory=FusionConfig)
    late_interaction: LateInteractionConfig = field(default_factory=LateInteractionConfig)
    cross_encoder: CrossEncoderConfig = field(default_factory=CrossEncoderConfig)
    rerank: RerankConfig = field(default_factory=RerankConfig)
    context: ContextConfig = field(default_factory=ContextConfig)
    query: QueryConfig = field(default_factory=QueryConfig)
    graph_ops: GraphOpsConfig = field(default_factory=GraphOpsConfig)
    exact: ExactConfig = field(default_factory=ExactConfig)
