"""What the fronts publish, in one light table (no imports): the HTTP routes and the MCP tools, each with
what it does. The FastAPI app and the MCP server are built from these names (tests check them against the
live route and tool lists) and `semantica serve --help` / `semantica mcp --help` print them, so no help
text or document can name fewer routes or tools than the server has."""

from __future__ import annotations

ROUTES = {
    "/v1/search": "POST: hybrid search with a cited context",
    "/v1/grep": "POST: exact or regex search (ripgrep's switches)",
    "/v1/graph": "POST: callers, callees, definitions, references, implementations, imports",
    "/v1/feedback": "POST: which hits were useful (and knowledge votes)",
    "/v1/repos": "GET: the published repositories with their snapshot, commit and freshness",
    "/healthz": "GET: ok, degraded, unavailable or draining",
    "/metrics": "GET: Prometheus metrics (a token that reads every repository)",
    "/v1/map": "POST: a ranked map of one repository",
    "/v1/knowledge": "GET: list or search knowledge entries; POST: add one; GET /v1/knowledge/{id}: one entry",
    "/v1/plan": "POST: plan an index-batch manifest (what would be indexed)",
}
"""Path -> its methods and purpose; `/docs` and `/openapi.json` document them."""

_GRAPH = (" Exact, from the code graph (not a similarity search); each answer cited at `path:line` with how it "
          "was resolved. Prefer it to `search` for this question.")
_DEPTH = " `depth` > 1 follows the edges transitively."
TOOLS = {
    "search": "Find code: functions, classes and docs ranked by relevance, each with its `path:start-end` citation "
              "and code, plus the files most worth opening. Use it first for 'where is / how does' questions. "
              "Check `freshness.<repo>.stale`.",
    "get_context": "The best-matching code for a question packed into one cited text block within a token budget. "
                   "Use it for code to read or quote rather than a ranked list.",
    "grep": "Exact or regex (RE2) search like ripgrep: every line holding `pattern`, by path and line, with 1-based "
            "line and byte column. Use it for a known string, identifier or error message.",
    "list_repos": "The indexed repositories with snapshot, commit, build time and source: the names other tools take.",
    "index_status": "Whether each repository's index is fresh or stale against its source, with the changed files. "
                    "Cheap: use it before trusting answers about code just edited.",
    "callers": "Functions whose bodies call NAME, cited at the call line." + _GRAPH + _DEPTH,
    "callees": "Functions NAME calls." + _GRAPH + _DEPTH,
    "definition": "Where NAME is defined." + _GRAPH,
    "references": "Every use of NAME: calls, references, subclasses." + _GRAPH,
    "implementations": "Subclasses of a class, or the overrides of a method." + _GRAPH,
    "repo_map": "A compact map of one repository: files ranked by PageRank over the code graph seeded with `query`, "
                "each with its top symbols, within a token budget.",
    "knowledge_search": "The team's knowledge entries (decisions, rules, facts, how-tos) with trust, source and "
                        "verification. Use it to check a rule before changing the code it is about.",
    "knowledge_propose": "Propose a knowledge entry you learned. It is a candidate, used only after a person "
                         "approves it; evidence counts only when it exists in the repository (a commit, path, "
                         "symbol or test id).",
    "plan": "Dry run before indexing: what `sync`/`index` would read and skip (and why: ignored, vendored, "
            "generated, binary, huge), files and bytes by language, estimated chunks, embedding time and index size, "
            "and warnings for lockfiles, build artifacts and data dumps. Loads no model. Use it before syncing a new "
            "or large repository.",
    "sync": "Bring a repository's index up to date with its source (incremental) and return what changed; with "
            "`path`, index a new repository. Call it when `stale` is true or after editing files. Absent on a "
            "read-only server.",
}
"""Tool name -> the description an agent reads (the MCP server's tool list, in this order)."""
WRITE_TOOLS = ("knowledge_propose", "sync")
"""Tools that change state (annotated not read-only)."""
COMMAND_TOOLS = ("plan",)
"""Tools `semantica mcp` adds itself (they run the indexer's planner, which serving never imports)."""
