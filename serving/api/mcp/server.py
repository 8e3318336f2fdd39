"""The MCP adapter: Semantica's query stages as Model Context Protocol tools (official `mcp` SDK).

Every tool calls the same `SearchPipeline` the CLI and the HTTP API use (one pipeline, no second copy),
and `sync` calls the indexer injected by `jobs/mcp_cmd.py` (serving never imports pipelines). Each tool
has a typed input schema (its annotated parameters) and a typed output schema (a pydantic model from
`serving.api.mcp.models`); every answer carries the freshness of the snapshots it read, keyed by repository.

Adding a tool is one `ToolSpec` in `SemanticaTools.specs()` (or one in `extra` passed to `build_server`):
the structural graph ops (`callers`, `callees`, `definition`, `references`) join that way when they land.
Bad arguments become a tool error (`isError: true`, a message saying what to fix), never a crash.

Long because every tool is a method here with its typed parameters (the SDK reads the schema from the signature),
and the budgeted ones share one packer and cursor binding: not split, since one class is the one place the tool
contract lives.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Annotated, Any

import anyio.to_thread
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_PARAMS, CallToolResult, TextContent, ToolAnnotations
from pydantic import BaseModel, Field

from semantica.api import SearchRequest
from semantica.config import Config
from semantica.errors import ErrorKind, local_kind_of
from semantica.ondisk.repo_names import normalize_repo_name
from semantica.runtime import observability
from semantica.runtime.token_count import TokenCounter
from serving.api.catalog import COMMAND_TOOLS, TOOLS, WRITE_TOOLS
from serving.api.mcp.budget import (
    BudgetPacker,
    BudgetTooSmall,
    CursorCodec,
    InvalidCursor,
    StaleCursor,
    render,
)
from serving.api.mcp.models import (
    ContextBlockOut,
    ContextOut,
    FileOut,
    FreshnessOut,
    GraphOut,
    GrepMatchOut,
    GrepOut,
    HitOut,
    KnowledgeOut,
    MapOut,
    ProposedOut,
    RepoOut,
    ReposOut,
    SearchOut,
    StatusOut,
    SyncOut,
    freshness_of,
)
from serving.api.mcp.params import (
    Branch,
    BudgetTokens,
    Cursor,
    Depth,
    K,
    Languages,
    Mode,
    Name,
    Paths,
    Query,
    Repos,
    SyncForce,
    SyncPath,
    SyncRef,
    SyncRepo,
)
from serving.api.request import RequestBuilder
from serving.graph.service import GraphRequest, GraphService
from serving.pipeline import SearchPipeline

Syncer = Callable[..., dict[str, Any]]  # (repo, path, ref, force) -> pipelines.sync.SyncResult.to_dict()


def is_user_error(exc: BaseException) -> bool:
    """A mistake the agent can act on (its kind in `semantica.errors`' table, not a bug): a tool error."""
    kind = local_kind_of(exc)
    return kind is not None and kind is not ErrorKind.INTERNAL


INSTRUCTIONS = (
    "Semantica searches indexed git repositories (hybrid: embeddings + BM25 + symbols + code graph). "
    "Start with `search` to find code, `get_context` to get cited code for an answer, `list_repos` to see "
    "what is indexed. Every answer has `freshness`: when a repository is `stale`, call `sync` on it first."
)


@dataclass
class ToolSpec:
    """One MCP tool: a typed function, its name and when an agent should use it."""

    name: str
    fn: Callable[..., Any]
    description: str
    read_only: bool = True
    idempotent: bool = True  # the same call twice leaves the same state (sync: the second finds it fresh)
    destructive: bool = False  # sync replaces a snapshot, but keeps the previous one: additive, not destructive


class SemanticaTools:
    """The tool functions over one `SearchPipeline` (and an injected syncer)."""

    def __init__(self, config: Config, pipeline: SearchPipeline, syncer: Syncer | None = None) -> None:
        self.config = config
        self.pipeline = pipeline
        self.syncer = syncer
        self.cursors = CursorCodec()
        self.requests = RequestBuilder(pipeline.snapshots)
        self.packer = BudgetPacker(TokenCounter(config.encoder.model_path), self.cursors)

    def specs(self) -> list[ToolSpec]:
        """One spec per tool of `serving.api.catalog.TOOLS` (its description, in its order) but those the command
        adds (`COMMAND_TOOLS`); `sync` only with a syncer."""
        return [ToolSpec(name, getattr(self, name), description, read_only=name not in WRITE_TOOLS)
                for name, description in TOOLS.items()
                if name not in COMMAND_TOOLS and (name != "sync" or self.syncer is not None)]

    # -- tools ----------------------------------------------------------------------------------

    def search(self, query: Query, repos: Repos = [], k: K = None, paths: Paths = [],  # noqa: B006 (schema defaults)
               languages: Languages = [], branch: Branch = None, mode: Mode = None,  # noqa: B006
               budget_tokens: BudgetTokens = None, cursor: Cursor = None) -> SearchOut:
        key = self.cursors.key({"query": query, "repos": repos, "k": k, "paths": paths, "languages": languages,
                                "branch": branch, "mode": mode})
        offset = self._offset("search", key, cursor)
        response = self._search(self._request(SearchRequest, branch, query=query, repos=repos, k=k, path_globs=paths,
                                              languages=languages, mode=mode))
        snapshots = self._bound(cursor, response.snapshots)
        lines = self.config.mcp.snippet_lines
        full = SearchOut(
            query=response.query, intent=response.intent["dominant"],
            hits=[HitOut(rank=h.rank, repo=h.repo, path=h.path, start_line=h.start_line, end_line=h.end_line,
                         citation=h.citation, symbol=h.symbol, kind=h.kind, score=h.score,
                         content="\n".join(h.content.split("\n")[:lines])) for h in response.hits],
            files=[FileOut(**f) for f in response.files[: len(response.hits) or 1]],
            degraded=response.degraded, warnings=response.warnings,
            freshness=freshness_of(response.freshness), timings_ms=response.timings_ms, plan=response.plan,
        )
        if budget_tokens is None and offset == 0:
            return full

        def answer(hits: list[dict[str, Any]], next_cursor: str | None) -> SearchOut:
            shown = {(h["repo"], h["path"]) for h in hits}
            return full.model_copy(update={
                "hits": [HitOut(**h) for h in hits], "files": [f for f in full.files if (f.repo, f.path) in shown],
                "next_cursor": next_cursor, "budget_tokens": budget_tokens})

        return self._pack("search", key, offset, budget_tokens, [h.model_dump() for h in full.hits], answer, "content",
                          snapshots)

    def get_context(self, query: Query, repos: Repos = [], k: K = None,  # noqa: B006
                    paths: Paths = [], languages: Languages = [], branch: Branch = None,  # noqa: B006
                    budget_tokens: BudgetTokens = None, cursor: Cursor = None) -> ContextOut:
        """Always packed: `budget_tokens` (default `mcp.context_budget`) caps the whole answer, as for `search`."""
        key = self.cursors.key({"query": query, "repos": repos, "k": k, "paths": paths, "languages": languages,
                                "branch": branch})
        offset = self._offset("get_context", key, cursor)
        budget = budget_tokens or self.config.mcp.context_budget
        if budget > self.config.mcp.max_context_budget:
            raise ToolError(f"budget_tokens={budget} is above the maximum {self.config.mcp.max_context_budget}")
        # the pipeline packs the whole k hits (its largest budget): `budget_tokens` cuts them once, here, so a
        # small budget's cursor pages through the same blocks one large call returns
        response = self._search(self._request(SearchRequest, branch, query=query, repos=repos, k=k, path_globs=paths,
                                              languages=languages, context_budget=self.config.mcp.max_context_budget),
                                "get_context")
        snapshots = self._bound(cursor, response.snapshots)
        context = response.context
        code = "\n\n".join(f"# {b['citation']}\n{b['text']}" for b in context["blocks"])
        lead, knowledge = knowledge_lead(context["text"].removesuffix(code).rstrip("\n"), context.get("knowledge", []),
                                         int(budget * self.config.knowledge.max_context_share), self.packer.counter)
        full = ContextOut(
            query=response.query, text=context["text"],
            blocks=[ContextBlockOut(citation=b["citation"], repo=b["repo"], path=b["path"], start_line=b["start_line"],
                                    end_line=b["end_line"], tokens=b["tokens"]) for b in context["blocks"]],
            tokens_used=context["tokens_used"], budget=budget, truncated=context["truncated"],
            freshness=freshness_of(response.freshness), knowledge=knowledge,
        )

        whole = {b["text"]: b["tokens"] for b in context["blocks"]}

        def tokens(block: dict[str, Any]) -> int:
            """A block's tokens; one the packer cut to fit is counted again (its lines are fewer)."""
            known = whole.get(block["text"])
            return known if known is not None else self.packer.counter.count(block["citation"]) + \
                self.packer.counter.count(block["text"])

        def answer(blocks: list[dict[str, Any]], next_cursor: str | None) -> ContextOut:
            code_text = "\n\n".join(f"# {b['citation']}\n{b['text']}" for b in blocks)
            counted = [{**b, "tokens": tokens(b)} for b in blocks]
            return full.model_copy(update={
                "text": "\n\n".join(t for t in (lead, code_text) if t),
                "blocks": [ContextBlockOut(**{f: b[f] for f in ContextBlockOut.model_fields}) for b in counted],
                "tokens_used": sum(b["tokens"] for b in counted), "next_cursor": next_cursor,
                "truncated": full.truncated or next_cursor is not None, "budget_tokens": budget})

        return self._pack("get_context", key, offset, budget, [dict(b) for b in context["blocks"]], answer, "text",
                          snapshots)

    def grep(self, pattern: Annotated[str, Field(description="a fixed string, or with regex=true an RE2 regex")],
             regex: Annotated[bool, Field(description="pattern is a regular expression (RE2 syntax)")] = False,
             ignore_case: Annotated[bool, Field(description="case-insensitive (rg -i)")] = False,
             word: Annotated[bool, Field(description="whole words only (rg -w)")] = False,
             paths: Paths = [], repos: Repos = [], branch: Branch = None,  # noqa: B006
             context: Annotated[int, Field(ge=0, description="lines before and after each match (rg -C)")] = 0,
             max_count: Annotated[int | None, Field(ge=1, description="matching lines in the whole answer")] = None,
             budget_tokens: BudgetTokens = None, cursor: Cursor = None) -> GrepOut:
        from serving.retrievers.exact import ExactSearcher, GrepRequest

        key = self.cursors.key({"pattern": pattern, "regex": regex, "ignore_case": ignore_case, "word": word,
                                "paths": paths, "repos": repos, "branch": branch, "context": context,
                                "max_count": max_count})
        offset = self._offset("grep", key, cursor)
        searcher = ExactSearcher(self.config, self.pipeline.snapshots)
        request = self._request(GrepRequest, branch, pattern=pattern, regex=regex, ignore_case=ignore_case, word=word,
                                path_globs=paths, context=context, repos=repos, max_count=max_count)
        with observability.span("mcp grep"):
            response = self._guard(lambda: searcher.search(request))
        full = GrepOut(matches=[GrepMatchOut(**vars(m)) for m in response.matches], truncated=response.truncated,
                       freshness=freshness_of(response.freshness), snapshots=response.snapshots,
                       degraded=response.degraded, warnings=response.warnings, took_ms=response.took_ms,
                       note=response.note)
        snapshots = self._bound(cursor, response.snapshots)
        if budget_tokens is None and offset == 0:
            return full

        def answer(matches: list[dict[str, Any]], next_cursor: str | None) -> GrepOut:
            return full.model_copy(update={"matches": [GrepMatchOut(**m) for m in matches], "next_cursor": next_cursor,
                                           "budget_tokens": budget_tokens})

        return self._pack("grep", key, offset, budget_tokens, [m.model_dump() for m in full.matches], answer, "text",
                          snapshots)

    def repo_map(self, repo: Annotated[str, Field(min_length=1, description="a repository name from list_repos")],
                 query: Annotated[str, Field(description="what you are looking for (seeds the ranking)")] = "",
                 budget_tokens: BudgetTokens = None, cursor: Cursor = None) -> MapOut:
        """Always packed: `budget_tokens` (default `repo_map.default_tokens`) caps the whole answer."""
        from serving.planning.repo_map import RepoMapService

        key = self.cursors.key({"repo": repo, "query": query})
        offset = self._offset("repo_map", key, cursor)
        budget = budget_tokens or self.config.repo_map.default_tokens
        if budget > self.config.repo_map.max_tokens:
            raise ToolError(f"budget_tokens={budget} is above the maximum {self.config.repo_map.max_tokens}")
        service = RepoMapService(self.config, self.pipeline.snapshots, self.pipeline.ranking_hooks.mapper)
        # the map at its largest budget: `budget_tokens` cuts it once, here, so a small budget's cursor pages
        # through the files one large call returns
        result = self._guard(lambda: service.run(repo, query, self.config.repo_map.max_tokens))
        full = MapOut(**{k: result[k] for k in MapOut.model_fields if k in result})
        snapshots = self._bound(cursor, {full.repo: full.snapshot})
        sections = _map_sections(full.text)
        count = self.packer.counter.count

        def answer(files: list[dict[str, Any]], next_cursor: str | None) -> MapOut:
            text = "\n".join(_map_section(sections, f) for f in files)
            return full.model_copy(update={
                "files": files, "text": text, "tokens": sum(count(line) for line in text.split("\n")),
                "budget": budget, "next_cursor": next_cursor, "budget_tokens": budget})

        return self._pack("repo_map", key, offset, budget, list(full.files), answer, "symbols", snapshots)

    def list_repos(self) -> ReposOut:
        out = []
        for repo in self.pipeline.snapshots.repos():
            manifest = self._guard(lambda r=repo: self.pipeline.snapshots.get(r).manifest)
            source = manifest.source or {}
            out.append(RepoOut(repo=manifest.repo, snapshot_id=manifest.snapshot_id,
                               commit=manifest.built_commit, dirty=manifest.built_dirty, built_at=manifest.created,
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

    async def sync(self, repo: SyncRepo = None, path: SyncPath = None, ref: SyncRef = None, force: SyncForce = False,
                   ctx: Context | None = None) -> SyncOut:
        """Progress notifications (when the client sent a progress token): 0/1 when indexing starts, 1/1 at the end."""
        syncer = self.syncer
        if syncer is None:
            raise ToolError("sync is not available on this server")
        if not repo and not path:
            raise ToolError("pass `repo` (an indexed repository) or `path` (a git checkout) to sync")
        if ctx is not None:
            await ctx.report_progress(0, 1, f"syncing {repo or path}")
        out = await anyio.to_thread.run_sync(
            lambda: SyncOut(**self._guard(lambda: syncer(repo=repo, path=path, ref=ref, force=force))))
        if ctx is not None:
            await ctx.report_progress(1, 1, out.reason)
        return out

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

    def knowledge_search(self, query: Annotated[str, Field(description="words to find; empty = the most trusted")] = "",
                         repos: Repos = [],  # noqa: B006
                         status: Annotated[list[str], Field(description="active (default), candidate, review, retired")] = [],  # noqa: B006
                         limit: Annotated[int, Field(ge=1, le=200)] = 20) -> KnowledgeOut:
        from serving.knowledge.entry import Status

        service = self.pipeline.knowledge.service
        statuses = self._guard(lambda: tuple(Status.parse(s) for s in status)) or (Status.ACTIVE,)
        entries = self._guard(lambda: service.list(list(repos) or None, statuses, query, limit))
        return KnowledgeOut(entries=[e.to_dict() for e in entries], threshold=self.config.knowledge.threshold)

    def knowledge_propose(self, title: Annotated[str, Field(min_length=1)], text: Annotated[str, Field(min_length=1)],
                          repo: Annotated[str, Field(description="the repository it is about; '' = global")] = "",
                          kind: Annotated[str, Field(description="decision | rule | fact | how-to")] = "fact",
                          paths: Paths = [], symbols: Annotated[list[str], Field(description="symbols it is about")] = [],  # noqa: B006
                          evidence: Annotated[list[str], Field(description="commits, tests, files that back it")] = [],  # noqa: B006
                          source_ref: Annotated[str, Field(description="who you are / the question you answered")] = "",
                          ) -> ProposedOut:
        service = self.pipeline.knowledge.service
        if repo and service.snapshot_index(self._guard(lambda: normalize_repo_name(repo))) is None:
            raise ToolError(f"repository {repo!r} has no published snapshot: propose knowledge about an indexed "
                            "repository (list_repos), or '' for the global store")
        result = self._guard(lambda: service.add(repo, {
            "title": title, "text": text, "kind": kind, "paths": list(paths), "symbols": list(symbols),
            "evidence": list(evidence), "source_kind": "agent", "source_ref": source_ref}, actor="mcp"))
        return ProposedOut(**result.to_dict())

    # -- helpers --------------------------------------------------------------------------------

    def _offset(self, tool: str, key: str, cursor: str | None) -> int:
        """Where a continuation starts; a cursor not issued for this call is a JSON-RPC invalid-params error."""
        if cursor is None:
            return 0
        try:
            return self.cursors.decode(cursor, tool, key)
        except InvalidCursor as exc:
            raise MCPError(INVALID_PARAMS, str(exc)) from None

    def _bound(self, cursor: str | None, snapshots: dict[str, str]) -> str:
        """The digest of the snapshots this answer read; a cursor issued for other snapshots (the index was
        rebuilt since) is a tool error saying to search again: its offsets would skip what the new one added."""
        if cursor is not None:
            try:
                self.cursors.check_snapshots(self.cursors.snapshots_of(cursor), snapshots)
            except StaleCursor as exc:
                raise ToolError(str(exc)) from None
        return self.cursors.snapshots_key(snapshots)

    def _pack(self, tool: str, key: str, offset: int, budget: int | None, items: list[dict[str, Any]],
              answer: Callable[[list[dict[str, Any]], str | None], BaseModel], trim_field: str,
              snapshots: str = "") -> Any:
        """`answer` over the rank-order prefix of `items[offset:]` that fits `budget` tokens, with a cursor
        bound to the arguments and to the `snapshots` read."""
        try:
            packed = self.packer.pack(items, offset, budget, lambda kept, c: render(answer(kept, c)),
                                      lambda at: self.cursors.encode(tool, key, at, snapshots), trim_field)
        except InvalidCursor as exc:
            raise MCPError(INVALID_PARAMS, str(exc)) from None
        except BudgetTooSmall as exc:
            raise ToolError(str(exc)) from None
        following = packed.next_offset
        return answer(packed.items,
                      self.cursors.encode(tool, key, following, snapshots) if following is not None else None)

    def _graph(self, op: str, name: str, repos: list[str], depth: int | None) -> GraphOut:
        service = GraphService(self.config, self.pipeline.snapshots, self.pipeline.graph_ops)
        request = self._request(GraphRequest, None, op=op, name=name, repos=repos, depth=depth)
        return GraphOut(**self._guard(lambda: service.run(request)))

    def _request(self, request_type: type[Any], branch: str | None, **values: Any) -> Any:
        """The front's one conversion: its arguments (lists copied) through the shared `RequestBuilder`."""
        copied = {name: list(v) if isinstance(v, list | tuple) else v for name, v in values.items()}
        return self._guard(lambda: self.requests.build(request_type, copied, branch))

    def _search(self, request: SearchRequest, tool: str = "search") -> Any:
        with observability.span(f"mcp {tool}"):  # the request span the stage spans nest under
            return self._guard(lambda: self.pipeline.search(request))

    @staticmethod
    def _guard(fn: Callable[[], Any]) -> Any:
        """User mistakes (unknown repo, bad k, bad path, git errors) -> a ToolError the agent can act on."""
        try:
            return fn()
        except ToolError:
            raise
        except Exception as exc:
            if not is_user_error(exc):
                raise
            raise ToolError(str(exc)) from exc


def knowledge_lead(lead: str, entries: list[dict[str, Any]], limit: int,
                   counter: TokenCounter) -> tuple[str, list[dict[str, Any]]]:
    """The knowledge entries (best first) that fit `limit` tokens, and their text before the code: the share of
    `budget_tokens` the pipeline gives them (`knowledge.max_context_share`), kept by this answer's own budget."""
    starts: list[int] = []
    for entry in entries:  # each entry's text starts with its header line, in the listed order
        starts.append(lead.index(f"# {entry['citation']} [", starts[-1] if starts else 0))
    texts = [lead[start:end].rstrip("\n") for start, end in zip(starts, [*starts[1:], len(lead)])]
    kept: list[tuple[dict[str, Any], str]] = []
    used = 0
    for entry, text in zip(entries, texts):
        tokens = counter.count(text)
        if used + tokens <= limit:
            kept.append((entry, text))
            used += tokens
    return "\n\n".join(text for _, text in kept), [entry for entry, _ in kept]


def _map_sections(text: str) -> dict[str, str]:
    """A repo map's text by file: each section starts at its unindented `path:` line."""
    sections: dict[str, list[str]] = {}
    current: list[str] = []
    for line in text.split("\n"):
        if line and not line.startswith(" ") and line.endswith(":"):
            current = sections.setdefault(line[:-1], [])
        current.append(line)
    return {path: "\n".join(lines) for path, lines in sections.items()}


def _map_section(sections: dict[str, str], file: dict[str, Any]) -> str:
    """A file's section, cut to the symbols `file` keeps (a trimmed file keeps its first symbols)."""
    lines = sections.get(file["path"], f"{file['path']}:").split("\n")
    return "\n".join(lines[: 1 + len(file.get("symbols") or [])])


def _compact_result(result: Any) -> Any:
    if not isinstance(result, BaseModel):
        return result
    return CallToolResult(content=[TextContent(type="text", text=render(result))],
                          structured_content=result.model_dump(mode="json"))


def compact(fn: Callable[..., Any]) -> Callable[..., Any]:
    """`fn` answering its model as compact JSON text (the SDK's default indents it, ~17% more tokens than what
    `budget_tokens` counts); the output schema still comes from `fn`'s annotation (`functools.wraps`)."""
    if inspect.iscoroutinefunction(fn):
        @functools.wraps(fn)
        async def run_async(*args: Any, **kwargs: Any) -> Any:
            return _compact_result(await fn(*args, **kwargs))
        return run_async

    @functools.wraps(fn)
    def run(*args: Any, **kwargs: Any) -> Any:
        return _compact_result(fn(*args, **kwargs))
    return run


def untitled(schema: Any) -> Any:
    """A JSON schema without its `title` annotations: pydantic titles each model and field with its own name
    again, tokens an agent pays on every tool list for nothing it did not already read (a property named
    `title` stays: it is a key of `properties`, not an annotation)."""
    if isinstance(schema, dict):
        return {key: untitled(value) for key, value in schema.items() if not (key == "title" and isinstance(value, str))}
    if isinstance(schema, list):
        return [untitled(value) for value in schema]
    return schema


class SemanticaServer(MCPServer):
    """The SDK's server, listing its tools' input and output schemas `untitled`."""

    async def list_tools(self) -> list[Any]:
        return [tool.model_copy(update={"input_schema": untitled(tool.input_schema),
                                        "output_schema": untitled(tool.output_schema)})
                for tool in await super().list_tools()]


def build_server(tools: SemanticaTools, extra: Sequence[ToolSpec] = ()) -> MCPServer:
    """An MCP server exposing `tools.specs()` plus `extra` (e.g. the graph ops)."""
    observability.configure(tools.config.observability)  # traces / JSON logs when conf turns them on
    server = SemanticaServer(tools.config.mcp.name, instructions=INSTRUCTIONS)
    for spec in [*tools.specs(), *extra]:
        server.add_tool(compact(spec.fn), name=spec.name, description=spec.description, structured_output=True,
                        annotations=ToolAnnotations(title=spec.name.replace("_", " "), read_only_hint=spec.read_only,
                                                    destructive_hint=spec.destructive, idempotent_hint=spec.idempotent,
                                                    open_world_hint=False))
    return server
