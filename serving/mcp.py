"""The MCP adapter: Semantica's query stages as Model Context Protocol tools (official `mcp` SDK).

Every tool calls the same `SearchPipeline` the CLI and the HTTP API use (one pipeline, no second copy),
and `sync` calls the indexer injected by `jobs/mcp_cmd.py` (serving never imports pipelines). Each tool
has a typed input schema (its annotated parameters) and a typed output schema (a pydantic model from
`serving.mcp_models`); every answer carries the freshness of the snapshots it read.

Adding a tool is one `ToolSpec` in `SemanticaTools.specs()` (or one in `extra` passed to `build_server`):
the structural graph ops (`callers`, `callees`, `definition`, `references`) join that way when they land.
Bad arguments become a tool error (`isError: true`, a message saying what to fix), never a crash.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Annotated, Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import ToolAnnotations
from pydantic import Field

from semantica.api import SearchRequest
from semantica.config import Config
from semantica.layout import LayoutError
from semantica.source import GitError
from serving.graph_service import GraphRequest, GraphService
from serving.mcp_models import (
    ContextBlockOut,
    ContextOut,
    FileOut,
    FreshnessOut,
    GraphOut,
    HitOut,
    MapOut,
    RepoOut,
    ReposOut,
    SearchOut,
    StatusOut,
    SyncOut,
    freshness_list,
)
from serving.pipeline import SearchPipeline
from serving.planning.modes import SearchMode

Syncer = Callable[..., dict[str, Any]]  # (repo, path, ref, force) -> pipelines.sync.SyncResult.to_dict()
USER_ERRORS = (ValueError, LookupError, LayoutError, GitError, OSError)
INSTRUCTIONS = (
    "Semantica searches indexed git repositories (hybrid: embeddings + BM25 + symbols + code graph). "
    "Start with `search` to find code, `get_context` to get cited code for an answer, `list_repos` to see "
    "what is indexed. Every answer has `freshness`: when a repository is `stale`, call `sync` on it first."
)

Query = Annotated[str, Field(min_length=1, description="what to find: an identifier, a question, an error message")]
Repos = Annotated[list[str], Field(description="repository names from list_repos; empty = all")]
K = Annotated[int | None, Field(ge=1, description="number of hits (default from the server's conf)")]
Paths = Annotated[list[str], Field(description="only files matching these globs, e.g. ['src/**/*.py']")]
Languages = Annotated[list[str], Field(description="only these languages, e.g. ['python']")]
Branch = Annotated[str | None, Field(description="search this branch's snapshots (indexed with `index --ref`); "
                                                 "default: the default branch")]
Name = Annotated[str, Field(min_length=1, description="a bare, dotted (Class.method, module.func) or path::Qual.name")]
Mode = Annotated[str | None, Field(description="force a search mode: " + ", ".join(m.value for m in SearchMode)
                                               + " (default: the query planner picks one)")]
PrimaryRepo = Annotated[str | None, Field(description="the repository that gets most of k when `repos` names several "
                                                      "(default: the first named, else the best-scoring)")]
Depth = Annotated[int | None, Field(ge=1, description="transitive hops (default from conf; a maximum applies)")]
GRAPH_TOOLS = {
    "callers": "Functions whose bodies call NAME, each cited at the call line: 'who calls X / where is X used'.",
    "callees": "Functions NAME calls: 'what does X call'.",
    "definition": "Where NAME is defined.",
    "references": "Every use of NAME: calls, references, subclasses.",
    "implementations": "Subclasses of a class, or the overrides of a method.",
}
SyncRepo = Annotated[str | None, Field(description="an indexed repository name (re-sync from its recorded source)")]
SyncPath = Annotated[str | None, Field(description="a git checkout on the server's machine (index it, or re-index from it)")]
SyncRef = Annotated[str | None, Field(description="a branch or commit to index from git objects instead of the working tree")]
SyncForce = Annotated[bool, Field(description="re-index even when the snapshot is fresh")]


@dataclass
class ToolSpec:
    """One MCP tool: a typed function, its name and when an agent should use it."""

    name: str
    fn: Callable[..., Any]
    description: str
    read_only: bool = True


class SemanticaTools:
    """The tool functions over one `SearchPipeline` (and an injected syncer)."""

    def __init__(self, config: Config, pipeline: SearchPipeline, syncer: Syncer | None = None) -> None:
        self.config = config
        self.pipeline = pipeline
        self.syncer = syncer

    def specs(self) -> list[ToolSpec]:
        specs = [
            ToolSpec("search", self.search,
                     "Find code in the indexed repositories: functions, classes, docs ranked by relevance, each with "
                     "a `path:start-end` citation and its code, plus the files most worth opening. Use it first for "
                     "any 'where is / how does / what calls' question. Check `freshness[].stale`."),
            ToolSpec("get_context", self.get_context,
                     "Get the best-matching code for a question packed into one cited text block within a token "
                     "budget (deduplicated, each block under its `# path:start-end` citation). Use it when you need "
                     "code to read or quote in an answer rather than a ranked list."),
            ToolSpec("list_repos", self.list_repos,
                     "List the indexed repositories with their snapshot, commit, build time and source path. Use it "
                     "to learn which repository names `search` accepts."),
            ToolSpec("index_status", self.index_status,
                     "Tell whether each repository's index is fresh or stale compared with its source (working tree "
                     "files changed, or the branch moved), listing the changed files. Cheap: use it before trusting "
                     "answers about code you or others just edited."),
        ]
        specs += [ToolSpec(op, getattr(self, op), f"{what} Exact, from the code graph (not a similarity search), "
                           "each answer cited at `path:line` and marked with how it was resolved; `depth` > 1 "
                           "follows the edges transitively. Prefer it to `search` for these questions.")
                  for op, what in GRAPH_TOOLS.items()]
        specs.append(ToolSpec("repo_map", self.repo_map,  # serving/planning/repo_map.py
                              "A compact map of one repository for orienting yourself: its files ranked by personalised "
                              "PageRank over the code graph, seeded with the identifiers and paths in `query`, each "
                              "with its top symbols (line and signature), within a token budget."))
        if self.syncer is not None:
            specs.append(ToolSpec(
                "sync", self.sync,
                "Bring a repository's index up to date with its source (incremental: only changed files are "
                "re-parsed and re-embedded) and return what changed. Call it when `stale` is true or after editing "
                "files; with `path` it indexes a new repository. It does nothing when the index is already fresh "
                "unless `force` is true.", read_only=False))
        return specs

    # -- tools ----------------------------------------------------------------------------------

    def search(self, query: Query, repos: Repos = [], k: K = None, paths: Paths = [],  # noqa: B006 (schema defaults)
               languages: Languages = [], branch: Branch = None, mode: Mode = None,  # noqa: B006
               primary_repo: PrimaryRepo = None) -> SearchOut:
        response = self._search(SearchRequest(query=query, repos=self._names(repos, branch),
                                              k=k or self.config.query.default_k,
                                              path_globs=list(paths), languages=list(languages),
                                              mode=mode, primary_repo=primary_repo))
        lines = self.config.mcp.snippet_lines
        return SearchOut(
            query=response.query, intent=response.intent["dominant"],
            hits=[HitOut(rank=h.rank, repo=h.repo, path=h.path, start_line=h.start_line, end_line=h.end_line,
                         citation=h.citation, symbol=h.symbol, kind=h.kind, score=h.score,
                         content="\n".join(h.content.split("\n")[:lines])) for h in response.hits],
            files=[FileOut(**f) for f in response.files[: len(response.hits) or 1]],
            degraded=response.degraded, warnings=response.warnings,
            freshness=freshness_list(response.freshness), timings_ms=response.timings_ms, plan=response.plan,
        )

    def get_context(self, query: Query, repos: Repos = [], k: K = None,  # noqa: B006
                    token_budget: Annotated[int | None, Field(ge=1, description="max tokens of code (default from conf)")] = None,
                    paths: Paths = [], languages: Languages = [], branch: Branch = None) -> ContextOut:  # noqa: B006
        budget = token_budget or self.config.mcp.context_budget
        if budget > self.config.mcp.max_context_budget:
            raise ToolError(f"token_budget={budget} is above the maximum {self.config.mcp.max_context_budget}")
        response = self._search(SearchRequest(query=query, repos=self._names(repos, branch),
                                              k=k or self.config.query.default_k, path_globs=list(paths),
                                              languages=list(languages), context_budget=budget))
        context = response.context
        return ContextOut(
            query=response.query, text=context["text"],
            blocks=[ContextBlockOut(citation=b["citation"], repo=b["repo"], path=b["path"], start_line=b["start_line"],
                                    end_line=b["end_line"], tokens=b["tokens"]) for b in context["blocks"]],
            tokens_used=context["tokens_used"], budget=context["budget"], truncated=context["truncated"],
            freshness=freshness_list(response.freshness),
        )

    def repo_map(self, repo: Annotated[str, Field(min_length=1, description="a repository name from list_repos")],
                 query: Annotated[str, Field(description="what you are looking for (seeds the ranking)")] = "",
                 tokens: Annotated[int | None, Field(ge=1, description="token budget (default from conf)")] = None,
                 ) -> MapOut:
        from serving.planning.repo_map import RepoMapService

        service = RepoMapService(self.config, self.pipeline.snapshots, self.pipeline.ranking_hooks.mapper)
        answer = self._guard(lambda: service.run(repo, query, tokens))
        return MapOut(**{k: answer[k] for k in MapOut.model_fields})

    def list_repos(self) -> ReposOut:
        out = []
        for repo in self.pipeline.snapshots.repos():
            manifest = self._guard(lambda r=repo: self.pipeline.snapshots.get(r).manifest)
            source = manifest.source or {}
            out.append(RepoOut(repo=manifest.repo, snapshot_id=manifest.snapshot_id,
                               commit=source.get("commit") or manifest.commit, built_at=manifest.created,
                               files=manifest.counts.get("files", 0), chunks=manifest.counts.get("chunks", 0),
                               symbols=manifest.counts.get("symbols", 0), model=manifest.model_id,
                               source=source.get("kind", ""), path=source.get("path", ""), ref=source.get("ref", ""),
                               branch=source.get("branch", "")))
        return ReposOut(repos=out)

    def index_status(self, repo: Annotated[str | None, Field(description="one repository; omit for all")] = None
                     ) -> StatusOut:
        names = [repo] if repo else self.pipeline.snapshots.repos()
        return StatusOut(repos=[FreshnessOut(**self._guard(lambda n=n: self.pipeline.snapshots.get(n).freshness()).to_dict())
                                for n in names])

    def sync(self, repo: SyncRepo = None, path: SyncPath = None, ref: SyncRef = None, force: SyncForce = False) -> SyncOut:
        if self.syncer is None:
            raise ToolError("sync is not available on this server")
        if not repo and not path:
            raise ToolError("pass `repo` (an indexed repository) or `path` (a git checkout) to sync")
        return SyncOut(**self._guard(lambda: self.syncer(repo=repo, path=path, ref=ref, force=force)))

    def callers(self, name: Name, repos: Repos = [], depth: Depth = None) -> GraphOut:  # noqa: B006
        return self._graph("callers", name, repos, depth)

    def callees(self, name: Name, repos: Repos = [], depth: Depth = None) -> GraphOut:  # noqa: B006
        return self._graph("callees", name, repos, depth)

    def definition(self, name: Name, repos: Repos = []) -> GraphOut:  # noqa: B006
        return self._graph("defs", name, repos, None)

    def references(self, name: Name, repos: Repos = []) -> GraphOut:  # noqa: B006
        return self._graph("refs", name, repos, None)

    def implementations(self, name: Name, repos: Repos = []) -> GraphOut:  # noqa: B006
        return self._graph("impls", name, repos, None)

    # -- helpers --------------------------------------------------------------------------------

    def _graph(self, op: str, name: str, repos: list[str], depth: int | None) -> GraphOut:
        service = GraphService(self.config, self.pipeline.snapshots, self.pipeline.graph_ops)
        return GraphOut(**self._guard(lambda: service.run(GraphRequest(op, name, list(repos), depth))))

    def _names(self, repos: list[str], branch: str | None) -> list[str]:
        names = self.pipeline.snapshots.names_for(list(repos), branch)
        if branch and not names:
            raise ToolError(f"no repository has a snapshot of branch {branch!r}; index it with `semantica index --ref "
                            f"{branch}` (list_repos shows the branches)")
        return names

    def _search(self, request: SearchRequest) -> Any:
        return self._guard(lambda: self.pipeline.search(request))

    @staticmethod
    def _guard(fn: Callable[[], Any]) -> Any:
        """User mistakes (unknown repo, bad k, bad path, git errors) -> a ToolError the agent can act on."""
        try:
            return fn()
        except ToolError:
            raise
        except USER_ERRORS as exc:
            raise ToolError(str(exc)) from exc


def build_server(tools: SemanticaTools, extra: Sequence[ToolSpec] = ()) -> MCPServer:
    """An MCP server exposing `tools.specs()` plus `extra` (e.g. the graph ops)."""
    server = MCPServer(tools.config.mcp.name, instructions=INSTRUCTIONS)
    for spec in [*tools.specs(), *extra]:
        server.add_tool(spec.fn, name=spec.name, description=spec.description, structured_output=True,
                        annotations=ToolAnnotations(read_only_hint=spec.read_only, open_world_hint=False))
    return server
