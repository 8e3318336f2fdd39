"""The analyzer's features and the mode each query class gets (pure rules: no index needed here; the
pipeline tests check the same choices come back from a real index in `plan`)."""

from __future__ import annotations

import pytest

from semantica.config import PlanningConfig
from serving.planning.analyzer import QueryAnalyzer, StrategySelector, is_identifier, is_path
from serving.planning.modes import SearchMode, mode_multipliers

TRACE = 'Traceback (most recent call last):\n  File "pkg/mod.py", line 3, in f\n    x()\nValueError: bad'
CLASSES = [
    (TRACE, SearchMode.LEXICAL_HEAVY),
    ("where is `load_config(path)` used", SearchMode.EXACT_VECTOR),
    ("JSONDecoder.raw_decode", SearchMode.EXACT_VECTOR),
    ("error in semantica/config.py when loading", SearchMode.LEXICAL_HEAVY),
    ("late interaction token cache", SearchMode.LEXICAL_HEAVY),
    ("show me all examples of retry logic", SearchMode.MMR_DIVERSE),
    ("how does the pipeline degrade when an index fails to load", SearchMode.VECTOR_HEAVY),
    ("tokenize", SearchMode.HYBRID),
]


@pytest.mark.parametrize(("query", "mode"), CLASSES)
def test_each_query_class_gets_its_mode(query, mode):
    config = PlanningConfig()
    features = QueryAnalyzer(config).analyze(query)
    choice = StrategySelector(config).select(query, features)
    assert choice.mode is mode, choice.why


def test_features():
    f = QueryAnalyzer(PlanningConfig()).analyze(TRACE + " see parse_args and HTTPServer in a/b/c")
    assert f.trace_frames == 1 and "pkg/mod.py" in f.paths and "a/b/c" in f.paths
    assert {"parse_args", "HTTPServer", "ValueError"} <= set(f.identifiers)
    assert is_identifier("_coerce") and is_identifier("a.b") and not is_identifier("config.py")
    assert is_path("config.py") and not is_path("and/or")


def test_huge_and_empty_queries_are_bounded():
    analyzer = QueryAnalyzer(PlanningConfig())
    assert analyzer.analyze("").words == 0
    f = analyzer.analyze("x_y " * 100_000)
    assert f.chars == 400_000 and f.words <= PlanningConfig().analyzer.max_chars


def test_forced_mode_and_analyzer_off():
    config = PlanningConfig()
    features = QueryAnalyzer(config).analyze(TRACE)
    assert StrategySelector(config).select(TRACE, features, SearchMode.MMR_DIVERSE).mode is SearchMode.MMR_DIVERSE
    config.analyzer.enabled = False
    assert StrategySelector(config).select(TRACE, features).mode is SearchMode.HYBRID


def test_unknown_names_list_the_valid_ones():
    with pytest.raises(ValueError, match="hybrid, vector_heavy, lexical_heavy, mmr_diverse, exact_vector"):
        SearchMode.parse("fast")
    with pytest.raises(ValueError, match="unknown modes"):
        mode_multipliers({**PlanningConfig().modes.multipliers, "turbo": {"vector": 1.0}})
