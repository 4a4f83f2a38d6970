"""`lore mcp`: Lore's knowledge bases as MCP tools (official `mcp` SDK), over stdio or streamable HTTP.

Every tool call authenticates its API key (stdio: the key given at start; HTTP: the request's
`Authorization: Bearer` header) and then runs the same handler as the HTTP API, so the key's grant
bounds it exactly as it bounds `/api/...`: the same scope, checks, rate limit and error statuses.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from functools import wraps
from typing import Any, Literal, ParamSpec, TypeVar

from fastapi import HTTPException
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import ValidationError
from starlette.concurrency import run_in_threadpool
from starlette.types import ASGIApp, Receive, Scope, Send

from lore.api.deps import ServiceState, authenticate, bearer
from lore.api.routers import kbs, passages
from lore.app import searching
from lore.app.access import visible_kbs
from lore.app.conversation import answer, prepare_ask
from lore.app.requests import AskRequest, SearchRequest
from lore.engine import Lore
from lore.errors import LoreError, error_status
from lore.grant import Grant as Caller
from lore.state.ratelimit import make_rate_limiter

P = ParamSpec("P")
R = TypeVar("R")
INSTRUCTIONS = (
    "Lore answers questions from an organisation's knowledge bases with numbered citations, and "
    "refuses when the documents do not cover the question. Call list_knowledge_bases first; use "
    "search for passages, ask for a cited answer, get_passage/get_document to read a source."
)


def _tool_errors(fn: Callable[P, Awaitable[R]]) -> Callable[P, Awaitable[R]]:
    """HTTP-style refusals (401/403/404/409/429...) as tool errors that carry the status and the reason."""

    @wraps(fn)
    async def call(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return await fn(*args, **kwargs)
        except HTTPException as exc:
            raise ToolError(f"{exc.status_code}: {exc.detail}") from exc
        except LoreError as exc:
            raise ToolError(f"{error_status(exc)}: {exc}") from exc
        except ValidationError as exc:
            problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
            raise ToolError(f"400: bad arguments ({problems})") from exc

    return call


def service_state(lore: Lore) -> ServiceState:
    """What the tools share, as the HTTP API's handlers do (the per-key rate limit included)."""
    return ServiceState(lore, make_rate_limiter(lore.settings))


