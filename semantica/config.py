"""Typed configuration: small dataclasses per concern, composed into one `Config`.

Values come from, in increasing priority: the dataclass defaults (the RFC's values), a YAML file
(`conf/default.yaml` unless another is given), environment variables named
`SEMANTICA__SECTION__FIELD` and CLI overrides `section.field=value`.

Long because it is a catalogue of ~30 small, independent dataclasses (one per concern,
each a screenful) plus the one loader; keeping every default in one place is the point, and each
section mirrors a block of conf/default.yaml. The query-planning sections live in `semantica.config_planning`.
"""

from __future__ import annotations

import dataclasses
import os
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from semantica.config_history import HistoryConfig  # noqa: F401 (the `history` section of `Config`)
from semantica.config_localizer import (  # noqa: F401 (the localizer sections of `Config`)
    LocalizerConfig,
    LocalizerCorpusConfig,
    LocalizerTrainConfig,
)
from semantica.config_ops import (  # noqa: F401 (knowledge, plan and observability sections of `Config`)
    KnowledgeConfig,
    KnowledgeTrustConfig,
    ObservabilityConfig,
    PlanConfig,
)
from semantica.config_planning import (  # noqa: F401 (the planning sections of `Config`)
    DecomposeConfig,
    FeedbackWeightsConfig,
    FinalOrderConfig,
    MultiHopConfig,
    PlanningAnalyzerConfig,
    PlanningBudgetsConfig,
    PlanningConfig,
    PlanningModesConfig,
    PlanningRetryConfig,
    RepoMapConfig,
)
from semantica.errors import ErrorKind

ENV_PREFIX = "SEMANTICA__"
PACKAGE_CONF_DIR = Path(__file__).resolve().parent.parent / "conf"
DEFAULT_CONFIG_FILE = PACKAGE_CONF_DIR / "default.yaml"


class ConfigError(ValueError):
    """A configuration value or key is wrong; the message says which and what to do."""

    error_kind = ErrorKind.INVALID


@dataclass
class PathsConfig:
    """Where snapshots and caches live."""

    index_root: str = ".semantica/index"
    cache_dir: str = ".semantica/cache"


@dataclass
class DiscoverConfig:
    """Which files of a repository are indexed."""

    max_file_bytes: int = 1_000_000
    binary_sniff_bytes: int = 8192
    vendored_dirs: list[str] = field(
        default_factory=lambda: [
            "node_modules", "vendor", "third_party", "bower_components", ".git", "dist",
            "build", "__pycache__", ".venv", "venv", "site-packages", ".tox", ".mypy_cache",
        ]
    )
    generated_suffixes: list[str] = field(
        default_factory=lambda: [".min.js", ".min.css", ".bundle.js", "_pb2.py", ".pb.go", ".lock"]
    )
    max_line_chars: int = 5000
    include_globs: list[str] = field(default_factory=list)  # [] = every file; e.g. ["*.py"] (eval)
    ignore_file: str = ".semanticaignore"  # gitignore syntax, any level: index-only exclusions ("" = off)


@dataclass
class ChunkConfig:
    """Chunk sizes, in code tokens (see `semantica.tokenizer.count_tokens`)."""

    max_tokens: int = 256
    overlap_tokens: int = 32
    window_lines: int = 40
    window_overlap_lines: int = 8
    min_window_tokens: int = 4


@dataclass
class EncoderConfig:
    """The bi-encoder. An empty `model_path` means the installed all-MiniLM-L6-v2 package."""

    model_path: str = ""
    model_id: str = "sentence-transformers/all-MiniLM-L6-v2"
    batch_size: int = 32
    max_length: int = 256
    query_max_length: int = 256
    device: str = "auto"
    torch_threads: int = 0
    cache_segment_vectors: int = 4096
    batch_tokens: int = 8192  # padded tokens per forward pass: short texts batch wide (0 = fixed batch_size)
    group_texts: int = 1024  # texts handed to the encoder at once; it sorts them by length and batches by tokens
    quantize_int8: bool = False  # torch dynamic int8 Linear layers, per-channel, CPU (model id gets "+int8pc"; docs/fast.md)
    runtime: str = "onnx"  # onnx (ONNX Runtime over a one-time export, no torch import) | torch (docs/fast.md)
    export_dir: str = ""  # where ONNX exports are cached by weights hash ("" = ~/.cache/semantica/onnx)


