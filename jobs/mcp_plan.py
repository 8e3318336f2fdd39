"""The MCP `plan` tool: `semantica plan` for an agent. It lives on the jobs side and is injected into the
server (`serving` never imports `pipelines`); its annotations must resolve at module level for the SDK."""

from __future__ import annotations

from typing import Annotated

from mcp.server.mcpserver.exceptions import ToolError
from pydantic import Field

from pipelines.discover import repo_name_from_path
from pipelines.manifest import ManifestError, RepoSpec, load_manifest
from pipelines.plan import IndexPlanner
from pipelines.source_files import DiscoveryError
from semantica.config import Config
from serving.api.catalog import TOOLS
from serving.api.mcp.models import PlanOut
from serving.api.mcp.server import ToolSpec

PlanPath = Annotated[str | None, Field(description="a git checkout on the server's machine")]
PlanManifest = Annotated[str | None, Field(description="an index-batch manifest file on the server")]
PlanCommit = Annotated[str | None, Field(description="plan this commit of `path` (default: the working tree)")]
PlanFiles = Annotated[bool, Field(description="also list every file that would be indexed")]
DESCRIPTION = TOOLS["plan"]


def plan_tool(config: Config) -> ToolSpec:
    planner = IndexPlanner(config)

    def plan(path: PlanPath = None, manifest: PlanManifest = None, commit: PlanCommit = None,
             files: PlanFiles = False) -> PlanOut:
        if bool(path) == bool(manifest):
            raise ToolError("pass exactly one of `path` (a checkout) or `manifest` (an index-batch manifest)")
        try:
            specs = load_manifest(manifest) if manifest else [
                RepoSpec(name=repo_name_from_path(path or ""), path=path or "", commit=commit or "")]
            plans = [p.to_dict() for p in planner.plan_many(specs)]
        except (DiscoveryError, ManifestError, OSError, RuntimeError, ValueError) as exc:
            raise ToolError(str(exc)) from exc
        for answer in plans:
            answer["included"] = answer["included"] if files else []
        return PlanOut(repos=plans)

    return ToolSpec("plan", plan, DESCRIPTION)
