"""The token-budget contract of the MCP tools: an answer never exceeds `budget_tokens`, its items are
packed in rank order, and an opaque cursor fetches the rest.

Tokens are counted with the encoder's own tokenizer (the WordPiece tokenizer of the configured
bi-encoder, all-MiniLM-L6-v2 by default) with its padding and truncation turned off (its
`tokenizer.json` pads and cuts every text to 128), over the answer exactly as it is sent: the compact
JSON of the structured result, which is also its text content (`render`). A cursor names the tool, a digest of the
arguments it continues and the offset of the next item; a cursor that does not decode, or belongs to
another tool or other arguments, is refused (`InvalidCursor`), never silently restarted.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel
from pydantic_core import to_json

from semantica.runtime.token_count import TokenCounter

CURSOR_VERSION = 2
OFFSET_DIGITS = 9  # fixed width: a cursor's length (so its tokens) does not depend on the offset
KEY_CHARS = 16
Render = Callable[[list[dict[str, Any]], str | None], str]  # (kept items, next cursor) -> the answer's JSON


class InvalidCursor(Exception):
    """A continuation cursor this tool did not issue for these arguments."""


class StaleCursor(Exception):
    """A cursor issued for an earlier index of the repositories it paged: not a bad argument (it was valid when
    issued) but a changed world the agent can act on, so a tool error the model reads, not a JSON-RPC error."""


class BudgetTooSmall(Exception):
    """Not even the answer's envelope (or one trimmed item) fits in the budget."""


def render(answer: BaseModel) -> str:
    """The answer's text content: the compact JSON of its structured content (what the budget counts)."""
    return to_json(answer.model_dump(mode="json")).decode()


class CursorCodec:
    """Opaque continuation cursors: base64url of {version, tool, arguments digest, snapshots digest, offset}.
    The snapshots digest binds a cursor to the index it paged: after a re-index the offsets mean other
    items, so `check_snapshots` refuses it rather than silently skipping what the new snapshot added."""

    @staticmethod
    def key(arguments: dict[str, Any]) -> str:
        canonical = json.dumps(arguments, sort_keys=True, default=str, separators=(",", ":"))
        return hashlib.sha256(canonical.encode()).hexdigest()[:KEY_CHARS]

    @staticmethod
    def snapshots_key(snapshots: dict[str, str]) -> str:
        return CursorCodec.key({"snapshots": snapshots})

    def encode(self, tool: str, key: str, offset: int, snapshots: str = "") -> str:
        body = json.dumps({"v": CURSOR_VERSION, "t": tool, "k": key, "s": snapshots or "0" * KEY_CHARS,
                           "o": f"{offset:0{OFFSET_DIGITS}d}"}, separators=(",", ":"))
        return base64.urlsafe_b64encode(body.encode()).decode().rstrip("=")

    def snapshots_of(self, cursor: str) -> str:
        """The snapshots digest a cursor `decode` accepted was issued for."""
        return json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))["s"]

    @staticmethod
    def check_snapshots(issued: str, current: dict[str, str]) -> None:
        if issued != CursorCodec.snapshots_key(current):
            raise StaleCursor("the index changed since this cursor was issued (its repositories were re-indexed): "
                              "search again without `cursor` and page the new answer")

    def decode(self, cursor: str, tool: str, key: str) -> int:
        try:
            raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
            body = json.loads(raw)
            version, owner, digest, offset, _ = body["v"], body["t"], body["k"], int(body["o"]), str(body["s"])
        except (binascii.Error, ValueError, TypeError, KeyError, UnicodeDecodeError, AttributeError):
            raise InvalidCursor(f"cursor {cursor[:40]!r} is not a cursor this server issued") from None
        if version != CURSOR_VERSION or owner != tool:
            raise InvalidCursor(f"this cursor continues `{owner}`, not `{tool}`")
        if digest != key:
            raise InvalidCursor("this cursor belongs to a call with other arguments: repeat that call's arguments "
                                "(budget_tokens may change)")
        if offset < 0:
            raise InvalidCursor("cursor offset out of range")
        return offset


@dataclass
class Packed:
    items: list[dict[str, Any]]
    next_offset: int | None  # None: nothing left
    tokens: int


class BudgetPacker:
    """Keeps the longest rank-order prefix of the items whose answer fits the budget; when not even the
    first item fits, cuts its `trim_field` (lines of a string, or elements of a list) to what fits."""

    def __init__(self, counter: TokenCounter, codec: CursorCodec) -> None:
        self.counter = counter
        self.codec = codec

    def pack(self, items: list[dict[str, Any]], offset: int, budget: int | None, render: Render,
             cursor_for: Callable[[int], str], trim_field: str) -> Packed:
        if offset > len(items):
            raise InvalidCursor(f"cursor offset {offset} is past the end of this answer ({len(items)} items)")
        rest = items[offset:]
        if budget is None:
            return Packed(rest, None, 0)
        placeholder = cursor_for(offset)
        envelope = self.counter.count(render([], placeholder))
        if envelope > budget:
            raise BudgetTooSmall(f"budget_tokens={budget} is too small: the answer without items needs {envelope}")
        kept: list[dict[str, Any]] = []
        used = envelope
        for item in rest:
            cost = self.counter.count(json.dumps(item, ensure_ascii=False, separators=(",", ":"))) + 1
            if used + cost > budget:
                break
            kept.append(item)
            used += cost
        while True:  # exact count of the real answer; drop from the end until it fits
            following = offset + len(kept)
            cursor = cursor_for(following) if following < len(items) else None
            tokens = self.counter.count(render(kept, cursor))
            if tokens <= budget or not kept:
                break
            kept.pop()
        if kept or not rest:
            return Packed(kept, following if following < len(items) else None, tokens)
        first = self._trimmed(rest[0], budget, render, cursor_for(offset + 1) if len(rest) > 1 else None, trim_field)
        if first is None:
            raise BudgetTooSmall(f"budget_tokens={budget} is too small for even part of the next item")
        following = offset + 1
        cursor = cursor_for(following) if following < len(items) else None
        return Packed([first], following if following < len(items) else None, self.counter.count(render([first], cursor)))

    def _trimmed(self, item: dict[str, Any], budget: int, render: Render, cursor: str | None,
                 trim_field: str) -> dict[str, Any] | None:
        """The item with the most leading lines/elements of `trim_field` that fit (binary search), or None."""
        value = item.get(trim_field)
        parts: list[Any] = value.split("\n") if isinstance(value, str) else list(value or [])
        as_text = isinstance(value, str)

        def cut(n: int) -> dict[str, Any]:
            return {**item, trim_field: "\n".join(parts[:n]) if as_text else parts[:n]}

        lo, hi, best = 0, len(parts) - 1, None
        while lo <= hi:
            mid = (lo + hi) // 2
            if self.counter.count(render([cut(mid)], cursor)) <= budget:
                best, lo = mid, mid + 1
            else:
                hi = mid - 1
        return cut(best) if best is not None else None
