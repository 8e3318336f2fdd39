"""The serving area of `Config`: HTTP, MCP and the local daemon, their access rules and limits.
Each section mirrors a block of conf/default.yaml."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class ServeConfig:
    """HTTP serving defaults."""

    host: str = "127.0.0.1"
    port: int = 8000
    feedback_dir: str = ".semantica/feedback"
    replica_num_cpus: float = 0.0  # CPUs per Serve replica on a cluster (`semantica deploy`); 0 = conf/serve.yaml's
    snapshot_max_age_s: float = 0.0  # a replica whose newest snapshot is older fails its health check; 0 = no limit


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
class ServeSettings:
    """The serving sections of `Config`: the ingresses and the guards in front of them."""

    serve: ServeConfig = field(default_factory=ServeConfig)
    auth: AuthConfig = field(default_factory=AuthConfig)
    limits: LimitsConfig = field(default_factory=LimitsConfig)
    admission: AdmissionConfig = field(default_factory=AdmissionConfig)
    mcp: McpConfig = field(default_factory=McpConfig)
    daemon: DaemonConfig = field(default_factory=DaemonConfig)
