"""Opposite claims about the same thing: such pairs go to review instead of being used.

Two entries conflict when all hold:
- both are claims (decision, rule or fact; how-tos describe steps, not truths);
- their scopes overlap: a shared path or symbol, or both name none (a claim about the whole repository);
- one is negated and the other is not (`never`, `not`, `no longer`, `don't`, `avoid`, `deprecated` ...);
- their texts say nearly the same thing once negations are removed: the overlap coefficient of their word sets
  (shared words / words of the shorter one, plural `s` dropped) >= CONFLICT_SIMILARITY.
"""

from __future__ import annotations

import re

from serving.knowledge.entry import Entry, Kind

CONFLICT_SIMILARITY = 0.6  # word overlap (of the shorter text) at which opposite claims conflict
CLAIM_KINDS = frozenset({Kind.DECISION.value, Kind.RULE.value, Kind.FACT.value})
NEGATIONS = frozenset({"never", "not", "no", "don't", "dont", "doesn't", "doesnt", "mustn't", "shouldn't", "cannot",
                       "can't", "won't", "avoid", "deprecated", "forbidden", "nor", "without", "isn't", "aren't"})
_WORD = re.compile(r"[a-z0-9_']+")
FILLER = frozenset({"the", "a", "an", "is", "are", "be", "to", "of", "in", "and", "or", "must", "should", "do",
                    "does", "longer", "ever", "always", "any", "it", "its", "this", "that"})


def words(text: str) -> list[str]:
    return _WORD.findall(text.lower())


def negated(entry: Entry) -> bool:
    return any(w in NEGATIONS for w in words(f"{entry.title} {entry.text}"))


def claim_terms(entry: Entry) -> set[str]:
    return {_singular(w) for w in words(f"{entry.title} {entry.text}") if w not in NEGATIONS and w not in FILLER}


def _singular(word: str) -> str:
    return word[:-1] if len(word) > 3 and word.endswith("s") and not word.endswith("ss") else word


def similarity(a: Entry, b: Entry) -> float:
    left, right = claim_terms(a), claim_terms(b)
    return len(left & right) / min(len(left), len(right)) if left and right else 0.0


def scopes_overlap(a: Entry, b: Entry) -> bool:
    if a.repo != b.repo:
        return False
    if not (a.paths or a.symbols) and not (b.paths or b.symbols):
        return True
    return bool(set(a.paths) & set(b.paths) or {s.removesuffix("()") for s in a.symbols}
                & {s.removesuffix("()") for s in b.symbols})


def conflicts(a: Entry, b: Entry, min_similarity: float) -> bool:
    return (a.id != b.id and a.kind in CLAIM_KINDS and b.kind in CLAIM_KINDS and scopes_overlap(a, b)
            and negated(a) != negated(b) and similarity(a, b) >= min_similarity)


def find_conflicts(entry: Entry, others: list[Entry], min_similarity: float) -> list[Entry]:
    return [o for o in others if conflicts(entry, o, min_similarity)]
