"""The budget unit: `TokenCounter.count` is the encoder tokenizer's own count, on real source text."""

from __future__ import annotations

from semantica.runtime.token_count import TokenCounter, _tokenizer
from tests.conftest import REPO_ROOT

SOURCES = ("serving/core/context.py", "semantica/runtime/token_count.py", "README.md")


def test_the_count_is_the_tokenizers_encode_without_special_tokens():
    counter = TokenCounter("")
    tokenizer = _tokenizer("")[0]
    texts = ["", "   ", "déjà vu — naïve café", "x" * 3000]
    for name in SOURCES:
        lines = (REPO_ROOT / name).read_text().splitlines()
        texts += ["\n".join(lines[start:start + 40]) for start in range(0, len(lines), 40)]
    for text in texts:
        assert counter.count(text) == len(tokenizer.encode(text, add_special_tokens=False).ids), text[:60]
    assert counter.count("def f():\n    return 1") > len("def f():\n    return 1".split())  # word pieces, not words
