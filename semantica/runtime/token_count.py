"""The one token unit of every budget an answer is packed into: the encoder's own tokenizer.

The context a search returns, the knowledge entries put before it and a repository map are cut to a budget
the caller names in tokens; MCP then counts its whole answer against `budget_tokens`. Counting both with
the same tokenizer (the configured bi-encoder's `tokenizer.json`, all-MiniLM-L6-v2's WordPiece by default,
with its padding and truncation off: the file pads and cuts every text to 128) keeps one unit. A configured
checkpoint that cannot be read degrades the vector stage, not every answer: the budgets then count with the
shipped all-MiniLM-L6-v2 tokenizer.
"""

from __future__ import annotations

import logging
from functools import lru_cache

from tokenizers import Tokenizer

from semantica.runtime.encoder import resolve_model_path

log = logging.getLogger(__name__)

TOKENIZER_FILE = "tokenizer.json"


class TokenCounter:
    """Counts tokens with the encoder's tokenizer: no special tokens, no padding, no truncation. The file is
    read on the first count, so building a counter never needs the model."""

    def __init__(self, model_path: str) -> None:
        self.model_path = model_path

    @property
    def name(self) -> str:
        return _tokenizer(self.model_path)[1]

    def count(self, text: str) -> int:
        """`encode`'s token count, through the batch call that skips character offsets (a fifth faster: an answer
        counts a few thousand tokens)."""
        return len(_tokenizer(self.model_path)[0].encode_batch_fast([text], add_special_tokens=False)[0].ids)


@lru_cache(maxsize=4)
def _tokenizer(model_path: str) -> tuple[Tokenizer, str]:
    try:
        path = resolve_model_path(model_path)
        tokenizer = Tokenizer.from_file(str(path / TOKENIZER_FILE))
    except Exception as exc:  # noqa: BLE001 - not a checkpoint (EncoderLoadError), or tokenizers' bare Exception
        if not model_path:
            raise
        log.warning("budgets count with the shipped tokenizer: %s", exc)
        path = resolve_model_path("")
        tokenizer = Tokenizer.from_file(str(path / TOKENIZER_FILE))
    tokenizer.no_padding()  # the encoder's file pads to its 128-token window: every text would count 128
    tokenizer.no_truncation()
    return tokenizer, path.name
