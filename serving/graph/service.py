"""One entry for the graph ops, shared by the CLI (`semantica callers ...`) and `POST /v1/graph`.

Validates the request (op, name, depth, repos), answers from the current snapshots and names them, with their
freshness (the block every answer carries).
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from typing import Any

from semantica.config import Config
from semantica.errors import ErrorKind, public_message
from semantica.layout import RepoState
from semantica.ondisk.layout_errors import BrokenSnapshotError
from semantica.snapshot import SNAPSHOT_STAGE, RepoHealth, Snapshot, SnapshotSet, answer_freshness
from serving.graph.ops import GraphOps, SnapshotGraph
from serving.graph.structural import GraphOp

_NAME_MAX_CHARS = 1000
log = logging.getLogger(__name__)


class GraphRequestError(ValueError):
    """The graph request itself is wrong (HTTP 422); the message lists what is valid."""

    error_kind = ErrorKind.INVALID


@dataclass
class GraphRequest:
    """`op` one of GraphOp's values; `repos` empty = every indexed repository; `depth` None = conf default."""

    op: str
    name: str
    repos: list[str] = field(default_factory=list)
    depth: int | None = None


class GraphService:
    """Validate -> resolve the name in each snapshot -> exact answer, with the snapshots it came from."""

    def __init__(self, config: Config, snapshots: SnapshotSet | None = None, ops: GraphOps | None = None) -> None:
        self.config = config
        self.snapshots = snapshots or SnapshotSet(config)
        self.ops = ops or GraphOps()

    def validate(self, request: GraphRequest) -> tuple[GraphOp, int]:
        try:
            op = GraphOp.parse(request.op if isinstance(request.op, str) else "")
        except ValueError as exc:
            raise GraphRequestError(str(exc)) from None
        if not isinstance(request.name, str) or not request.name.strip() or len(request.name) > _NAME_MAX_CHARS:
            raise GraphRequestError(f"name must be a non-empty symbol or module name of at most {_NAME_MAX_CHARS} "
                                    "characters, e.g. `register_hook`, `Request.register_hook` or "
                                    "`requests/models.py::Request.register_hook`")
        depth = self.config.graph_ops.default_depth if request.depth is None else request.depth
        if isinstance(depth, bool) or not isinstance(depth, int) or not 1 <= depth <= self.config.graph_ops.max_depth:
            raise GraphRequestError(f"depth must be an integer from 1 to {self.config.graph_ops.max_depth}, got {depth!r}")
        if not isinstance(request.repos, list) or not all(isinstance(r, str) for r in request.repos):
            raise GraphRequestError("repos must be a list of repository names")
        return op, depth

    def _graphs(self, names: list[str] | None) -> tuple[list[Snapshot], list[SnapshotGraph], list[RepoHealth]]:
        """The snapshots that can answer and their graphs; a broken one is skipped and reported, as search
        does (UnknownRepoError for a named repository that does not exist)."""
        opened, broken = self.snapshots.resolve(names)
        snapshots: list[Snapshot] = []
        graphs: list[SnapshotGraph] = []
        for snapshot in opened:
            try:
                graphs.append(self.ops.graph(snapshot))
                snapshots.append(snapshot)
            except Exception as exc:  # one unreadable table never fails the others' answer
                log.warning("graph of %r cannot be read", snapshot.repo, exc_info=True)
                broken.append(RepoHealth(snapshot.repo, RepoState.BROKEN, snapshot.snapshot_id,
                                         error=public_message(exc)))
        if graphs:
            return snapshots, graphs, broken
        if broken:
            raise BrokenSnapshotError("no asked repository can answer: " +
                                      "; ".join(f"{h.repo!r}: {h.error}" for h in broken))
        raise GraphRequestError("no repository is indexed yet: run `semantica index --repo PATH` first")

    def run(self, request: GraphRequest) -> dict[str, Any]:
        """The answer as a dict; UnknownNameError (a LookupError) when the name means nothing there."""
        op, depth = self.validate(request)
        snapshots, graphs, broken = self._graphs(request.repos or None)
        start = time.perf_counter()
        result = self.ops.run_graphs(op, request.name.strip().strip("`").removesuffix("()"), graphs, depth)
        answer = result.to_dict()
        answer["depth"] = depth
        answer["snapshots"] = {s.repo: s.snapshot_id for s in snapshots}
        answer["degraded"] = [{"stage": SNAPSHOT_STAGE, "repo": h.repo, "error": h.error} for h in broken]
        answer["took_ms"] = round((time.perf_counter() - start) * 1000, 3)
        answer["freshness"] = answer_freshness(self.config, snapshots)  # after took_ms: the check is not the answer's
        return answer
