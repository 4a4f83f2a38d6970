"""One wire contract: every JSON route declares a pydantic response model, the Python client reads only
fields those models declare (a renamed server field fails here), and the OpenAPI document types them."""

from __future__ import annotations

import copy
import dataclasses
import typing
from collections.abc import Iterator
from typing import Any

import pytest
from fastapi import FastAPI
from fastapi.routing import APIRoute
from pydantic import BaseModel
from starlette.responses import JSONResponse

from lore.api import create_app
from lore.client import models
from lore.config import load_settings
from lore.engine import Lore

# JSON routes without a response model of ours, and why.
EXCEPTIONS = {
    ("GET", "/api/health"): "liveness probe in lore.api.ops: a fixed {'status': 'ok'}",
    ("GET", "/api/ready"): "readiness probe in lore.api.ops: status and free-form checks, 200 or 503",
    ("GET", "/v1/models"): "OpenAI-compatible endpoint: OpenAI's wire format, not Lore's",
    ("POST", "/v1/chat/completions"): "OpenAI-compatible endpoint: OpenAI's wire format (or an SSE stream)",
}

# Client model -> (method, path, status, where in the reply the model's JSON is: "[]" an array's items).
CLIENT_READS: dict[type, list[tuple[str, str, int, tuple[str, ...]]]] = {
    models.KnowledgeBase: [
        ("GET", "/api/kbs", 200, ("[]",)),
        ("GET", "/api/kbs/{kb}", 200, ()),
        ("POST", "/api/kbs", 201, ()),
    ],
    models.Upload: [("POST", "/api/kbs/{kb}/files", 201, ("files", "[]"))],
    models.FileResult: [("POST", "/api/kbs/{kb}/ingest", 200, ("files", "[]"))],
    models.IngestResult: [
        ("POST", "/api/kbs/{kb}/ingest", 200, ()),
        ("POST", "/api/kbs/{kb}/sources", 200, ()),  # a crawl's result (`wait`)
    ],
    models.Version: [
        ("GET", "/api/kbs/{kb}/versions", 200, ("versions", "[]")),
        ("POST", "/api/kbs/{kb}/versions/{seq}/activate", 200, ()),
        ("POST", "/api/kbs/{kb}/rollback", 200, ()),
    ],
    models.SearchResult: [("POST", "/api/search", 200, ())],
    models.Hit: [("POST", "/api/search", 200, ("hits", "[]"))],
    models.Passage: [("GET", "/api/kbs/{kb}/passages/{chunk_id}", 200, ())],
    models.Document: [("GET", "/api/kbs/{kb}/document", 200, ())],
    models.Session: [
        ("GET", "/api/sessions", 200, ("[]",)),
        ("GET", "/api/sessions/{session_id}", 200, ()),
    ],
}
# A field of a client model that one reply does not carry, and why.
INGEST, SOURCES = "/api/kbs/{kb}/ingest", "/api/kbs/{kb}/sources"
BUILD_ONLY = "a build's result: read from its job's SSE `end` event"
NOT_IN_REPLY = {
    (models.IngestResult, "version", INGEST): BUILD_ONLY,
    (models.IngestResult, "version", SOURCES): BUILD_ONLY,
    (models.IngestResult, "gate_reasons", INGEST): BUILD_ONLY,
    (models.IngestResult, "gate_reasons", SOURCES): BUILD_ONLY,
    (models.IngestResult, "refused", INGEST): "a crawl's result only",
    (models.IngestResult, "unchanged", INGEST): "a crawl's result only",
    (models.Session, "messages", "/api/sessions"): "one session's reply only (the list has none)",
}
# Client models read from streams (SSE, WebSocket): no response model describes them.
STREAMED = {
    models.Answer: "POST /api/ask's `end` event",
    models.Citation: "in an Answer",
    models.AskEvent: "SSE",
}
# Keys `lore.client.calls` reads outside the models.
CALL_KEYS = [("POST", "/api/kbs/{kb}/sources", 202, ("job", "id"))]


@pytest.fixture(scope="module")
def app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FastAPI]:
    lore = Lore(load_settings(home=tmp_path_factory.mktemp("wire")))
    yield create_app(lore, run_preflight=False)
    lore.close()


@pytest.fixture(scope="module")
def openapi(app: FastAPI) -> dict[str, Any]:
    return app.openapi()


def api_routes(app: FastAPI) -> list[APIRoute]:
    """Every HTTP route of the app, included routers walked."""
    out: list[APIRoute] = []

    def walk(routes: list[Any]) -> None:
        for r in routes:
            if hasattr(r, "original_router"):
                walk(r.original_router.routes)
            elif isinstance(r, APIRoute):
                out.append(r)

    walk(app.routes)
    return out


def json_routes(app: FastAPI) -> list[tuple[str, APIRoute]]:
    """(method, route) of every documented route answering JSON with a body (not a stream, file, page,
    image, 204)."""
    out = []
    for r in api_routes(app):
        response_class = getattr(r.response_class, "value", r.response_class)
        if r.include_in_schema and response_class is JSONResponse and r.status_code != 204:
            out += [(m, r) for m in sorted(r.methods - {"HEAD"})]
    return out


def is_model(tp: Any) -> bool:
    """A pydantic model, or a list of them."""
    if typing.get_origin(tp) is list:
        (tp,) = typing.get_args(tp)
    return isinstance(tp, type) and issubclass(tp, BaseModel)


