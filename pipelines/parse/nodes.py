"""Small helpers over tree-sitter nodes shared by the extraction modules."""

from __future__ import annotations

import re
from typing import Any

from pipelines.parse.facts import OTHER_RECEIVER, SUPER_RECEIVER

_DOTTED = re.compile(r"[A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*)*")
_SUPER_CALL = re.compile(r"super\s*\(.*\)", re.S)
IDENT = re.compile(r"[A-Za-z_$][\w$]*")


def node_text(node: Any) -> str:
    return node.text.decode("utf-8", "replace") if node is not None else ""


def dotted(text: str) -> str:
    """Receiver text as a dotted name, "super" for super calls, "?" for anything else."""
    text = text.replace("::", ".").strip()
    if _DOTTED.fullmatch(text):
        return text
    if _SUPER_CALL.fullmatch(text):
        return SUPER_RECEIVER
    return OTHER_RECEIVER


def receiver_name(node: Any) -> str:
    return "" if node is None else dotted(node_text(node))


def descendants(node: Any, node_type: str) -> list[Any]:
    found, stack = [], [node]
    while stack:
        current = stack.pop()
        for child in current.named_children:
            if child.type == node_type:
                found.append(child)
            else:
                stack.append(child)
    return found

