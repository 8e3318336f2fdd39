"""Request validation before any stage runs: a request that cannot be answered is a QueryError that says
why; one that can be fixed (a long query, lone surrogates) is fixed and answered with a warning."""

from __future__ import annotations

import unicodedata
from collections.abc import Callable
from typing import Any

from semantica.api import QueryError, SearchRequest
from semantica.config import Config
from semantica.languages import KNOWN_LANGUAGES
from semantica.ondisk.repo_names import normalize_repo_name


def has_visible_text(text: str) -> bool:
    """Some character that is neither a space nor a control character (what the HTTP document's query pattern
    asks for): a query of tabs, NULs or C1 controls has nothing to search for."""
    return any(not c.isspace() and unicodedata.category(c) != "Cc" for c in text)


def _configured_model(field: str, asked: bool | None, model_path: str, what: str) -> None:
    """A model-backed reranker asked for by name on a server with no model for it is the client's request to
    fix (a QueryError, 4xx), not a broken server (503) nor a silent 200 without it: the same for each."""
    if asked is True and not model_path.strip():
        raise QueryError(f"{field}: this server has no {what} configured ({field}.model_path is empty); leave "
                         f"{field} out or false")


def validate_request(request: SearchRequest, config: Config, planner: Any, lookup: Callable[[str], Any],
                     enabled: Callable[[], list[str]]) -> list[str]:
    """Raise QueryError for a request that cannot be answered; return warnings for fixed ones. `lookup` finds a
    registered retriever by name (ValueError if none), `enabled` lists the ones conf enables."""
    warnings: list[str] = []
    if not isinstance(request.query, str) or not has_visible_text(request.query):
        raise QueryError("query is empty: pass some text, an identifier or a question")
    planner.validate(request)  # planning: the mode
    if request.k is None:
        request.k = config.query.default_k
    if isinstance(request.k, bool) or not isinstance(request.k, int) or request.k <= 0:
        raise QueryError(f"k must be a positive integer, got {request.k!r}")
    if request.k > config.query.max_k:
        raise QueryError(f"k={request.k} is above the maximum {config.query.max_k}")
    _configured_model("cross_encoder", request.cross_encoder, config.cross_encoder.model_path, "cross-encoder")
    request.strategies = [_strategy_name(name, lookup, enabled) for name in request.strategies]
    if isinstance(request.repos, str):
        raise QueryError(f"repos must be a list of repository names, got the string {request.repos!r}")
    request.repos = list(dict.fromkeys(normalize_repo_name(name) for name in request.repos))  # RepoNameError
    request.languages = [_known_language(name) for name in request.languages]
    if len(request.query) > config.query.max_query_chars:
        request.query = request.query[: config.query.max_query_chars]
        warnings.append(f"query truncated to its first {config.query.max_query_chars} characters")
    cleaned = request.query.encode("utf-8", "replace").decode("utf-8")
    if cleaned != request.query:
        request.query = cleaned
        warnings.append("query held invalid characters (lone surrogates); they were replaced")
    return warnings


def _strategy_name(name: str, lookup: Callable[[str], Any], enabled: Callable[[], list[str]]) -> str:
    """A strategy the request may narrow to: a registered retriever that conf enables."""
    try:
        spec = lookup(name)
    except ValueError as exc:
        raise QueryError(str(exc)) from None
    names = enabled()
    if spec.name not in names:
        raise QueryError(f"strategy {name!r} is not enabled (retrieval.retrievers: {', '.join(names)})")
    return spec.name


def _known_language(name: str) -> str:
    language = str(name).strip().lower()
    if language not in KNOWN_LANGUAGES:
        raise QueryError(f"unknown language {name!r}; known languages: {', '.join(sorted(KNOWN_LANGUAGES))}")
    return language