def resolve(doc: dict[str, Any], schema: dict[str, Any]) -> dict[str, Any]:
    """The schema behind a $ref; of a nullable `anyOf`, the branch that is not null."""
    while True:
        if "$ref" in schema:
            schema = doc["components"]["schemas"][schema["$ref"].rsplit("/", 1)[-1]]
        elif "anyOf" in schema:
            branches = [s for s in schema["anyOf"] if s.get("type") != "null"]
            assert len(branches) == 1, f"a union of several shapes: {schema}"
            schema = branches[0]
        else:
            return schema


def reply_schema(doc: dict[str, Any], method: str, path: str, status: int) -> dict[str, Any]:
    op = doc["paths"][path][method.lower()]
    return resolve(doc, op["responses"][str(status)]["content"]["application/json"]["schema"])


def at(doc: dict[str, Any], schema: dict[str, Any], where: tuple[str, ...]) -> dict[str, Any]:
    """The schema at a path of property names and "[]" (an array's items)."""
    for step in where:
        if step == "[]":
            assert schema.get("type") == "array", f"not an array at {step}: {schema}"
            schema = resolve(doc, schema["items"])
        else:
            assert step in schema.get("properties", {}), f"no property {step!r} in {schema}"
            schema = resolve(doc, schema["properties"][step])
    return schema


def typed(doc: dict[str, Any], schema: dict[str, Any]) -> bool:
    """An object with declared properties, or an array of them; not a bare `object`."""
    if schema.get("type") == "array":
        return typed(doc, resolve(doc, schema["items"]))
    return bool(schema.get("properties"))


def client_fields(model: type) -> set[str]:
    return {f.name for f in dataclasses.fields(model)} - {"raw"}


def test_every_json_route_declares_a_response_model(app: FastAPI) -> None:
    missing = [
        (m, r.path)
        for m, r in json_routes(app)
        if (m, r.path) not in EXCEPTIONS and not is_model(r.response_model)
    ]
    assert not missing, f"JSON routes without a pydantic response model: {missing}"
    routes = {(m, r.path) for m, r in json_routes(app)}
    assert not set(EXCEPTIONS) - routes, "an exception names a route that no longer answers JSON"


def test_every_client_model_is_checked() -> None:
    """A model added to the client is mapped to its route here, or said to be streamed."""
    ours = {
        v
        for v in vars(models).values()
        if isinstance(v, type) and dataclasses.is_dataclass(v) and v.__module__ == models.__name__
    }
    assert ours - set(CLIENT_READS) - set(STREAMED) == {models.Location}  # a base: checked in Hit, Passage


def unread(doc: dict[str, Any], model: type) -> list[str]:
    """The fields `model` reads that a reply it is read from does not declare (as "method path: field")."""
    out = []
    for method, path, status, where in CLIENT_READS[model]:
        declared = set(at(doc, reply_schema(doc, method, path, status), where).get("properties", {}))
        out += [
            f"{method} {path}: {name}"
            for name in sorted(client_fields(model) - declared)
            if (model, name, path) not in NOT_IN_REPLY
        ]
    return out


@pytest.mark.parametrize("model", list(CLIENT_READS), ids=lambda m: m.__name__)
def test_client_reads_only_declared_fields(openapi: dict[str, Any], model: type) -> None:
    assert not unread(openapi, model), f"{model.__name__} reads fields its replies do not declare"


def test_not_in_reply_is_still_true(openapi: dict[str, Any]) -> None:
    """An exception above goes once the reply carries the field."""
    for model, name, path in NOT_IN_REPLY:
        assert name in client_fields(model)
        for method, p, status, where in CLIENT_READS[model]:
            if p == path:
                props = at(openapi, reply_schema(openapi, method, p, status), where).get("properties", {})
                assert name not in props, f"{model.__name__}.{name} is in {method} {p}'s reply now"


def test_keys_the_calls_read_are_declared(openapi: dict[str, Any]) -> None:
    for method, path, status, where in CALL_KEYS:
        assert at(openapi, reply_schema(openapi, method, path, status), where)


def test_openapi_types_every_json_reply(app: FastAPI, openapi: dict[str, Any]) -> None:
    bare = []
    for method, r in json_routes(app):
        if (method, r.path) in EXCEPTIONS:
            continue
        schema = reply_schema(openapi, method, r.path_format, r.status_code or 200)
        if not typed(openapi, schema):
            bare.append((method, r.path))
    for model, reads in CLIENT_READS.items():
        for method, path, status, where in reads:
            if not typed(openapi, at(openapi, reply_schema(openapi, method, path, status), where)):
                bare.append((method, f"{path} {'.'.join(where)} ({model.__name__})"))
    assert not bare, f"replies typed as a bare object in the OpenAPI document: {bare}"


def test_a_renamed_server_field_fails_the_check(openapi: dict[str, Any]) -> None:
    """The comparison itself: a server model whose field was renamed is reported for every route using it."""
    doc = copy.deepcopy(openapi)
    props = doc["components"]["schemas"]["KnowledgeBaseInfo"]["properties"]
    props["file_count"] = props.pop("files")
    assert unread(doc, models.KnowledgeBase) == [
        "GET /api/kbs: files",
        "GET /api/kbs/{kb}: files",
        "POST /api/kbs: files",
    ]
    assert not typed(doc, {"type": "object", "additionalProperties": True})


def test_models_live_in_the_application_layer(app: FastAPI) -> None:
    """Response models come from `lore.app` (one definition the transports share)."""
    outside = []
    for method, r in json_routes(app):
        tp = r.response_model
        if typing.get_origin(tp) is list:
            (tp,) = typing.get_args(tp)
        if is_model(tp) and not tp.__module__.startswith("lore.app."):
            outside.append((method, r.path, tp.__module__))
    assert not outside, f"response models outside lore.app: {outside}"