def build_server(state: ServiceState, api_key: str | None = None) -> MCPServer:
    """The MCP server over the service state; `api_key` is the stdio caller's key (HTTP callers send
    theirs)."""
    server = MCPServer("lore", instructions=INSTRUCTIONS, version="0.1.0", log_level="WARNING")

    async def caller(ctx: Context) -> Caller:
        headers = ctx.headers
        secret = bearer(headers.get("authorization")) if headers is not None else api_key
        return await authenticate(state, secret)

    @server.tool()
    @_tool_errors
    async def list_knowledge_bases(ctx: Context) -> list[dict[str, Any]]:
        """The knowledge bases this API key can read: name, description, files, chunks, active version."""
        rows = await kbs.list_kbs(await caller(ctx), state)
        return [{k: r[k] for k in ("name", "description", "files", "chunks", "active_version")} for r in rows]

    @server.tool()
    @_tool_errors
    async def search(
        kb: str,
        query: str,
        ctx: Context,
        top_k: int = 5,
        mode: Literal["dense", "bm25", "hybrid"] | None = None,
        version: int | None = None,
    ) -> dict[str, Any]:
        """Hybrid search of one knowledge base: passages best first, each with file, page, sheet/row, heading
        and `chunk_id` (for get_passage). `version` (admin keys): search that version instead of the
        active."""
        body = SearchRequest(kb=kb, query=query, top_k=top_k, mode=mode, version=version)
        found = await run_in_threadpool(searching.search, state.lore, await caller(ctx), body)
        return found.model_dump()

    @server.tool()
    @_tool_errors
    async def ask(
        question: str,
        ctx: Context,
        kb: str | None = None,
        scenario: str | None = None,
        mode: Literal["fast", "deep"] = "fast",
        session_id: str | None = None,
        version: int | None = None,
    ) -> dict[str, Any]:
        """Answer a question from a knowledge base (or a scenario) with `[n]` citations to numbered passages.
        When the documents do not cover it, `refused` is true and the answer says so: that is a normal
        result."""
        body = AskRequest(
            kb=kb,
            scenario=scenario,
            question=question,
            mode=mode,
            session_id=session_id,
            new_session=False,
            version=version,
        )
        plan = await run_in_threadpool(prepare_ask, state.lore, await caller(ctx), body, "mcp")
        result = await run_in_threadpool(answer, state.lore, plan)
        if result.error is not None:
            raise ToolError(str(result.error.get("message")))
        if result.end is None:
            raise ToolError("the answer stream ended without a result")
        start, end = result.start, result.end
        return {
            "answer": end["answer"],
            "refused": end["refused"],
            "route": end["route"],
            "citations": end["citations"],
            "warning": end.get("warning"),
            "evidence_confidence": end.get("evidence_confidence"),
            "kb": start.get("kb"),
            "kb_version": start.get("kb_version"),
            "trace_id": end.get("trace_id"),
            "session_id": end.get("session_id"),
        }

    @server.tool()
    @_tool_errors
    async def get_passage(
        chunk_id: str, ctx: Context, kb: str | None = None, version: int | None = None
    ) -> dict[str, Any]:
        """One passage by the `chunk_id` of a search hit or citation, with its surrounding text and
        location. Without `kb`, every knowledge base this key reads is searched for it; `version` needs
        `kb`."""
        who = await caller(ctx)
        if kb is not None:
            return await passages.get_passage(kb, chunk_id, who, state, version)
        if version is not None:
            raise HTTPException(400, "version needs kb: a version number belongs to one knowledge base")
        return await _passage_anywhere(state, who, chunk_id)

    @server.tool()
    @_tool_errors
    async def get_document(kb: str, file: str, ctx: Context, version: int | None = None) -> dict[str, Any]:
        """The text of one indexed file (the `file` of a hit or citation), section by section with
        locations."""
        return await passages.get_document(kb, file, await caller(ctx), state, version)

    return server


async def _passage_anywhere(state: ServiceState, who: Caller, chunk_id: str) -> dict[str, Any]:
    """The passage from whichever of the caller's readable KBs holds it (chunk ids include their KB's id,
    so at most one does; 409 rather than a guess if that ever fails)."""
    found = []
    for record in await run_in_threadpool(visible_kbs, state.lore, who):
        try:
            found.append(await passages.get_passage(record.name, chunk_id, who, state))
        except HTTPException as exc:
            if exc.status_code not in (403, 404):  # a KB it may list but not read: not there for it
                raise
    if not found:
        raise HTTPException(404, f"passage {chunk_id!r} not found in the knowledge bases this key reads")
    if len(found) > 1:
        names = ", ".join(repr(p["kb"]) for p in found)
        raise HTTPException(409, f"passage {chunk_id!r} is in several knowledge bases ({names}): give kb")
    return found[0]


class BearerGate:
    """ASGI: a request without a live API key gets 401 before any MCP processing (each tool call then
    authenticates again, which also counts it against the key's rate limit)."""

    def __init__(self, app: ASGIApp, state: ServiceState) -> None:
        self.app, self.state = app, state

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
            try:
                await authenticate(self.state, bearer(headers.get("authorization")), count=False)
            except HTTPException as exc:
                body = json.dumps({"detail": exc.detail}).encode()
                await send(
                    {
                        "type": "http.response.start",
                        "status": exc.status_code,
                        "headers": [(b"content-type", b"application/json"), (b"www-authenticate", b"Bearer")],
                    }
                )
                await send({"type": "http.response.body", "body": body})
                return
        await self.app(scope, receive, send)


def http_app(lore: Lore, host: str = "127.0.0.1", path: str = "/mcp") -> ASGIApp:
    """The streamable-HTTP MCP app (at `path`), behind the API-key gate."""
    state = service_state(lore)
    app = build_server(state).streamable_http_app(streamable_http_path=path, host=host)
    return BearerGate(app, state)
