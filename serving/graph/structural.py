"""Structural questions: "who calls X", "what does X call", "where is X defined", ... -> (op, name).

A question that matches is answered exactly from the code graph (serving/graph/ops.py) before any
retrieval; one that does not is an ordinary search. X is a bare name, a dotted name
(`Class.method`, `module.func`) or `path::Qual.name`, optionally in backticks and with `()`; its case
is kept (names are matched as the code spells them).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from semantica.runtime import linear_regex


class GraphOp(str, Enum):
    """What a structural question asks for."""

    CALLERS = "callers"
    CALLEES = "callees"
    DEFS = "defs"
    REFS = "refs"
    IMPLS = "impls"
    IMPORTERS = "importers"
    IMPORTS = "imports"

    @classmethod
    def parse(cls, value: str) -> GraphOp:
        try:
            return cls(value.strip().lower())
        except ValueError:
            raise ValueError(f"unknown graph op {value!r}; valid ops: {', '.join(o.value for o in cls)}") from None


# A name as the code spells it: optional `path::`, dotted identifiers, optional `()`, optional backticks.
_NAME = r"`?(?P<name>(?:[\w./-]+::)?[A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*)*)(?:\(\))?`?"
_KIND = r"(?:(?:the\s+)?(?:function|method|class|module|symbol|interface|type)\s+)?"
_END = r"\s*[?.!]?\s*$"
# (op, pattern); the first that matches the whole question wins. Question words are case-insensitive,
# the name keeps its case (the flag is scoped to the words only).
_PATTERNS: list[tuple[GraphOp, str]] = [
    (GraphOp.CALLEES, rf"(?:what|which\s+\w+)\s+(?:does|do)\s+{_KIND}{_NAME}\s+(?:call|invoke|use)"),
    (GraphOp.CALLEES, rf"(?:callees?|calls\s+made)\s+(?:of|from|by|in)\s+{_KIND}{_NAME}"),
    (GraphOp.IMPORTS, rf"what\s+does\s+(?:the\s+)?(?:module\s+)?{_NAME}\s+import"),
    (GraphOp.IMPORTERS, rf"(?:who|what|which\s+\w+)\s+imports?\s+(?:the\s+)?(?:module\s+)?{_NAME}"),
    (GraphOp.IMPORTERS, rf"importers\s+of\s+(?:the\s+)?(?:module\s+)?{_NAME}"),
    (GraphOp.CALLERS, rf"(?:who|what|which\s+\w+)\s+(?:calls|invokes)\s+{_KIND}{_NAME}"),
    (GraphOp.CALLERS, rf"(?:callers?|call\s+sites?)\s+(?:of|for|to)\s+{_KIND}{_NAME}"),
    (GraphOp.CALLERS, rf"where\s+is\s+{_KIND}{_NAME}\s+called(?:\s+from)?"),
    (GraphOp.REFS, rf"where\s+is\s+{_KIND}{_NAME}\s+(?:used|referenced)"),
    (GraphOp.REFS, rf"(?:who|what|which\s+\w+)\s+uses\s+{_KIND}{_NAME}"),
    (GraphOp.REFS, rf"(?:references?|refs|usages?|uses)\s+(?:of|to|for)\s+{_KIND}{_NAME}"),
    (GraphOp.DEFS, rf"where\s+(?:is|are)\s+{_KIND}{_NAME}\s+(?:defined|declared|implemented)"),
    (GraphOp.DEFS, rf"(?:definition|declaration)s?\s+of\s+{_KIND}{_NAME}"),
    (GraphOp.DEFS, rf"(?:go\s+to|goto|find)\s+definition\s+(?:of\s+)?{_KIND}{_NAME}"),
    (GraphOp.IMPLS, rf"(?:who|what|which\s+\w+)\s+(?:overrides?|implements?|extends?|subclasses?|inherits\s+from)\s+{_KIND}{_NAME}"),
    (GraphOp.IMPLS, rf"(?:subclasses|implementations|overrides|implementers)\s+of\s+{_KIND}{_NAME}"),
]
_COMPILED = [(op, linear_regex.compile(rf"^\s*(?i:{pattern.split(_NAME)[0]}){_NAME}(?i:{pattern.split(_NAME)[1]}){_END}"))
             for op, pattern in _PATTERNS]


@dataclass(frozen=True)
class StructuralQuestion:
    """A parsed structural question: the op and the name as written (backticks and `()` removed)."""

    op: GraphOp
    name: str


def parse_question(text: str) -> StructuralQuestion | None:
    """The structural question `text` asks, or None when it is not one (then it is an ordinary search)."""
    for op, pattern in _COMPILED:
        match = pattern.match(text)
        if match:
            return StructuralQuestion(op, match.group("name"))
    return None
