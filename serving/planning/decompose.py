"""Decomposition: an issue-length query's stack-trace frames (`File "x.py", line N, in f`, pytest's
`x.py:N: in f`, Java/JS `at f(x:N)`), innermost first, as one sub-query: the file and function the failure
went through are the strongest signal a report holds.

Rule-based and cheap (no LLM). The frames are looked up in the snapshot directly
(`serving/planning/direct.py`) and fused into the lists `planning.decompose.direct_into` names with
`planning.decompose.frame_weight` (semantica/config/planning.py). Other kinds (exception lines, paths,
identifiers, calls, the prose gist) were measured and left off (lab/README.md, "Query planning").
"""

from __future__ import annotations

from dataclasses import dataclass, field

from semantica.config import DecomposeConfig
from semantica.runtime import linear_regex
from semantica.schema import ParsableEnum
from serving.core.intent import MAX_INTENT_CHARS


class SubQueryKind(ParsableEnum):
    """What part of the query a sub-query came from (the kind mined lists record)."""

    FRAME = "frame"


MAX_SCAN_CHARS = 4 * MAX_INTENT_CHARS
"""Only this many leading characters are scanned for frames (caps the work on huge queries)."""
MAX_FRAMES = 8  # stack frames, innermost first

_PY_FRAME = linear_regex.compile(r'File "(?P<path>[^"\n]+)", line (?P<line>\d{1,7})(?:, in (?P<func>[\w<>.]+))?')
_PYTEST_FRAME = linear_regex.compile(r"(?m)^\s*(?P<path>[\w./\\-]+\.py):(?P<line>\d{1,7}):(?: in (?P<func>[\w<>.]+))?")
_AT_FRAME = linear_regex.compile(r"\bat (?:(?P<func>[\w.$<>]+) \(|(?P<jfunc>[\w.$<>]+)\()"
                                 r"(?P<path>[\w./\\-]+\.\w{1,5}):(?P<line>\d{1,7})(?::\d{1,7})?\)")
_GENERIC_FUNCS = frozenset({"<module>", "<lambda>", "<listcomp>", "<dictcomp>", "<genexpr>", "main"})


@dataclass(frozen=True)
class Frame:
    """One stack frame: where the failure passed (path as written in the trace)."""

    path: str
    line: int
    function: str = ""

    def describe(self) -> str:
        return f"{self.path}:{self.line}" + (f" in {self.function}" if self.function else "")


@dataclass
class SubQuery:
    """The query's frames, for direct lookup in the snapshot."""

    kind: SubQueryKind
    text: str
    frames: list[Frame] = field(default_factory=list)  # innermost first

    def to_dict(self) -> dict[str, object]:
        return {"kind": self.kind.value, "text": self.text, "frames": [f.describe() for f in self.frames]}


class QueryDecomposer:
    """`decompose(query)` -> the frame sub-query; [] when the query holds no stack frame (or it is off)."""

    def __init__(self, config: DecomposeConfig) -> None:
        self.config = config

    def decompose(self, query: str) -> list[SubQuery]:
        if not self.config.enabled or self.config.frame_weight <= 0:
            return []
        frames = self.frames(query[:MAX_SCAN_CHARS])[:MAX_FRAMES]
        if not frames:
            return []
        return [SubQuery(SubQueryKind.FRAME, "; ".join(f.describe() for f in frames), frames=frames)]

    @staticmethod
    def frames(text: str) -> list[Frame]:
        """Frames innermost first (a Python traceback lists the innermost last), deduplicated."""
        found: list[tuple[int, Frame]] = []
        for match in _PY_FRAME.finditer(text):
            found.append((match.start(), _frame(match.group("path"), match.group("line"), match.group("func"))))
        for match in _PYTEST_FRAME.finditer(text):
            found.append((match.start(), _frame(match.group("path"), match.group("line"), match.group("func"))))
        for match in _AT_FRAME.finditer(text):
            func = match.group("func") or match.group("jfunc") or ""
            found.append((-match.start(), _frame(match.group("path"), match.group("line"), func.rsplit(".", 1)[-1])))
        # Python/pytest: innermost is last, so reverse; Java/JS (`at`): innermost is first (negated positions)
        ordered = [f for _, f in sorted(found, key=lambda item: -item[0])]
        return list(dict.fromkeys(ordered))


def _frame(path: str, line: str, func: str | None) -> Frame:
    function = func or ""
    if function in _GENERIC_FUNCS:
        function = ""
    return Frame(path=path.replace("\\", "/"), line=int(line), function=function)
