"""Decomposition: an issue-length query (a bug report mixing prose, tracebacks, code and names) split
into sub-queries, each aimed at one retriever's strength.

Rule-based and cheap (no LLM):

- **frames**: stack-trace frames (`File "x.py", line N, in f`, pytest's `x.py:N: in f`, Java/JS `at f(x:N)`),
  innermost first: the file and function the failure went through are the strongest signal a report holds;
- **errors**: exception lines (`ValueError: ...`, pytest's `E   ValueError: ...`), last first: the message
  text is often literally in the code that raises it;
- **paths**: file paths named in the prose;
- **identifiers**: the CamelCase / snake_case / dotted names (from the intent's expansions);
- **calls**: the functions and methods the report's own code calls (fenced blocks, `>>>` / `In [n]:`
  prompts), builtins and the snippet's own definitions dropped: a reproduction calls the API that broke,
  and plain lowercase names (`latex`, `trigsimp`) are not identifiers to the intent's expansions;
- **gist**: the prose without code blocks and tracebacks, so the dense retriever's 256-token window
  sees the words rather than the stack.

Frames and paths are looked up in the snapshot directly (`serving/planning/direct.py`); the rest go
through the retrievers. Thresholds live in `planning.decompose` (semantica/config/planning.py).
"""

from __future__ import annotations

import builtins
import keyword
from dataclasses import dataclass, field

from semantica.config import DecomposeConfig
from semantica.runtime import linear_regex
from semantica.schema import ParsableEnum
from serving.core.intent import MAX_INTENT_CHARS, IntentResult


class SubQueryKind(ParsableEnum):
    """What part of the query a sub-query came from (its weight in `planning.decompose.weights`)."""

    IDENTIFIERS = "identifiers"
    CALLS = "calls"
    ERROR = "error"
    FRAME = "frame"
    PATH = "path"
    GIST = "gist"


DIRECT_KINDS = frozenset({SubQueryKind.FRAME, SubQueryKind.PATH})
"""Kinds resolved by lookup in the snapshot, not by a retriever."""

MAX_SCAN_CHARS = 4 * MAX_INTENT_CHARS
"""Only this many leading characters are scanned for frames and errors (caps the work on huge queries)."""

# caps on what each sub-query kind takes from the report (constants of the split, not per-deployment settings)
MAX_FRAMES = 8  # stack frames, innermost first
MAX_ERRORS = 2  # exception lines, last first
MAX_PATHS = 6  # file paths the query names, beyond the frames' own
MAX_IDENTIFIERS = 8  # identifiers in the identifiers sub-query
MAX_CALLS = 8  # names the report's code calls, in the calls sub-query
ERROR_MAX_CHARS = 300  # an exception line is cut here
GIST_MAX_CHARS = 1200  # the prose gist is cut here
GIST_MIN_WORDS = 4  # a prose line has at least this many words (shorter lines are headings or noise)

_PY_FRAME = linear_regex.compile(r'File "(?P<path>[^"\n]+)", line (?P<line>\d{1,7})(?:, in (?P<func>[\w<>.]+))?')
_PYTEST_FRAME = linear_regex.compile(r"(?m)^\s*(?P<path>[\w./\\-]+\.py):(?P<line>\d{1,7}):(?: in (?P<func>[\w<>.]+))?")
_AT_FRAME = linear_regex.compile(r"\bat (?:(?P<func>[\w.$<>]+) \(|(?P<jfunc>[\w.$<>]+)\()"
                                 r"(?P<path>[\w./\\-]+\.\w{1,5}):(?P<line>\d{1,7})(?::\d{1,7})?\)")
_ERROR_LINE = linear_regex.compile(
    r"(?m)^(?:E\s+|\s*)(?P<exc>(?:[A-Za-z_]\w*\.)*[A-Z]\w*(?:Error|Exception|Warning|Exit|Failure|Interrupt))"
    r"(?::[ \t]*(?P<msg>[^\n]*))?[ \t]*$")
_FENCE = linear_regex.compile(r"^\s*(```|~~~)")
_WORD = linear_regex.compile(r"[A-Za-z][A-Za-z'-]*")
_CODE_LINE = linear_regex.compile(r"^\s*(>>>|\.\.\.\s|\$ |#|@|def |class |import |from \S+ import |return |raise |E\s{2})"
                                  r"|[{};]\s*$|^\s+\S")
_PROMPT = linear_regex.compile(r"^\s*(?:>>>\s?|\.\.\.\s|In \[\d{1,5}\]:\s?)")
_CALL = linear_regex.compile(r"(?P<name>\w+)\s*\(")  # a whole word then `(`; also `.method(`: a dot is not \w
_CALL_NAME = linear_regex.compile(r"[A-Za-z_]\w+")
MAX_CALL_NAME_CHARS = 61
_DEFINED = linear_regex.compile(r"(?m)^\s*(?:def|class)\s+(?P<name>[A-Za-z_]\w*)|^\s*(?P<var>[A-Za-z_]\w*)\s*=(?:[^=]|$)")
_NOT_CALLS = frozenset(dir(builtins)) | frozenset(keyword.kwlist) | {"self", "cls", "super", "main"}
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
    """One piece of the query: text for the retrievers, or a frame/path for direct lookup."""

    kind: SubQueryKind
    text: str
    frames: list[Frame] = field(default_factory=list)  # FRAME: innermost first
    paths: list[str] = field(default_factory=list)  # PATH

    @property
    def direct(self) -> bool:
        return self.kind in DIRECT_KINDS

    def to_dict(self) -> dict[str, object]:
        out: dict[str, object] = {"kind": self.kind.value, "text": self.text}
        if self.frames:
            out["frames"] = [f.describe() for f in self.frames]
        if self.paths:
            out["paths"] = list(self.paths)
        return out


