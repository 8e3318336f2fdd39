"""`POST /v1/plan`: `semantica plan` for an index-batch manifest sent as the request body.

Serving never imports `pipelines`, so the route plans through the CLI's JSON contract: it writes the body
as a manifest and the server's config as YAML, and runs `semantica plan --manifest FILE --json` in a child
process. The plan is therefore the CLI's by construction (the same discovery `index-batch` runs); the
child is killed at the route's deadline (`plan.http_timeout_s`: a plan outlasts a search's
`admission.deadline_s`, and a thread could not be killed); and git's walk over a large repository stays
out of the server's memory. What the body may name is checked here first, so a bad entry is a quick 422
and never a child process: a `path` must be an absolute git checkout or bare repository (under
`plan.http_roots` when set), a `url` needs a scheme in `plan.http_url_schemes` (none by default: a clone
over HTTP is the operator's choice).
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

import serving
from semantica.config import ENV_PREFIX, Config, config_to_dict
from serving.api.http.errors import DeadlineExceeded, Forbidden, NotFound, Unprocessable
from serving.api.http.security import check_repo_name

log = logging.getLogger("semantica.http.plan")
CLI_ERROR_PREFIX = "semantica plan: error: "
PROJECT_ROOT = Path(serving.__file__).resolve().parent.parent
"""Put on the child's PYTHONPATH: it runs the same code as this server."""


class PlanEntry(BaseModel):
    """One manifest entry (conf/repos.yaml's format); over HTTP its `name` is required (the scope check)."""

    model_config = ConfigDict(extra="forbid")
    name: str = Field(description="repository name, as `index-batch` would publish it")
    path: str | None = Field(default=None, description="a git checkout or bare repository on the server")
    url: str | None = Field(default=None, description="a remote repository (only with `plan.http_url_schemes`)")
    commit: str | None = Field(default=None, description="plan this commit (default: the working tree / HEAD)")
    branch: str | None = None
    refs: list[str] = Field(default_factory=list, description="branches: one plan each, as NAME@BRANCH")
    include: list[str] = Field(default_factory=list, description="globs on the path or file name")
    exclude: list[str] = Field(default_factory=list, description="globs on the path or file name")

    @field_validator("name")
    @classmethod
    def _valid_name(cls, name: str) -> str:
        check_repo_name(name)  # refused here, as every body's names; planned as written
        return name

    @model_validator(mode="after")
    def _one_source(self) -> PlanEntry:
        if bool(self.path) == bool(self.url):
            raise ValueError("give exactly one of `path` and `url`")
        return self

    def manifest(self) -> dict[str, Any]:
        return self.model_dump(exclude_none=True, exclude_defaults=True) | {"name": self.name}


class PlanBody(BaseModel):
    """An index-batch manifest (`{repos: [...]}`, as in conf/repos.yaml) to plan."""

    model_config = ConfigDict(extra="forbid")
    repos: list[PlanEntry] = Field(min_length=1, description="the manifest's entries")
    files: bool = Field(default=False, description="also list every file that would be indexed")


class PlanAnswer(BaseModel):
    repos: list[dict[str, Any]] = Field(description="per repository (pipelines/plan.py `RepoPlan`): files, bytes, "
                                                    "languages, skipped (by kind, with reasons), top included and "
                                                    "excluded directories, estimate, warnings, included")


class PlanRefused(Unprocessable):
    error_name = "PlanError"


class PlanPathForbidden(Forbidden):
    """A path outside `plan.http_roots`: the server does not read there for HTTP callers (403)."""

    error_name = "PlanError"


class PlanPathNotFound(NotFound):
    """An absolute path where no repository is: nothing there to plan (404), which no schema can rule out."""

    error_name = "PlanError"


class HttpPlanner:
    """Checks a plan body against what the server lets HTTP callers read, then runs the CLI's plan."""

    def __init__(self, config: Config) -> None:
        self.config = config
        self.roots = [Path(r).resolve() for r in config.plan.http_roots]
        self.schemes = tuple(f"{s}://" for s in config.plan.http_url_schemes)

    def plan(self, body: PlanBody) -> dict[str, Any]:
        for number, entry in enumerate(body.repos):
            self._check(entry, f"repos[{number}]")
        plans = self._run([entry.manifest() for entry in body.repos])
        for answer in plans:
            answer["included"] = answer.get("included", []) if body.files else []
        return {"repos": plans}

    def _check(self, entry: PlanEntry, where: str) -> None:
        if entry.url is not None:
            if not entry.url.startswith(self.schemes):
                allowed = ", ".join(self.config.plan.http_url_schemes) or "none (plan.http_url_schemes is empty)"
                raise PlanRefused(f"{where}.url: this server plans urls with these schemes only: {allowed}")
            return
        path = Path(entry.path or "")
        if not path.is_absolute():
            raise PlanRefused(f"{where}.path: give an absolute path on the server")
        real = path.resolve()
        if self.roots and not any(real == root or root in real.parents for root in self.roots):
            raise PlanPathForbidden(f"{where}.path: outside the directories this server plans (plan.http_roots)")
        if not ((real / ".git").exists() or (real / "HEAD").is_file()):
            raise PlanPathNotFound(f"{where}.path: not a git checkout or bare repository on the server")

    def _run(self, entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
        timeout = self.config.plan.http_timeout_s
        with tempfile.TemporaryDirectory(prefix="semantica-plan-") as scratch:
            manifest, conf = Path(scratch) / "repos.yaml", Path(scratch) / "config.yaml"
            manifest.write_text(yaml.safe_dump({"repos": entries}))
            conf.write_text(yaml.safe_dump(config_to_dict(self.config)))
            command = [sys.executable, "-m", "jobs.cli", "plan", "--manifest", str(manifest), "--json",
                       "--config", str(conf)]
            try:
                done = subprocess.run(command, capture_output=True, timeout=timeout, check=False, cwd=scratch,
                                      env=_child_environment())
            except subprocess.TimeoutExpired:
                raise DeadlineExceeded(f"the plan did not finish within plan.http_timeout_s={timeout}s") from None
        if done.returncode == 0:
            return json.loads(done.stdout)
        stderr = done.stderr.decode("utf-8", "replace").strip().splitlines()
        last = stderr[-1] if stderr else ""
        if last.startswith(CLI_ERROR_PREFIX):  # a failure the CLI explains: the manifest's fault
            raise PlanRefused(last[len(CLI_ERROR_PREFIX):])
        log.error("semantica plan exited %s: %s", done.returncode, "\n".join(stderr[-20:]))
        raise PlanCrashed(f"semantica plan exited {done.returncode}")


def _child_environment() -> dict[str, str]:
    """This environment, less the config overrides (the config file written for the child is the whole
    config), with this server's code first on the import path."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(ENV_PREFIX)}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(PROJECT_ROOT), env.get("PYTHONPATH", "")) if p)
    return env


class PlanCrashed(RuntimeError):
    """The plan's child process failed without a message (a bug): a 500 with a reference."""

