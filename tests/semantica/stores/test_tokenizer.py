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
