from semantica.stores.tokenizer import count_tokens, tokenize, unique_terms


def test_identifier_parts_are_split_and_lowercased():
    tokens = tokenize("JSONDecoder.raw_decode")
    assert tokens[0] == "jsondecoder.raw_decode"
    for part in ("jsondecoder", "raw_decode", "json", "decoder", "raw", "decode"):
        assert part in tokens


def test_snake_and_camel_parts():
    assert {"register_hook", "register", "hook"} <= set(tokenize("def register_hook(self):"))
    assert {"httpserver", "http", "server"} <= set(tokenize("HTTPServer"))
    assert {"parsexml", "parse", "xml"} <= set(tokenize("parseXML"))


def test_punctuation_emoji_and_surrogates_are_safe():
    assert tokenize("()[]{} 🚀 \ud800 ++") == []
    assert tokenize("") == []


def test_unique_terms_keep_order_and_count_tokens():
    assert unique_terms(["a", "b", "a"]) == ["a", "b"]
    assert count_tokens("def f(x):\n    return x") == 4


def _tokens_one_match_at_a_time(text: str) -> list[str]:
    """The tokenizer's rule spelled out per match, nothing kept between identifiers."""
    import re

    from semantica.stores.tokenizer import identifier_parts

    tokens: list[str] = []
    for match in re.finditer(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*|\d+", text):
        whole = match.group(0)
        tokens.append(whole.lower())
        pieces = whole.split(".")
        if len(pieces) > 1:
            tokens.extend(p.lower() for p in pieces)
        for piece in pieces:
            sub = identifier_parts(piece)
            if len(sub) > 1 or (sub and sub[0] != piece):
                tokens.extend(s.lower() for s in sub if len(s) >= 2)
    return tokens


def test_tokens_kept_per_identifier_are_the_rules_tokens_on_real_code():
    """Every source file of this repository's semantica/ package, twice (the second pass reads the kept tokens)."""
    from pathlib import Path

    root = Path(__file__).resolve().parents[3] / "semantica"
    texts = [p.read_text() for p in sorted(root.rglob("*.py"))]
    assert len(texts) > 50
    for _ in range(2):
        assert [tokenize(t) for t in texts] == [_tokens_one_match_at_a_time(t) for t in texts]