class QueryDecomposer:
    """`decompose(query, intent)` -> sub-queries; [] when the query is short and holds no traceback."""

    def __init__(self, config: DecomposeConfig) -> None:
        self.config = config
        for kind in (*config.weights, *config.strategies):
            SubQueryKind.parse(kind)  # a typo in conf fails here, listing the valid kinds

    def is_issue(self, query: str) -> bool:
        """Issue-length, or short but holding a stack trace."""
        return len(query) >= self.config.min_query_chars or bool(self.frames(query[:MAX_SCAN_CHARS]))

    def wanted(self, query: str) -> bool:
        return self.config.enabled and self.is_issue(query)

    def decompose(self, query: str, intent: IntentResult) -> list[SubQuery]:
        if not self.wanted(query):
            return []
        text = query[:MAX_SCAN_CHARS]
        out: list[SubQuery] = []
        frames = self.frames(text)[:MAX_FRAMES]
        if frames:
            out.append(SubQuery(SubQueryKind.FRAME, "; ".join(f.describe() for f in frames), frames=frames))
        for error in self.errors(text)[:MAX_ERRORS]:
            out.append(SubQuery(SubQueryKind.ERROR, error))
        frame_paths = {f.path for f in frames}
        paths = [p for p in intent.expansions.paths if p not in frame_paths][:MAX_PATHS]
        if paths:
            out.append(SubQuery(SubQueryKind.PATH, " ".join(paths), paths=paths))
        identifiers = intent.expansions.symbols[:MAX_IDENTIFIERS]
        if identifiers:
            out.append(SubQuery(SubQueryKind.IDENTIFIERS, " ".join(identifiers)))
        calls = self.calls(text)[:MAX_CALLS]
        if calls:
            out.append(SubQuery(SubQueryKind.CALLS, " ".join(calls)))
        gist = self.gist(text)
        if gist and gist.strip() != query.strip():
            out.append(SubQuery(SubQueryKind.GIST, gist))
        return [s for s in out if self.weight(s.kind) > 0]

    def weight(self, kind: SubQueryKind) -> float:
        return float(self.config.weights.get(kind.value, 0.0))

    # -- the pieces (public: tests and `--explain` read them) -------------------------------------

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

    def errors(self, text: str) -> list[str]:
        """Exception lines, last first (the one that surfaced), each cut at `ERROR_MAX_CHARS`."""
        lines = []
        for match in _ERROR_LINE.finditer(text):
            message = (match.group("msg") or "").strip()
            line = f"{match.group('exc')}: {message}" if message else match.group("exc")
            lines.append(line[: ERROR_MAX_CHARS])
        return list(dict.fromkeys(reversed(lines)))

    @staticmethod
    def code_lines(text: str) -> list[str]:
        """The report's code: REPL prompt lines anywhere (prompt stripped), and every line of a fenced
        block without prompts (in a block with prompts, the other lines are the interpreter's output)."""
        code: list[str] = []
        block: list[str] | None = None
        for line in text.splitlines():
            if _FENCE.match(line):
                if block is not None:
                    code.extend(_block_code(block))
                block = None if block is not None else []
                continue
            if block is not None:
                block.append(line)
            elif _PROMPT.match(line):
                code.append(_PROMPT.sub("", line, count=1))
        return code + _block_code(block or [])  # an unclosed fence still counts

    @staticmethod
    def calls(text: str) -> list[str]:
        """Names the report's code calls, in order of first call: builtins, keywords and the names the
        snippet defines or assigns itself are dropped (they are the reporter's, not the library's)."""
        code = "\n".join(QueryDecomposer.code_lines(text))
        own = {m.group("name") or m.group("var") for m in _DEFINED.finditer(code)}
        names = [m.group("name") for m in _CALL.finditer(code) 
                 if len(m.group("name")) <= MAX_CALL_NAME_CHARS and _CALL_NAME.fullmatch(m.group("name"))]
        return list(dict.fromkeys(n for n in names if n not in _NOT_CALLS and n not in own))

    def gist(self, text: str) -> str:
        """The prose lines (outside code fences, tracebacks and code-looking lines), up to `GIST_MAX_CHARS`."""
        kept: list[str] = []
        in_fence = False
        in_trace = False
        size = 0
        for line in text.splitlines():
            if _FENCE.match(line):
                in_fence = not in_fence
                continue
            if "Traceback (most recent call last)" in line:
                in_trace = True
                continue
            if in_trace:  # a traceback runs until its exception line
                in_trace = not _ERROR_LINE.match(line)
                continue
            if in_fence or _CODE_LINE.search(line) or _PY_FRAME.search(line):
                continue
            if len(_WORD.findall(line)) < GIST_MIN_WORDS:
                continue
            kept.append(line.strip())
            size += len(line)
            if size >= GIST_MAX_CHARS:
                break
        return " ".join(kept)[: GIST_MAX_CHARS]


def _block_code(block: list[str]) -> list[str]:
    """A fenced block's code: its prompt lines (prompt stripped) if it has any, else every line."""
    prompted = [_PROMPT.sub("", line, count=1) for line in block if _PROMPT.match(line)]
    return prompted or block


def _frame(path: str, line: str, func: str | None) -> Frame:
    function = func or ""
    if function in _GENERIC_FUNCS:
        function = ""
    return Frame(path=path.replace("\\", "/"), line=int(line), function=function)
