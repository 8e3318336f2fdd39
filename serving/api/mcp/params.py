"""Typed arguments of the MCP tools: each annotated type becomes part of a tool's `inputSchema` (the
outputs are `serving.api.mcp.models`), with the description an agent reads to fill it."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from serving.planning.modes import SearchMode

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
Depth = Annotated[int | None, Field(ge=1, description="transitive hops (default from conf; a maximum applies)")]
SyncRepo = Annotated[str | None, Field(description="an indexed repository name (re-sync from its recorded source)")]
SyncPath = Annotated[str | None, Field(description="a git checkout on the server's machine (index it, or re-index from it)")]
SyncRef = Annotated[str | None, Field(description="a branch or commit to index from git objects instead of the working tree")]
SyncForce = Annotated[bool, Field(description="re-index even when the snapshot is fresh")]
BudgetTokens = Annotated[int | None, Field(ge=1, description="hard cap on this answer's size in tokens (the encoder's "
                                                             "WordPiece tokenizer over the whole JSON answer): items are "
                                                             "packed in rank order and `next_cursor` fetches the rest")]
Cursor = Annotated[str | None, Field(description="`next_cursor` of an earlier answer to the same call: continue it")]