@dataclass
class FaissConfig:
    """Dense shards: exact inner product below `flat_max_vectors`, IVF-PQ above."""

    flat_max_vectors: int = 100_000
    shard_max_vectors: int = 250_000
    ivf_nlist: int = 1024
    pq_m: int = 48
    pq_bits: int = 8
    nprobe: int = 32
    query_threads: int = 1


@dataclass
class LuceneConfig:
    """Lexical shards (Anserini through Pyserini)."""

    shard_max_docs: int = 500_000
    threads: int = 1
    java_heap: str = "1g"
    max_clause_count: int = 1024
    max_query_terms: int = 512


@dataclass
class IndexConfig:
    """Snapshot handling."""

    keep_snapshots: int = 2
    schema_version: int = 1
    stale_build_s: float = 3600.0  # a `.tmp` build without a lock file (older versions) is stale after this
    # index kinds a build writes, in order (semantica.index_kinds; each may also have its own switch)
    kinds: list[str] = field(default_factory=lambda: ["faiss", "lucene", "granular", "tokens", "history"])
    overlap_files: int = 256  # in-process indexing parses this many files ahead of the encoder (0: parse all, then embed)
    overlap_depth: int = 2  # partitions parsed ahead at most (bounds the memory the overlap holds)


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
    retrievers: list[str] = field(default_factory=lambda: ["vector", "lexical", "symbol", "graph"])


@dataclass
class GraphConfig:
    """Cost-aware graph walk (RFC values)."""

    edge_costs: dict[str, float] = field(
        default_factory=lambda: {
            "CALLS": 1.0, "OVERRIDES": 1.1, "INHERITS": 1.25, "REFERENCES": 1.4,
            "CONTAINS": 1.7, "IMPORTS": 2.0, "TESTS": 2.5,
        }
    )
    test_path_penalty: float = 1.5
    max_cost: float = 4.0
    max_nodes: int = 200
    seeds: int = 10
    directed_seeds: int = 2
    pagerank_weight: float = 0.2
    pagerank_damping: float = 0.85
    flow_cost_scale: float = 0.8
    flow_budget_scale: float = 1.5
    store: str = "embedded"
    memgraph_uri: str = ""


