"""Semantica: code search for agents and people (see docs/)."""

from semantica.runtime.threadsafe_ast import install as _guard_ast_parse

_guard_ast_parse()
