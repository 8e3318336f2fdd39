"""A route's JSON body, parsed once and validated once.

`BodyGuard` must parse a body to bound its sizes and scope its `repos`; it keeps the parsed value (or why
there is none) in the request's state, and `json_body(Model)` validates that value into the route's model:
FastAPI never reads the bytes again. `request_body(Model)` and `add_body_schemas` publish the model in the
OpenAPI document as FastAPI would for a body parameter.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, TypeVar

from fastapi import Depends, Request
from fastapi.exceptions import RequestValidationError
from pydantic import BaseModel, ValidationError

PARSED = "json_body"
"""Key of the parsed JSON body in the ASGI scope's `state` (set by `BodyGuard`)."""
UNPARSED = "json_body_error"
"""Key of the reason there is no parsed body (empty, not JSON, another content type)."""
NO_JSON = "send the body as a JSON object with `Content-Type: application/json`"
VALUE_ERROR = "Value error, "
"""Pydantic's prefix on a validator's own message: the message says what to fix without it."""
Model = TypeVar("Model", bound=BaseModel)


def json_body(model: type[Model]) -> Any:
    """A route dependency: `model` validated from the body `BodyGuard` parsed; a 422 naming each bad field."""

    def read(request: Request) -> Model:
        state = request.scope.get("state", {})
        if PARSED not in state:
            raise RequestValidationError([{"type": "json_invalid", "loc": ("body",), "input": None,
                                           "msg": state.get(UNPARSED) or NO_JSON}])
        try:
            return model.model_validate(state[PARSED])
        except ValidationError as exc:
            raise RequestValidationError([{**error, "loc": ("body", *error["loc"]),
                                           "msg": error["msg"].removeprefix(VALUE_ERROR)}
                                          for error in exc.errors(include_url=False)]) from None

    read.__name__ = f"{model.__name__}_body"
    return Depends(read)


def request_body(model: type[BaseModel]) -> dict[str, Any]:
    """A route's `openapi_extra`: its JSON body is `model` (published by `add_body_schemas`)."""
    return {"requestBody": {"required": True, "content": {"application/json": {
        "schema": {"$ref": f"#/components/schemas/{model.__name__}"}}}}}


def add_body_schemas(document: dict[str, Any], models: Iterable[type[BaseModel]]) -> dict[str, Any]:
    """Each model's JSON schema (and the models it nests) under `components.schemas` of `document`."""
    schemas = document.setdefault("components", {}).setdefault("schemas", {})
    for model in models:
        schema = model.model_json_schema(ref_template="#/components/schemas/{model}")
        for name, nested in schema.pop("$defs", {}).items():
            schemas.setdefault(name, nested)
        schemas[model.__name__] = schema
    return document
