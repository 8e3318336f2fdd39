"""The operations area of `Config`: the Ray runtime, metrics, freshness, watching, the knowledge layer, the
indexing dry run and observability (docs/knowledge.md, docs/plan.md, docs/observability.md)."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class KnowledgeConfig:
    """Knowledge entries (decisions, rules, facts, how-tos) injected first into the context; curated by trust.
    The lookup depth, hit boost, vote step, conflict overlap and curator's re-verify count are constants of
    serving/knowledge/ (inject.py, service.py, conflicts.py, curator.py)."""

    enabled: bool = True  # false: search and get_context neither look entries up nor boost hits
    directory: str = ""  # "" = <paths.index_root>/.knowledge (one SQLite file per repository + global.sqlite)
    threshold: float = 0.5  # only entries at or above this trust are injected
    floor: float = 0.2  # the curator retires active entries below this trust after `grace_days`
    grace_days: float = 14.0
    max_entries: int = 3  # entries injected into one answer
    max_context_share: float = 0.25  # of the context budget, at most this much goes to entries
    min_matched_terms: int = 2  # an entry is relevant to a query sharing this many terms (fewer when the query has fewer)
    auto_promote: bool = True  # the curator makes a verified candidate above the threshold active
    max_text_chars: int = 8000  # longer text: HTTP 413 / CLI error
    max_title_chars: int = 200
    candidate_globs: list[str] = field(default_factory=lambda: [
        "docs/adr/*.md", "doc/adr/*.md", "docs/decisions/*.md", "ARCHITECTURE.md", "CONTRIBUTING.md"])
    curate_after_index: bool = True  # `semantica index` ingests candidates and curates that repository
    source_reliability: dict[str, float] = field(default_factory=lambda: {
        "person": 0.8, "adr": 0.9, "doc": 0.7, "agent": 0.4})
    trust_half_life_days: float = 90.0  # an unused entry's freshness share halves this often


# chunks per file, per KiB and per function by language (python -m lab.bench.plan_chunk_fit; conf/default.yaml)
CHUNK_RATES: dict[str, dict[str, float]] = {
    "go": {"per_file": 1.354, "per_kib": 0.345, "per_function": 0.902},
    "java": {"per_file": 2.569, "per_kib": 0.28, "per_function": 0.979},
    "javascript": {"per_file": 0.301, "per_kib": 1.352, "per_function": 1.259},
    "markdown": {"per_file": 2.682, "per_kib": 1.222},
    "python": {"per_file": 0.359, "per_kib": 0.096, "per_function": 1.165},
    "rust": {"per_file": 2.651, "per_kib": 0.508, "per_function": 1.014},
    "text": {"per_file": 0.735, "per_kib": 0.723},
    "toml": {"per_file": 0.602, "per_kib": 1.206},
    "typescript": {"per_file": 1.072, "per_kib": 1.198, "per_function": 0.572},
    "yaml": {"per_file": 0.547, "per_kib": 0.753},
    "default": {"per_file": 2.632, "per_kib": 0.834, "per_function": 0.629},
}


@dataclass
class PlanConfig:
    """`semantica plan`: the dry run's estimates and warnings. The rates come from
    `python -m lab.bench.plan_rates` on this machine (docs/plan.md). The report's list lengths and the
    warnings' lockfile names, artifact directories and data suffixes are constants of pipelines/plan.py."""

    # chunks per file, per KiB and per function, by language (conf/default.yaml holds the fitted table)
    chunk_rates: dict[str, dict[str, float]] = field(default_factory=lambda: {k: dict(v) for k, v in CHUNK_RATES.items()})
    embed_chunks_per_s: float = 50.0  # cold encoder throughput, no cache
    index_bytes_per_chunk: int = 14612  # snapshot bytes on disk per chunk, all shards
    dir_depth: int = 2  # directories are reported at most this deep
    data_dump_bytes: int = 200_000  # an included data file at least this big is flagged
    http_roots: list[str] = field(default_factory=list)  # POST /v1/plan: `path` entries only under these ([]: any)
    http_url_schemes: list[str] = field(default_factory=list)  # POST /v1/plan: `url` schemes allowed ([]: no url)
    http_timeout_s: float = 120.0  # POST /v1/plan: its deadline (the child process is killed; 504)


