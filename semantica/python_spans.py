"""Outer Python functions and methods of a module with exact lines and docstrings (stdlib `ast`).

Nested functions fold into the outer function that holds them, as in the SWE-bench gold. The pair
miner's labels and the learned localizer's candidates both come from these spans, so a label and a
candidate name the same function the same way.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass


@dataclass
class FunctionSpan:
    """One outer function or method (1-based inclusive lines) and its docstring lines, if any."""

    qualname: str
    start: int
    end: int
    docstring: str = ""
    doc_start: int = 0
    doc_end: int = 0

    def body(self, lines: list[str]) -> str:
        """The function's source with its docstring lines removed."""
        return "\n".join(line for n, line in enumerate(lines[self.start - 1: self.end], self.start)
                         if not self.doc_start <= n <= self.doc_end)


def function_spans(text: str) -> list[FunctionSpan]:
    """Outer functions and methods of a Python module ([] when it does not parse)."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return []
    spans: list[FunctionSpan] = []

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.ClassDef):
                visit(child, f"{prefix}{child.name}.")
            elif isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                start = min([d.lineno for d in child.decorator_list] + [child.lineno])
                span = FunctionSpan(f"{prefix}{child.name}", start, child.end_lineno or child.lineno)
                doc = ast.get_docstring(child)
                first = child.body[0] if child.body else None
                if doc and isinstance(first, ast.Expr):
                    span.docstring, span.doc_start, span.doc_end = doc, first.lineno, first.end_lineno or first.lineno
                spans.append(span)
            elif not isinstance(child, (ast.Lambda,)):
                visit(child, prefix)  # if/try blocks at module or class level

    visit(tree, "")
    return spans
