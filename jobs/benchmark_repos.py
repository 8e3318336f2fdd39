"""Which repositories are SWE-bench's or Multi-SWE-bench's: never in a training corpus, never training a shipped model.

Dependency-free on purpose: `semantica train-encoder` checks its pairs with it on a GPU machine that has
none of the indexing stack's packages.
"""

from __future__ import annotations

SWEBENCH_PROJECTS = ("astropy", "django", "matplotlib", "seaborn", "flask", "requests", "xarray", "pylint",
                     "pytest", "scikit-learn", "sphinx", "sympy")
"""The twelve SWE-bench repositories' project names: never in a training corpus."""
SWEBENCH_OWNERS = ("astropy", "django", "matplotlib", "mwaskom", "pydata", "pylint-dev", "pytest-dev",
                   "scikit-learn", "sphinx-doc", "sympy", "psf/requests", "pallets/flask")
"""Their owners (organisations), or owner/name where the owner also hosts allowed projects."""
DEV_SPLIT_REPOS = frozenset({"psf/requests", "pallets/flask", "pytest-dev/pytest", "sphinx-doc/sphinx", "sympy/sympy"})
"""The five repositories of the SWE-bench Lite dev split this project measures on."""
MULTI_SWE_BENCH_REPOS = frozenset({
    "alibaba/fastjson2", "apache/dubbo", "elastic/logstash", "fasterxml/jackson-core", "fasterxml/jackson-databind",
    "fasterxml/jackson-dataformat-xml", "google/gson", "googlecontainertools/jib", "mockito/mockito",
    "anuraghazra/github-readme-stats", "axios/axios", "expressjs/express", "iamkun/dayjs", "kong/insomnia",
    "sveltejs/svelte", "darkreader/darkreader", "mui/material-ui", "vuejs/core", "cli/cli", "grpc/grpc-go",
    "zeromicro/go-zero", "burntsushi/ripgrep", "clap-rs/clap", "nushell/nushell", "rayon-rs/rayon", "serde-rs/serde",
    "sharkdp/bat", "sharkdp/fd", "tokio-rs/bytes", "tokio-rs/tokio", "tokio-rs/tracing", "facebook/zstd", "jqlang/jq",
    "ponylang/ponyc", "catchorg/catch2", "fmtlib/fmt", "nlohmann/json", "simdjson/simdjson", "yhirose/cpp-httplib"})
"""The 39 repositories of Multi-SWE-bench (lowercase owner/name): never in a training corpus. Refused by name only,
so other projects of their owners (serde-rs/json, tokio-rs/mio, google/guice) may train."""


def is_benchmark_repo(repo: str) -> bool:
    """True for any SWE-bench repository or a repository of their organisations, and for any Multi-SWE-bench
    repository (case-insensitive, `owner+name` and `.git` spellings included)."""
    name = repo.strip().lower().removesuffix(".git").replace("+", "/")
    if name in MULTI_SWE_BENCH_REPOS:
        return True
    owner, _, project = name.partition("/")
    if project in SWEBENCH_PROJECTS or owner in SWEBENCH_PROJECTS:
        return True
    return any(name == o or owner == o for o in SWEBENCH_OWNERS)
