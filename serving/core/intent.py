"""Rule-based query intent: five soft probabilities plus identifier/path/module expansions.

Each intent gets a raw score from simple, cheap patterns (the weights are `SIGNAL_WEIGHTS`);
`balanced` starts from `IntentConfig.base_score`. The scores go through a softmax with
`IntentConfig.temperature`. Work is capped: only the first `MAX_INTENT_CHARS` characters are read
and every candidate token is at most `MAX_TOKEN_CHARS` long, so a 100,000-character query costs
the same as a 4,000-character one. No regular expression here can backtrack super-linearly.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from semantica.config import IntentConfig
from semantica.runtime import linear_regex
from semantica.schema import ParsableEnum

MAX_INTENT_CHARS = 4000
"""Only this many leading characters of a query are classified (caps the work)."""
MAX_TOKEN_CHARS = 256
"""Candidate tokens longer than this are ignored (no identifier or path is that long)."""
SHORT_QUERY_WORDS = 3
"""A query of at most this many identifier-looking words is treated as a symbol lookup."""
NATURAL_LANGUAGE_MIN_WORDS = 4
"""A query of at least this many plain words (and no identifiers or code) reads as a sentence."""

SIGNAL_WEIGHTS: dict[str, float] = {
    # symbol
    "symbol_identifier": 1.5,       # each CamelCase / snake_case / dotted identifier (first two)
    "symbol_definition": 1.0,       # `def X`, `class X`, `where is X defined`, ...
    "symbol_short_query": 1.5,      # a short query made only of identifiers
    "symbol_bare_word": 1.0,        # a single plain word, e.g. `tokenize`
    # flow
    "flow_phrase": 2.5,             # first flow phrase ("who calls", "call chain", ...)
    "flow_extra_phrase": 0.5,       # each further one
    # concept
    "concept_opening": 2.0,         # how / why / what is / explain ...
    "concept_sentence": 1.0,        # plain natural-language sentence
    "concept_question_mark": 0.5,
    # code
    "code_call_syntax": 1.0,        # `name(`
    "code_operator": 1.0,           # = == -> => { } ; ...
    "code_keyword": 0.75,           # return, import, lambda, await ...
    "code_traceback": 2.5,          # Traceback / File "x", line N / SomethingError:
    "code_multiline": 1.0,
}


class Intent(ParsableEnum):
    """What the query is after."""

    SYMBOL = "symbol"
    FLOW = "flow"
    CONCEPT = "concept"
    CODE = "code"
    BALANCED = "balanced"


INTENTS: tuple[Intent, ...] = tuple(Intent)
# argmax ties resolve in this order (balanced first: when unsure, do not specialise)
_TIE_ORDER: tuple[Intent, ...] = (
    Intent.BALANCED, Intent.SYMBOL, Intent.FLOW, Intent.CODE, Intent.CONCEPT,
)


@dataclass
class Expansions:
    """Names found in the query, used to boost hits whose symbol or path matches."""

    symbols: list[str] = field(default_factory=list)
    paths: list[str] = field(default_factory=list)
    modules: list[str] = field(default_factory=list)

    def is_empty(self) -> bool:
        return not (self.symbols or self.paths or self.modules)


@dataclass
class IntentResult:
    """Soft intent (probabilities over all five intents, summing to 1) and expansions."""

    probabilities: dict[Intent, float]
    dominant: Intent
    expansions: Expansions = field(default_factory=Expansions)
    scores: dict[Intent, float] = field(default_factory=dict)  # raw pattern scores (debugging)

    def p(self, intent: Intent | str) -> float:
        return self.probabilities.get(Intent.parse(intent), 0.0)

    @staticmethod
    def pure(intent: Intent | str) -> IntentResult:
        """A certain intent (probability 1), no expansions: handy for tests and forced modes."""
        chosen = Intent.parse(intent)
        return IntentResult(
            probabilities={i: (1.0 if i is chosen else 0.0) for i in INTENTS}, dominant=chosen
        )


FILE_EXTENSIONS = frozenset(
    "py pyi pyx js jsx mjs cjs ts tsx go rs java kt kts scala c h cc cpp cxx hpp hh cs rb php "
    "swift m mm lua pl r jl sh bash zsh ps1 sql proto graphql html htm css scss less vue svelte "
    "md rst txt adoc yaml yml json toml ini cfg conf xml gradle cmake mk ex exs erl hs ml clj "
    "dart zig nim tf ipynb".split()
)

_TOKEN = linear_regex.compile(r"[\w./\\-]+")
_IDENT = linear_regex.compile(r"[A-Za-z_]\w*")
_DOTTED = linear_regex.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+")
_SNAKE = linear_regex.compile(r"_*[A-Za-z0-9]+(?:_+[A-Za-z0-9]+)+_*|__\w+__|_+[A-Za-z][A-Za-z0-9]*")  # last: private names
_WORDS = linear_regex.compile(r"[A-Za-z']+")
_PATH_SEGMENT = linear_regex.compile(r"[\w.-]+")

_DEFINITION = linear_regex.compile(
    r"\b(def|class|function|func|fn|struct|interface|trait|enum)\s+([A-Za-z_]\w*)"
)
_CODE_DEFINERS = frozenset({"def", "fn", "func"})
_DEFINED_PHRASE = linear_regex.compile(
    r"\b(?:where\s+is\s+\S{1,200}\s+defined|definition\s+of|defined\s+in|signature\s+of|declaration\s+of"
    r"|find\s+(?:the\s+)?(?:class|function|method|symbol))\b"
)
_FLOW_PHRASES = linear_regex.compile(
    r"\b(?:who\s+calls|what\s+calls|callers?\s+of|calls?\s+to|called\s+(?:by|from)|invoked\s+by"
    r"|invokes?|call\s+(?:chain|graph|stack|path|hierarchy|tree|site)s?|trace[sd]?|tracing"
    r"|flows?|data\s*flow|control\s*flow|path\s+from\b.{0,200}?\bto|reach(?:es|able)?|depends\s+on"
    r"|dependenc(?:y|ies)|usages?\s+of|uses\s+of|triggers?|propagat\w*|end\s+to\s+end"
    r"|downstream|upstream)\b"
)
_CONCEPT_OPENING = linear_regex.compile(
    r"^\s*(?:how|why|what\s+(?:is|are|does|do|happens)|explain|describe|when\s+(?:is|does|do)"
    r"|where\s+does|overview|architecture|purpose|difference\s+between|can\s+i|should\s+i"
    r"|is\s+there|tell\s+me)\b"
)
_CALL_SYNTAX = linear_regex.compile(r"\w\s?\(")  # only searched: a call is a word then `(`
_OPERATOR = linear_regex.compile(r"==|!=|<=|>=|->|=>|:=|\+=|-=|[=;{}]|\[\]|::")
_CODE_KEYWORDS = linear_regex.compile(
    r"\b(?:return|import|lambda|await|async|yield|elif|except|raise|self|const|let|var|null|None"
    r"|nullptr|public|private|static|void|impl|pub|println|printf|console\.log)\b"
)
_TRACEBACK = linear_regex.compile(
    r"Traceback \(most recent call last\)|File \"[^\"\n]{1,300}\", line \d+"
    r"|\b[A-Z]\w*(?:Error|Exception)\b:|\bat [\w.$]+\([\w.]*:\d+\)|panicked at"
)


def _is_dotted(token: str) -> bool:
    """`a.b.c` identifiers, excluding abbreviations such as `e.g` / `i.e` (all parts 1 char)."""
    return bool(_DOTTED.fullmatch(token)) and any(len(p) > 1 for p in token.split("."))


def _is_camel(token: str) -> bool:
    """camelCase / CamelCase / JSONDecoder: upper and lower letters with an inner capital."""
    if not _IDENT.fullmatch(token) or "_" in token.strip("_"):
        return False
    has_lower = any(c.islower() for c in token)
    return has_lower and any(c.isupper() for c in token[1:])


def _is_snake(token: str) -> bool:
    return bool(_IDENT.fullmatch(token) and _SNAKE.fullmatch(token) and any(c.isalpha() for c in token))


def _path_extension(token: str) -> str:
    last = token.replace("\\", "/").rsplit("/", 1)[-1]
    return last.rsplit(".", 1)[-1].lower() if "." in last.strip(".") else ""


def _is_path(token: str) -> bool:
    """`foo/bar.py`, `bar.py`, `src/pkg/` (a file with a known extension, or a directory)."""
    norm = token.replace("\\", "/")
    if not norm or not any(c.isalpha() for c in norm):
        return False
    segments = [s for s in norm.split("/") if s]
    if not segments or not all(_PATH_SEGMENT.fullmatch(s) for s in segments):
        return False
    if _path_extension(norm) in FILE_EXTENSIONS:
        return True
    is_directory = "/" in norm.strip("/") and norm.endswith("/")
    return is_directory or (norm.count("/") >= 2 and len(segments) >= 3)


def identifier_only(text: str, max_words: int = SHORT_QUERY_WORDS) -> bool:
    """Whether the query is nothing but identifiers (plain or dotted), at most `max_words` of them: a lookup whose
    answer is where those names are defined, not a description to match against file text."""
    words = text.split()
    if not 0 < len(words) <= max_words or not all(_IDENT.fullmatch(x) or _DOTTED.fullmatch(x) for x in words):
        return False
    return len(words) == 1 or any(_is_dotted(x) or _is_camel(x) or _is_snake(x) for x in words)  # not plain words


def _is_module(dotted: str) -> bool:
    """`os.path`, `semantica.config`: every part lowercase, at least two characters."""
    parts = dotted.split(".")
    return all(len(p) >= 2 and p == p.lower() and (p[0].isalpha() or p[0] == "_") for p in parts)


def _definitions(text: str) -> list[str]:
    """Names after `def`/`fn`/`func`, or after `class`/`struct`/... when they look like names."""
    names = []
    for match in _DEFINITION.finditer(text):
        keyword, name = match.group(1), match.group(2)
        if keyword in _CODE_DEFINERS or any(c.isupper() for c in name) or "_" in name:
            names.append(name)
    return names


def _dedupe_cap(items: list[str], cap: int) -> list[str]:
    seen: dict[str, None] = {}
    for item in items:
        if item and item not in seen:
            seen[item] = None
            if len(seen) >= cap:
                break
    return list(seen)


class IntentClassifier:
    """`classify(query)` -> `IntentResult`. Deterministic and cheap (tens of microseconds)."""

    def __init__(self, config: IntentConfig | None = None) -> None:
        self.config = config or IntentConfig()
        if self.config.temperature <= 0:
            raise ValueError(f"intent.temperature must be > 0, got {self.config.temperature}")
        if self.config.max_expansions < 0:
            raise ValueError(f"intent.max_expansions must be >= 0, got {self.config.max_expansions}")

    def classify(self, query: str) -> IntentResult:
        text = (query or "")[:MAX_INTENT_CHARS]
        tokens = []
        for raw in _TOKEN.findall(text):
            if len(raw) > MAX_TOKEN_CHARS:
                continue
            token = raw.rstrip(".-").lstrip("-")
            token = token[2:] if token.startswith("./") else token
            if token:
                tokens.append(token)
        expansions = self._expansions(text, tokens)
        scores = self._scores(text, tokens, expansions)
        probabilities = self._softmax(scores)
        dominant = max(_TIE_ORDER, key=lambda i: (probabilities[i], -_TIE_ORDER.index(i)))
        return IntentResult(
            probabilities=probabilities, dominant=dominant, expansions=expansions, scores=scores
        )

    # -- pieces -------------------------------------------------------------------------------

    def _expansions(self, text: str, tokens: list[str]) -> Expansions:
        cap = self.config.max_expansions
        symbols: list[str] = []
        parts: list[str] = []
        paths: list[str] = []
        modules: list[str] = []
        for token in tokens:
            if _is_path(token):
                paths.append(token.replace("\\", "/"))
                continue
            if _is_dotted(token):
                symbols.append(token)
                parts.extend(p for p in token.split(".") if _is_camel(p) or _is_snake(p))
                if _is_module(token):
                    modules.append(token)
            elif _is_camel(token) or _is_snake(token):
                symbols.append(token)
        symbols.extend(_definitions(text))
        return Expansions(
            symbols=_dedupe_cap(symbols + parts, cap),
            paths=_dedupe_cap(paths, cap),
            modules=_dedupe_cap(modules, cap),
        )

    def _scores(self, text: str, tokens: list[str], expansions: Expansions) -> dict[Intent, float]:
        w = SIGNAL_WEIGHTS
        lowered = text.lower()
        scores = {intent: 0.0 for intent in INTENTS}
        scores[Intent.BALANCED] = self.config.base_score

        # symbol
        identifiers = [
            t for t in tokens
            if not _is_path(t) and (_is_dotted(t) or _is_camel(t) or _is_snake(t))
        ]
        scores[Intent.SYMBOL] += w["symbol_identifier"] * min(len(identifiers), 2)
        if _definitions(text) or _DEFINED_PHRASE.search(lowered):
            scores[Intent.SYMBOL] += w["symbol_definition"]
        words = text.split()
        identifier_only = bool(words) and all(_IDENT.fullmatch(x) or _DOTTED.fullmatch(x) for x in words)
        n_flow = len(_FLOW_PHRASES.findall(lowered))
        if identifier_only and len(words) <= SHORT_QUERY_WORDS and identifiers and not n_flow:
            scores[Intent.SYMBOL] += w["symbol_short_query"]
        elif identifier_only and len(words) == 1:
            scores[Intent.SYMBOL] += w["symbol_bare_word"]

        # flow
        if n_flow:
            scores[Intent.FLOW] += w["flow_phrase"] + w["flow_extra_phrase"] * (n_flow - 1)

        # code
        code = 0.0
        if _CALL_SYNTAX.search(text):
            code += w["code_call_syntax"]
        if _OPERATOR.search(text):
            code += w["code_operator"]
        if _CODE_KEYWORDS.search(text):
            code += w["code_keyword"]
        if _TRACEBACK.search(text):
            code += w["code_traceback"]
        if "\n" in text.strip():
            code += w["code_multiline"]
        scores[Intent.CODE] += code

        # concept
        if _CONCEPT_OPENING.search(lowered):
            scores[Intent.CONCEPT] += w["concept_opening"]
        plain_words = _WORDS.findall(text)
        if (
            len(words) >= NATURAL_LANGUAGE_MIN_WORDS
            and not identifiers
            and not expansions.paths
            and code == 0.0
            and len(plain_words) >= NATURAL_LANGUAGE_MIN_WORDS
        ):
            scores[Intent.CONCEPT] += w["concept_sentence"]
        if text.rstrip().endswith("?"):
            scores[Intent.CONCEPT] += w["concept_question_mark"]
        return scores

    def _softmax(self, scores: dict[Intent, float]) -> dict[Intent, float]:
        t = self.config.temperature
        top = max(scores.values())
        exps = {i: math.exp((s - top) / t) for i, s in scores.items()}
        total = sum(exps.values())
        return {i: exps[i] / total for i in INTENTS}
