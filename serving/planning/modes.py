"""The planner's search modes, with a clear error for unknown values, and their fusion multipliers."""

from __future__ import annotations

from collections.abc import Mapping

from semantica.feature_schema import FEATURE_STRATEGIES
from semantica.schema import ParsableEnum


class SearchMode(ParsableEnum):
    """How the retrievers' lists are weighted (planning.modes.multipliers) and ordered.

    hybrid: the intent weights as they are; vector_heavy: prose, meaning over words; lexical_heavy:
    stack traces, paths, identifier-dense queries; mmr_diverse: broad queries, MMR over the candidate
    embeddings; exact_vector: one identifier or quoted code, exact symbol match beside the vector."""

    HYBRID = "hybrid"
    VECTOR_HEAVY = "vector_heavy"
    LEXICAL_HEAVY = "lexical_heavy"
    MMR_DIVERSE = "mmr_diverse"
    EXACT_VECTOR = "exact_vector"


def mode_multipliers(table: Mapping[str, Mapping[str, float]]) -> dict[SearchMode, dict[str, float]]:
    """planning.modes.multipliers checked: every mode, every weighted strategy (the feature schema's), no
    unknown names, no negative value."""
    unknown = sorted(set(table) - {m.value for m in SearchMode})
    if unknown:
        raise ValueError(f"planning.modes.multipliers: unknown modes {unknown}; "
                         f"known modes: {', '.join(m.value for m in SearchMode)}")
    out: dict[SearchMode, dict[str, float]] = {}
    for mode in SearchMode:
        row = table.get(mode.value)
        if row is None:
            raise ValueError(f"planning.modes.multipliers lacks mode {mode.value!r}")
        bad = sorted(set(row) - set(FEATURE_STRATEGIES))
        if bad:
            raise ValueError(f"planning.modes.multipliers.{mode.value}: unknown strategies {bad}")
        values = {s: float(row.get(s, 1.0)) for s in FEATURE_STRATEGIES}
        if any(v < 0 for v in values.values()) or not any(v > 0 for v in values.values()):
            raise ValueError(f"planning.modes.multipliers.{mode.value}: values must be >= 0, one > 0")
        out[mode] = values
    return out