@dataclass
class FusionConfig:
    """Weighted RRF + consensus (RFC values)."""

    rrf_k: dict[str, float] = field(
        default_factory=lambda: {"vector": 70.0, "lexical": 70.0, "symbol": 50.0, "graph": 50.0}
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
    flow_boost_min_p: float = 0.2
    symbol_boost: float = 1.2
    symbol_boost_min_p: float = 0.3
    expansion_boost: float = 1.1
    consensus_beta: float = 0.3
    consensus_cap: float = 1.5
    consensus_q0: float = 10.0
    cutoffs: dict[str, int] = field(
        default_factory=lambda: {"symbol": 20, "flow": 15, "concept": 60, "code": 40, "balanced": 40}
    )
    # registered retrievers beyond the four strategies: name -> raw weight (normalised with the profile's)
    extra_weights: dict[str, float] = field(default_factory=dict)


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
    intents: list[str] = field(default_factory=list)  # run only for these dominant intents ([] = all)


@dataclass
class TokenVectorsConfig:
    """Document token vectors stored in the snapshot at index time, so late interaction at query
    time is MaxSim over memory-mapped codes instead of encoding the candidates."""

    enabled: bool = True
    dim: int = 128  # int8/float16: PCA projection of the token outputs (0 = keep the encoder's width)
    quantization: str = "pq"  # pq (FAISS product quantiser, pq_m bytes/token) | int8 (per-token scale) | float16
    pq_m: int = 64  # sub-quantisers (bytes per token) for pq; must divide the encoder width
    fit_sample_tokens: int = 50_000  # token vectors the projection is fitted on (first index per model)
    cache_segment_chunks: int = 2048  # chunks per content-addressed cache segment


@dataclass
class CrossEncoderConfig:
    """Conditional cross-encoder. Off by default: no weights can be had offline."""

    enabled: bool = False
    model_path: str = ""
    device: str = "auto"
    batch_size: int = 16
    max_length: int = 384
    top_n: int = 20
    intents: list[str] = field(default_factory=lambda: ["flow", "concept"])
    min_query_words: int = 6
    keywords: list[str] = field(default_factory=lambda: ["why", "how", "explain", "trace"])
    cross_weight: float = 0.8
    fused_weight: float = 0.2


@dataclass
class LtrConfig:
    """Learning-to-rank reranking of the fused hits with a LightGBM model from `semantica train-ltr`.

    Off until a model is trained: there is no model to ship, it is learned from mined labels."""

    enabled: bool = False
    model_path: str = ""  # the directory `semantica train-ltr --out` wrote (model.txt + ltr.json)
    top_n: int = 50  # fused hits the model reorders (the rest keep their fused order, below them)
    score_floor: float = 0.1  # reordered hits get scores in [score_floor, 1] so later stages can blend them


@dataclass
class RerankConfig:
    """Which registered rerankers run after fusion, in this order (`serving.rerankers.registry.RERANKERS`)."""

    order: list[str] = field(default_factory=lambda: ["ltr", "late_interaction", "cross_encoder", "repo_scope",
                                                      "final_order"])


@dataclass
class LtrTrainConfig:
    """Mining labelled feature vectors and training the LightGBM ranker (`semantica mine`, `train-ltr`)."""

    mine_depth: int = 50  # fused hits mined per query (the candidates the model will reorder)
    function_gain: int = 2  # label of a hit inside a gold function (SWE-bench)
    file_gain: int = 1  # label of a hit in a gold file but outside the gold functions
    objective: str = "lambdarank"
    # small, heavily regularised trees: ~100 labelled queries overfit anything larger (leave-one-repo-out
    # CV on the first 94 mined queries: 200 trees of 15 leaves lost 0.03 NDCG@10, these gained 0.11)
    n_estimators: int = 100
    learning_rate: float = 0.03
    num_leaves: int = 3
    min_child_samples: int = 200
    eval_at: int = 10  # NDCG@eval_at is the training and report metric
    seed: int = 13


@dataclass
class ContextConfig:
    """Cited context packing."""

    token_budget: int = 4000
    fill_ratio: float = 0.95
    context_lines: int = 2
    max_block_lines: int = 24


@dataclass
class QueryConfig:
    """Request validation and the in-process pipeline."""

    default_k: int = 10
    max_k: int = 200
    max_query_chars: int = 20_000
    query_cache_items: int = 256
    file_rank_depth: int = 50
    localize_test_factor: float = 0.5
    localize_strategies: list[str] = field(default_factory=lambda: ["vector", "lexical"])
    localize_path_boost: float = 5.0


@dataclass
class GranularConfig:
    """Whole-file and function-level BM25 (semantica/granular.py) and how localization fuses them.

    A file (function) at rank r in its granular list adds `file_weight / (rrf_k + r)`
    (`function_weight / ...`) to its localization score, in the units of the fused strategy lists.
    Candidates first: every function of the top `candidate_files` files becomes a function candidate,
    and each function adds `file_prior_weight / (rrf_k + rank of its file)` (0 = off).
    `query_repeats`: a query term counts as often as it occurs (an issue repeats what matters)."""

    index: bool = True
    enabled: bool = False
    k: int = 200
    query_repeats: bool = True
    rrf_k: float = 60.0
    file_weight: float = 0.0
    function_weight: float = 0.0
    candidate_files: int = 0
    file_prior_weight: float = 0.0


@dataclass
class PairsConfig:
    """`semantica mine-pairs`: training pairs from git history (jobs/train/pairs.py). `corpus` never holds
    a benchmark repository (the miner refuses them; tests/jobs/test_pairs.py guards the list)."""

    corpus: list[str] = field(default_factory=lambda: ["pallets/click", "python-attrs/attrs", "Textualize/rich"])
    min_docstring_chars: int = 20
    min_body_lines: int = 2
    max_document_chars: int = 4000
    max_commits: int = 2000
    min_message_chars: int = 15
    max_commit_files: int = 10
    max_commit_lines: int = 400
    bot_markers: list[str] = field(default_factory=lambda: ["[bot]", "dependabot", "pre-commit-ci", "renovate"])
    skip_subject_prefixes: list[str] = field(default_factory=lambda: ["revert", "bump", "release", "merge branch"])
    hard_negatives: int = 5
    commit_batch: int = 250


@dataclass
class ServeConfig:
    """HTTP serving defaults."""

    host: str = "127.0.0.1"
    port: int = 8000
    feedback_dir: str = ".semantica/feedback"


@dataclass
class RayConfig:
    """Local Ray defaults for a small machine (fractional CPUs avoid silent hangs)."""

    address: str = ""
    num_cpus: int = 2
    actor_num_cpus: float = 0.5
    embed_actors: int = 1
    embed_batch_size: int = 64
    startup_timeout_s: float = 120.0
    startup_attempts: int = 3  # local ray.init tries when Ray's own 30 s raylet wait runs out (busy machine)
    serve_proxy_ready_s: float = 60.0  # a local node's Serve proxy may take this long to start (Ray's 5 s ran out under load)
    parse_batch_size: int = 16
    job_timeout_s: float = 1800.0
    clone_timeout_s: float = 600.0


@dataclass
class AuthConfig:
    """HTTP access: bearer tokens (mode `auto` = required unless bound to loopback, `required` = always) and
    the Host-header allowlist (localhost, 127.0.0.1, [::1] and the bound host are always allowed)."""

    mode: str = "auto"
    token_file: str = ".semantica/serve-token"
    tokens_file: str = ""  # optional YAML: [{name, token, repos: [glob, ...]}] - per-token repository allowlists
    allowed_hosts: list[str] = field(default_factory=list)  # extra Host names, e.g. the server's DNS name; "*" = any
    public_paths: list[str] = field(default_factory=lambda: ["/healthz", "/docs", "/openapi.json"])


@dataclass
class LimitsConfig:
    """Request size limits (HTTP 413): the body, and every JSON field of it."""

    max_body_bytes: int = 262_144
    max_string_chars: int = 20_000
    max_list_items: int = 1_000
    max_json_depth: int = 8


@dataclass
class AdmissionConfig:
    """Admission control per ingress replica: bounded concurrency + queue (503 + Retry-After when full), a
    per-request deadline (504), and the SIGTERM drain timeout."""

    max_concurrent: int = 4
    max_queued: int = 8
    deadline_s: float = 10.0
    retry_after_s: int = 1
    drain_timeout_s: float = 30.0
    proxy_grace_s: float = 5.0  # Serve's proxy ends a request at deadline_s + this (408): one a dead replica held
    drain_cutoff_s: float = 5.0  # after drain_timeout_s: how long the cut-off requests get to send their 503


@dataclass
class MetricsConfig:
    """Prometheus: latency buckets (seconds) and where `index` / `index-batch` record build outcomes."""

    latency_buckets_s: list[float] = field(
        default_factory=lambda: [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0])
    build_stats_file: str = ""  # "" = <paths.index_root>/.build-stats.json (shared storage on a cluster)


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
class McpConfig:
    """`semantica mcp`: the MCP server's name, transports and limits."""

    name: str = "semantica"
    transport: str = "stdio"  # stdio | streamable-http
    host: str = "127.0.0.1"
    port: int = 8765
    path: str = "/mcp"
    context_budget: int = 4000  # get_context's default token budget
    max_context_budget: int = 32000
    snippet_lines: int = 40  # lines of a hit's content returned by `search`
    stateless_http: bool = False  # true: streamable HTTP without sessions (replicas behind one load balancer)


@dataclass
class FreshnessConfig:
    """Is a snapshot behind its source? Checked on every answer from git's index (no re-hash)."""

    enabled: bool = True
    git_timeout_s: float = 5.0
    max_listed: int = 20  # changed paths listed per kind (edited/added/deleted/renamed); counts are exact
    untracked_cache: bool = True  # index turns on git's untracked cache: `git status -uall` 10 ms -> 4 ms on pytest


@dataclass
class WatchConfig:
    """`semantica watch`: filesystem events -> debounced incremental re-index."""

    debounce_ms: int = 300
    ignore_dirs: list[str] = field(default_factory=lambda: [".git", "__pycache__", ".semantica", ".venv", "node_modules",
                                                           ".pytest_cache", ".mypy_cache", ".ruff_cache"])


@dataclass
class ShardsConfig:
    """Incremental shard writes: chunks are partitioned by a hash of their path, and a new snapshot
    hard-links every partition's FAISS, Lucene and token shard whose content is unchanged."""

    partition_chunks: int = 1024  # target chunks per partition (a one-file change rebuilds one partition)
    max_partitions: int = 64  # bound on the per-query fan-out; larger repos get larger partitions
    reuse: bool = True  # false: every snapshot writes every shard (still partitioned)


@dataclass
class BranchesConfig:
    """Retention of branch snapshots (`index --ref B` publishes `NAME@B`); the default branch keeps
    `index.keep_snapshots`."""

    keep_snapshots: int = 2  # published snapshots kept per non-default branch
    keep: dict[str, int] = field(default_factory=dict)  # per-branch override, e.g. {release: 5}


@dataclass
class DaemonConfig:
    """The warm local query daemon (`semantica daemon`): `semantica query` asks it instead of loading the
    encoder, the JVM and the indexes in every process. It listens on a unix socket (mode 0600) and exits
    after `idle_timeout_s` without a request. `run_dir` '' = `<paths.cache_dir>/daemon`."""

    enabled: bool = True
    idle_timeout_s: float = 900.0
    start_timeout_s: float = 20.0  # how long a query waits for a starting daemon's socket before answering in-process
    request_timeout_s: float = 300.0
    run_dir: str = ""
    listen_backlog: int = 128  # connections queued while the daemon accepts (Python's default 5 refused a burst)
    connect_retry_s: float = 2.0  # a client retries a full listen queue (EAGAIN) this long before answering in-process


@dataclass
class Config:
    """Everything, composed."""

    paths: PathsConfig = field(default_factory=PathsConfig)
    discover: DiscoverConfig = field(default_factory=DiscoverConfig)
    chunk: ChunkConfig = field(default_factory=ChunkConfig)
    encoder: EncoderConfig = field(default_factory=EncoderConfig)
    faiss: FaissConfig = field(default_factory=FaissConfig)
    lucene: LuceneConfig = field(default_factory=LuceneConfig)
    index: IndexConfig = field(default_factory=IndexConfig)
    intent: IntentConfig = field(default_factory=IntentConfig)
    retrieval: RetrievalConfig = field(default_factory=RetrievalConfig)
    graph: GraphConfig = field(default_factory=GraphConfig)
    fusion: FusionConfig = field(default_factory=FusionConfig)
    late_interaction: LateInteractionConfig = field(default_factory=LateInteractionConfig)
    token_vectors: TokenVectorsConfig = field(default_factory=TokenVectorsConfig)
    cross_encoder: CrossEncoderConfig = field(default_factory=CrossEncoderConfig)
    ltr: LtrConfig = field(default_factory=LtrConfig)
    rerank: RerankConfig = field(default_factory=RerankConfig)
    ltr_train: LtrTrainConfig = field(default_factory=LtrTrainConfig)
    context: ContextConfig = field(default_factory=ContextConfig)
    query: QueryConfig = field(default_factory=QueryConfig)
    granular: GranularConfig = field(default_factory=GranularConfig)
    pairs: PairsConfig = field(default_factory=PairsConfig)
    localizer: LocalizerConfig = field(default_factory=LocalizerConfig)
    localizer_train: LocalizerTrainConfig = field(default_factory=LocalizerTrainConfig)
    serve: ServeConfig = field(default_factory=ServeConfig)
    ray: RayConfig = field(default_factory=RayConfig)
    auth: AuthConfig = field(default_factory=AuthConfig)
    limits: LimitsConfig = field(default_factory=LimitsConfig)
    admission: AdmissionConfig = field(default_factory=AdmissionConfig)
    metrics: MetricsConfig = field(default_factory=MetricsConfig)
    graph_ops: GraphOpsConfig = field(default_factory=GraphOpsConfig)

    mcp: McpConfig = field(default_factory=McpConfig)
    freshness: FreshnessConfig = field(default_factory=FreshnessConfig)
    watch: WatchConfig = field(default_factory=WatchConfig)
    shards: ShardsConfig = field(default_factory=ShardsConfig)
    branches: BranchesConfig = field(default_factory=BranchesConfig)
    daemon: DaemonConfig = field(default_factory=DaemonConfig)
    # query planning: serving/planning/{repo_map,final_order,feedback_weights}.py
    repo_map: RepoMapConfig = field(default_factory=RepoMapConfig)
    final_order: FinalOrderConfig = field(default_factory=FinalOrderConfig)
    feedback_weights: FeedbackWeightsConfig = field(default_factory=FeedbackWeightsConfig)
    planning: PlanningConfig = field(default_factory=PlanningConfig)  # serving/planning/
    knowledge: KnowledgeConfig = field(default_factory=KnowledgeConfig)  # semantica/knowledge, serving/knowledge
    plan: PlanConfig = field(default_factory=PlanConfig)  # `semantica plan`, the dry run
    observability: ObservabilityConfig = field(default_factory=ObservabilityConfig)
    history: HistoryConfig = field(default_factory=HistoryConfig)  # semantica/history, serving/retrievers/history.py


def _coerce(value: Any, annotation: Any, where: str) -> Any:
    """Convert a YAML/env value to the annotated type, or raise a clear ConfigError."""
    origin = typing.get_origin(annotation)
    if dataclasses.is_dataclass(annotation):
        if not isinstance(value, dict):
            raise ConfigError(f"{where}: expected a mapping, got {value!r}")
        return _build(annotation, value, where)
    if annotation is bool:
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.lower() in {"1", "true", "yes", "on", "0", "false", "no", "off"}:
            return value.lower() in {"1", "true", "yes", "on"}
        raise ConfigError(f"{where}: expected true/false, got {value!r}")
    if annotation in (int, float):
        try:
            return annotation(value)
        except (TypeError, ValueError):
            raise ConfigError(f"{where}: expected {annotation.__name__}, got {value!r}") from None
    if annotation is str:
        return str(value)
    if origin in (list, dict):
        if isinstance(value, str):
            value = yaml.safe_load(value)
        if origin is list and isinstance(value, list):
            (item_type,) = typing.get_args(annotation)
            return [_coerce(v, item_type, f"{where}[{i}]") for i, v in enumerate(value)]
        if origin is dict and isinstance(value, dict):
            _, value_type = typing.get_args(annotation)
            return {str(k): _coerce(v, value_type, f"{where}.{k}") for k, v in value.items()}
        raise ConfigError(f"{where}: expected a {origin.__name__}, got {value!r}")
    return value


def _build(cls: type, values: dict[str, Any], where: str) -> Any:
    hints = typing.get_type_hints(cls)
    known = {f.name for f in dataclasses.fields(cls)}
    unknown = sorted(set(values) - known)
    if unknown:
        raise ConfigError(f"{where or 'config'}: unknown key(s) {unknown}; known: {sorted(known)}")
    kwargs = {k: _coerce(v, hints[k], f"{where}.{k}" if where else k) for k, v in values.items()}
    return cls(**kwargs)


def _merge(base: dict[str, Any], update: dict[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for key, value in update.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = _merge(merged[key], value)
        else:
            merged[key] = value
    return merged


def _dotted_to_nested(dotted: str, value: Any) -> dict[str, Any]:
    parts = [p for p in dotted.split(".") if p]
    if len(parts) < 2:
        raise ConfigError(f"override {dotted!r}: use section.field=value, e.g. faiss.nprobe=16")
    nested: dict[str, Any] = {parts[-1]: value}
    for part in reversed(parts[:-1]):
        nested = {part: nested}
    return nested


def load_config(
    path: str | os.PathLike[str] | None = None,
    overrides: list[str] | None = None,
    environ: dict[str, str] | None = None,
) -> Config:
    """Load defaults < YAML file < SEMANTICA__SECTION__FIELD env < `section.field=value` overrides."""
    config_path = Path(path) if path else Path(os.environ.get("SEMANTICA_CONFIG", DEFAULT_CONFIG_FILE))
    raw: dict[str, Any] = dataclasses.asdict(Config())  # so a partial mapping override keeps the other keys
    if config_path.exists():
        try:
            loaded = yaml.safe_load(config_path.read_text()) or {}
        except yaml.YAMLError as exc:
            raise ConfigError(f"{config_path}: not valid YAML ({' '.join(str(exc).split())})") from None
        if not isinstance(loaded, dict):
            raise ConfigError(f"{config_path}: the top level must be a mapping of sections")
        raw = _merge(raw, loaded)
    elif path:
        raise ConfigError(f"config file {config_path} does not exist")
    env = os.environ if environ is None else environ
    for key, value in env.items():
        if key.startswith(ENV_PREFIX):
            dotted = key[len(ENV_PREFIX):].lower().replace("__", ".")
            raw = _merge(raw, _dotted_to_nested(dotted, _yaml_value(value, f"environment variable {key}")))
    for override in overrides or []:
        if "=" not in override:
            raise ConfigError(f"override {override!r}: expected section.field=value")
        dotted, value = override.split("=", 1)
        raw = _merge(raw, _dotted_to_nested(dotted.strip(), _yaml_value(value, f"override {override!r}")))
    return _build(Config, raw, "")


def _yaml_value(text: str, source: str) -> Any:
    """One override's value parsed as YAML; a ConfigError (one line, no traceback) when it is not YAML."""
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        problem = getattr(exc, "problem", None) or type(exc).__name__
        raise ConfigError(f"{source}: {text[:80]!r} is not a valid YAML value ({problem}); "
                          "quote strings, e.g. key='[text'") from None


def config_to_dict(config: Config) -> dict[str, Any]:
    """Plain-dict view (for manifests, `--json` output and Ray workers)."""
    return dataclasses.asdict(config)


def config_from_dict(values: dict[str, Any]) -> Config:
    """Inverse of `config_to_dict`."""
    return _build(Config, values, "")
