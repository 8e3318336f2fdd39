"""One entry for the graph ops, shared by the CLI (`semantica callers ...`) and `POST /v1/graph`.

Validates the request (op, name, depth, repos), answers from the current snapshots and names them.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from semantica.config import Config
from semantica.snapshot import SnapshotSet
from serving.graph_ops import GraphOps
from serving.structural import GraphOp

_NAME_MAX_CHARS = 1000


class GraphRequestError(ValueError):
    """The graph request itself is wrong (HTTP 422); the message lists what is valid."""


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

    def run(self, request: GraphRequest) -> dict[str, Any]:
        """The answer as a dict; UnknownNameError (a LookupError) when the name means nothing there."""
        op, depth = self.validate(request)
        names = request.repos or self.snapshots.repos()
        if not names:
            raise GraphRequestError("no repository is indexed yet: run `semantica index --repo PATH` first")
        snapshots = [self.snapshots.get(name) for name in names]  # UnknownRepoError for an unknown one
        start = time.perf_counter()
        result = self.ops.run(op, request.name.strip().strip("`").removesuffix("()"), snapshots, depth)
        answer = result.to_dict()
        answer["depth"] = depth
        answer["snapshots"] = {s.repo: s.snapshot_id for s in snapshots}
        answer["took_ms"] = round((time.perf_counter() - start) * 1000, 3)
        return answer
