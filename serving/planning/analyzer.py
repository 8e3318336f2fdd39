"""Query analysis without an LLM: cheap features, then a rule-based choice of search mode.

Bounded work: only `planning.analyzer.max_chars` leading characters are read and every pattern runs on
RE2 (`semantica.runtime.linear_regex`), linear in the text whatever it holds.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from semantica.config import PlanningConfig
from semantica.runtime import linear_regex
from serving.core.intent import FILE_EXTENSIONS
from serving.planning.modes import SearchMode

_WORD = linear_regex.compile(r"\S+")
_ALPHA_WORD = linear_regex.compile(r"[A-Za-z][A-Za-z']*")
_TOKEN = linear_regex.compile(r"[A-Za-z_][\w.:/-]*")
_SNAKE = linear_regex.compile(r"^_*[A-Za-z0-9]+(?:_+[A-Za-z0-9]+)+_*$|^__\w+__$|^_+[A-Za-z][A-Za-z0-9]*$")
_CAMEL = linear_regex.compile(r"^_?[A-Za-z][a-z0-9]*(?:[A-Z]+[a-z0-9]*)+$")
_DOTTED = linear_regex.compile(r"^[A-Za-z_]\w*(?:(?:\.|::)[A-Za-z_]\w*)+$")
_BACKTICKS = linear_regex.compile(r"`{1,3}([^`]+)`{1,3}")
_TRACE_FRAMES = (
    linear_regex.compile(r'File "[^"\n]+", line \d+'),  # Python
    linear_regex.compile(r"\bat [\w.$<>]+\([\w.]+:\d+\)"),  # Java
    linear_regex.compile(r"\bat [^\s()]+ \([^()\n]+:\d+:\d+\)"),  # JavaScript
    linear_regex.compile(r"(?m)^\s*\S+\.go:\d+"),  # Go
)
_PATH = linear_regex.compile(r"[\w.-]*(?:/[\w.-]+)+|[\w-]+\.[A-Za-z0-9]{1,8}\b")
_PUNCT = ".,;:!?()[]{}'\"<>"
FORCED = "forced by the request"
MIN_BARE_PATH_PARTS = 3
"""A path without a file extension needs this many segments (`and/or`, `input/output` are words)."""

# the mode rules' thresholds (StrategySelector.select, first match wins): constants of the rules, not per-deployment settings
MIN_TRACE_FRAMES = 1  # this many stack-trace frames -> lexical_heavy
QUOTED_MAX_WORDS = 30  # quoted code in an issue-length text is one clue among many, not the target
EXACT_MAX_WORDS = 3  # a query of at most this many words, all identifiers -> exact_vector
MIN_PATHS = 1  # this many file paths -> lexical_heavy
LEXICAL_IDENTIFIER_SHARE = 0.5  # identifiers at least this share of the words -> lexical_heavy
KEYWORD_BAG_MIN_WORDS = 2  # a stop-word-free bag of this many words ...
KEYWORD_BAG_MAX_WORDS = 6  # ... up to this many ...
KEYWORD_BAG_MIN_DENSITY = 1.0  # ... with at least this share of non-stop words -> lexical_heavy
DIVERSE_MAX_WORDS = 20  # a breadth marker in an issue-length text says nothing
VECTOR_MIN_WORDS = 6  # prose of this many words without identifiers -> vector_heavy
# breadth markers that select mmr_diverse (matched as whole lower-case words)
DIVERSE_MARKERS = ("all", "every", "each", "examples", "overview", "various", "different", "kinds of", "ways to", "list of")
# English function words: a query's share of other words is its keyword density
STOP_WORDS = frozenset((
    "a", "an", "the", "is", "are", "was", "were", "be", "been", "of", "to", "in", "on", "at", "for", "by", "with",
    "from", "and", "or", "not", "it", "this", "that", "these", "those", "there", "do", "does", "did", "i", "we",
    "you", "my", "our", "me", "can", "could", "should", "would", "will", "when", "where", "what", "which", "who",
    "how", "why", "if", "then", "so", "as", "into", "about", "any", "some", "all", "get", "gets", "use", "used",
))


@dataclass
class QueryFeatures:
    """What the analyzer saw (recorded in the plan's `why`)."""

    chars: int
    words: int
    identifiers: list[str] = field(default_factory=list)
    quoted_code: int = 0
    trace_frames: int = 0
    paths: list[str] = field(default_factory=list)
    keyword_density: float = 0.0  # share of plain words that are not stop words

    @property
    def identifier_share(self) -> float:
        return len(self.identifiers) / self.words if self.words else 0.0

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["identifier_share"] = round(self.identifier_share, 3)
        out["keyword_density"] = round(self.keyword_density, 3)
        return out


@dataclass
class ModeChoice:
    """The selected mode and the rule that decided it."""

    mode: SearchMode
    why: str
    features: QueryFeatures


class QueryAnalyzer:
    """`analyze(query)` -> `QueryFeatures`."""

    def __init__(self, config: PlanningConfig) -> None:
        self.config = config.analyzer

    def analyze(self, query: str) -> QueryFeatures:
        text = query[: self.config.max_chars]
        words = _WORD.findall(text)
        identifiers: dict[str, None] = {}
        paths: dict[str, None] = {}
        for raw in words:
            token = raw.strip(_PUNCT)
            if is_path(token):
                paths[token] = None
            elif is_identifier(token):
                identifiers[token] = None
        for match in _PATH.finditer(text):
            if is_path(match.group(0)):
                paths.setdefault(match.group(0), None)
        plain = [w.lower() for w in _ALPHA_WORD.findall(text)]
        content = [w for w in plain if w not in STOP_WORDS]
        return QueryFeatures(
            chars=len(query), words=len(words), identifiers=list(identifiers),
            quoted_code=sum(1 for m in _BACKTICKS.finditer(text) if m.group(1).strip()),
            trace_frames=sum(len(p.findall(text)) for p in _TRACE_FRAMES),
            paths=list(paths), keyword_density=len(content) / len(plain) if plain else 0.0,
        )


def is_identifier(token: str) -> bool:
    """snake_case, camelCase / PascalCase with an inner capital, or dotted (`a.b`, `A::b`)."""
    if not token or len(token) > 256:
        return False
    return bool(_SNAKE.match(token) or _CAMEL.match(token) or (_DOTTED.match(token) and not is_path(token)))


def is_path(token: str) -> bool:
    """A file path: has a `/` and a file-like last segment, or ends with a known file extension."""
    if not token or len(token) > 512 or "://" in token:
        return False
    last = token.rsplit("/", 1)[-1]
    suffix = last.rsplit(".", 1)[-1].lower() if "." in last else ""
    if suffix in FILE_EXTENSIONS:
        return True
    parts = token.strip("/").split("/")
    return len(parts) >= MIN_BARE_PATH_PARTS and all(parts)  # `a/b/c`; `and/or` is no path


class StrategySelector:
    """`select(features)` -> `ModeChoice` by the rules above (first match wins; `planning.analyzer.enabled` off: hybrid)."""

    def __init__(self, config: PlanningConfig) -> None:
        self.config = config

    def select(self, query: str, f: QueryFeatures, forced: SearchMode | None = None) -> ModeChoice:
        if forced is not None:
            return self._choice(forced, FORCED, f)
        if not self.config.analyzer.enabled:
            return self._choice(SearchMode.HYBRID, "analyzer off (planning.analyzer.enabled)", f)
        ids = len(f.identifiers)
        if f.trace_frames >= MIN_TRACE_FRAMES:
            return self._choice(SearchMode.LEXICAL_HEAVY, f"{f.trace_frames} stack-trace frame(s)", f)
        if f.quoted_code and f.words <= QUOTED_MAX_WORDS:
            return self._choice(SearchMode.EXACT_VECTOR, f"{f.quoted_code} quoted code span(s)", f)
        if ids and f.words <= EXACT_MAX_WORDS and ids + len(f.paths) >= f.words:
            return self._choice(SearchMode.EXACT_VECTOR, f"{f.words} word(s), all identifiers: {f.identifiers}", f)
        if len(f.paths) >= MIN_PATHS:
            return self._choice(SearchMode.LEXICAL_HEAVY, f"file path(s) {f.paths[:3]}", f)
        if ids and f.identifier_share >= LEXICAL_IDENTIFIER_SHARE:
            return self._choice(SearchMode.LEXICAL_HEAVY,
                                f"identifier share {f.identifier_share:.2f} >= {LEXICAL_IDENTIFIER_SHARE}", f)
        if (not ids and KEYWORD_BAG_MIN_WORDS <= f.words <= KEYWORD_BAG_MAX_WORDS
                and f.keyword_density >= KEYWORD_BAG_MIN_DENSITY):
            return self._choice(SearchMode.LEXICAL_HEAVY,
                                f"keyword bag: {f.words} words, keyword density {f.keyword_density:.2f}", f)
        marker = self._marker(query) if f.words <= DIVERSE_MAX_WORDS else ""
        if marker:
            return self._choice(SearchMode.MMR_DIVERSE, f"breadth marker {marker!r}", f)
        if not ids and f.words >= VECTOR_MIN_WORDS:
            return self._choice(SearchMode.VECTOR_HEAVY, f"prose: {f.words} words, no identifier", f)
        return self._choice(SearchMode.HYBRID, "no rule matched", f)

    def _marker(self, query: str) -> str:
        text = f" {' '.join(_ALPHA_WORD.findall(query[: self.config.analyzer.max_chars].lower()))} "
        return next((m for m in DIVERSE_MARKERS if f" {m} " in text), "")

    def _choice(self, mode: SearchMode, why: str, f: QueryFeatures) -> ModeChoice:
        return ModeChoice(mode, why, f)

