"""Structural questions are recognised (op + name as the code spells it); other queries are not."""

from __future__ import annotations

import pytest

from serving.graph.structural import GraphOp, parse_question


@pytest.mark.parametrize(("text", "op", "name"), [
    ("who calls register_hook", GraphOp.CALLERS, "register_hook"),
    ("Who calls `Request.register_hook()`?", GraphOp.CALLERS, "Request.register_hook"),
    ("callers of requests/models.py::Request.register_hook", GraphOp.CALLERS, "requests/models.py::Request.register_hook"),
    ("where is parse_url called", GraphOp.CALLERS, "parse_url"),
    ("what does HTTPDigestAuth.handle_401 call", GraphOp.CALLEES, "HTTPDigestAuth.handle_401"),
    ("callees of utils.parse_dict_header", GraphOp.CALLEES, "utils.parse_dict_header"),
    ("where is Session defined?", GraphOp.DEFS, "Session"),
    ("definition of the class Session", GraphOp.DEFS, "Session"),
    ("references to to_key_val_list", GraphOp.REFS, "to_key_val_list"),
    ("where is to_key_val_list used", GraphOp.REFS, "to_key_val_list"),
    ("what overrides AuthBase.__call__", GraphOp.IMPLS, "AuthBase.__call__"),
    ("subclasses of AuthBase", GraphOp.IMPLS, "AuthBase"),
    ("what implements Encoder", GraphOp.IMPLS, "Encoder"),
    ("what imports requests.utils", GraphOp.IMPORTERS, "requests.utils"),
    ("what does requests.sessions import", GraphOp.IMPORTS, "requests.sessions"),
    ("WHO CALLS MyClass", GraphOp.CALLERS, "MyClass"),  # words in any case, the name as written
])
def test_structural_questions(text: str, op: GraphOp, name: str) -> None:
    question = parse_question(text)
    assert question is not None and question.op == op and question.name == name


@pytest.mark.parametrize("text", [
    "how does the session send a request", "register_hook", "who calls", "why is callers of slow in prod today",
    "", "HTTPDigestAuth.handle_401 raises KeyError when the header is missing",
])
def test_ordinary_queries_are_not_structural(text: str) -> None:
    assert parse_question(text) is None


def test_unknown_op_lists_the_valid_ones() -> None:
    with pytest.raises(ValueError, match="callers, callees, defs, refs, impls, importers, imports"):
        GraphOp.parse("friends")