@dataclass
class ObservabilityConfig:
    """Traces and structured logs (semantica/runtime/observability.py): all off by default."""

    tracing: bool = False  # OpenTelemetry spans per query stage (kept in process unless otlp_endpoint is set)
    otlp_endpoint: str = ""  # e.g. http://otel-collector:4318/v1/traces: export spans over OTLP/HTTP (turns tracing on)
    service_name: str = "semantica"
    json_logs: bool = False  # one JSON object per log record, with the request id
    access_log: bool = False  # one log line per HTTP request: method, path, status, duration (and the request id)
    log_level: str = "INFO"


@dataclass
class RayConfig:
    """Local Ray defaults for a small machine (fractional CPUs avoid silent hangs)."""

    address: str = ""
    num_cpus: int = 2
    actor_num_cpus: float = 0.5  # CPU per embed actor on a cluster without GPUs (its encoder's scheduling share)
    parse_num_cpus: float = 0.5  # CPU per parse task; equal to the embed actor's request, Ray Data fuses the two
    embed_tasks_in_flight: int = 2  # batches queued on each embed actor (ActorPoolStrategy max_tasks_in_flight_per_actor)
    embed_actors: int = 1  # the embedding actor pool: this many; 0 = autoscaled (pipelines/ray_job.py `embed_pool`)
    embed_batch_size: int = 64
    startup_timeout_s: float = 120.0
    startup_attempts: int = 3  # local ray.init tries when Ray's own 30 s raylet wait runs out (busy machine)
    serve_proxy_ready_s: float = 60.0  # a local node's Serve proxy may take this long to start (Ray's 5 s ran out under load)
    parse_batch_size: int = 16
    job_timeout_s: float = 1800.0
    clone_timeout_s: float = 600.0


@dataclass
class MetricsConfig:
    """Prometheus: latency buckets (seconds) and where `index` / `index-batch` record build outcomes."""

    latency_buckets_s: list[float] = field(
        default_factory=lambda: [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0])
    build_stats_file: str = ""  # "" = <paths.index_root>/.build-stats.json (shared storage on a cluster)


@dataclass
class FreshnessConfig:
    """Is a snapshot behind its source? Checked on every answer from git's index (no re-hash)."""

    enabled: bool = True
    git_timeout_s: float = 5.0
    max_listed: int = 20  # changed paths listed per kind (edited/added/deleted/renamed); counts are exact
    untracked_cache: bool = True  # index turns on git's untracked cache: `git status -uall` 10 ms -> 4 ms on pytest
    watch_max_age_s: float = 5.0  # a working tree inotify saw unchanged reuses its last check this long; 0: git always


@dataclass
class WatchConfig:
    """`semantica watch`: filesystem events -> debounced incremental re-index."""

    debounce_ms: int = 300
    ignore_dirs: list[str] = field(default_factory=lambda: [".git", "__pycache__", ".semantica", ".venv", "node_modules",
                                                           ".pytest_cache", ".mypy_cache", ".ruff_cache"])


@dataclass
class OpsSettings:
    """The operations sections of `Config`: runtime, monitoring and the knowledge layer."""

    ray: RayConfig = field(default_factory=RayConfig)
    metrics: MetricsConfig = field(default_factory=MetricsConfig)
    freshness: FreshnessConfig = field(default_factory=FreshnessConfig)
    watch: WatchConfig = field(default_factory=WatchConfig)
    knowledge: KnowledgeConfig = field(default_factory=KnowledgeConfig)
    plan: PlanConfig = field(default_factory=PlanConfig)
    observability: ObservabilityConfig = field(default_factory=ObservabilityConfig)
