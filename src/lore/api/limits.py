"""Request limits: body bytes counted as they arrive, valid UTF-8 without lone surrogates, text lengths,
integer ranges. Every limit gives a 4xx naming it, before any work is done."""

from __future__ import annotations

import json
import re
from typing import Any

from fastapi import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from lore.api.security import HttpMiddleware, error_response

MULTIPART_SLACK = 64 * 1024  # boundaries and part headers on top of an upload's file bytes

_SUSPECT_ESCAPE = re.compile(rb"\\u(?:[dD][89a-fA-F][0-9a-fA-F]{2}|0000)")  # surrogates, NUL
_BAD_CHAR = re.compile("[\ud800-\udfff\x00]")


def bad_characters(data: Any) -> bool:
    """Does any string (key or value) in decoded JSON hold a lone UTF-16 surrogate (not encodable as UTF-8)
    or a NUL character (which no catalog column may hold)?"""
    stack = [data]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            if _BAD_CHAR.search(item):
                return True
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return False


def text_problem(body: bytes) -> str | None:
    """Why a JSON body is not valid text (invalid UTF-8, a lone surrogate or NUL escape), else None."""
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as exc:
        return f"request body is not valid UTF-8 (byte {exc.start})"
    if "\x00" in text:
        return "request body holds a NUL character"
    if not _SUSPECT_ESCAPE.search(body):
        return None
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):
        return None  # not JSON: the endpoint's own validation names the problem
    return (
        (
            "request body holds a lone UTF-16 surrogate (\\ud800-\\udfff) or a NUL character, which are not "
            "valid text"
        )
        if bad_characters(data)
        else None
    )


class BodyLimits(HttpMiddleware):
    """ASGI middleware: cap every request body, counting the bytes received whatever Content-Length says.

    Multipart uploads stream through with their cap (`upload_bytes`); other bodies (JSON) are read whole
    up to `body_bytes`, and refused with 422 when they are not valid UTF-8 or hold lone surrogates.
    """

    def __init__(self, app: ASGIApp, *, body_bytes: int, upload_bytes: int) -> None:
        super().__init__(app)
        self.body_bytes, self.upload_bytes = body_bytes, upload_bytes

    async def http(self, scope: Scope, receive: Receive, send: Send) -> None:
        if "\x00" in scope.get("path", "") or b"%00" in scope.get("query_string", b""):
            await self._refuse(scope, receive, send, 422, "NUL characters are not allowed in the URL")
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        ctype = headers.get("content-type", "").lower()
        multipart = ctype.startswith("multipart/")
        cap = self.upload_bytes if multipart else self.body_bytes
        what = "upload request" if multipart else "request body"
        declared = headers.get("content-length", "")
        if declared.isdigit() and int(declared) > cap:
            await self._refuse(
                scope,
                receive,
                send,
                413,
                f"{what} of {int(declared) / 1e6:.1f} MB is over the limit of {cap / 1e6:g} MB",
            )
            return
        if multipart:
            await self.app(scope, _counting(receive, cap, what), send)
            return
        body, more, received = bytearray(), True, 0
        while more:
            message = await receive()
            if message["type"] != "http.request":
                await self.app(scope, _replay(b"", receive, message), send)
                return
            chunk = message.get("body", b"")
            received += len(chunk)
            if received > cap:
                await self._refuse(scope, receive, send, 413, f"{what} is over the limit of {cap / 1e6:g} MB")
                return
            body += chunk
            more = message.get("more_body", False)
        json_like = not ctype or "json" in ctype
        if json_like and body and (problem := text_problem(bytes(body))):
            await self._refuse(scope, receive, send, 422, problem)
            return
        await self.app(scope, _replay(bytes(body), receive), send)

    @staticmethod
    async def _refuse(scope: Scope, receive: Receive, send: Send, status: int, detail: str) -> None:
        await error_response(scope.get("path", ""), status, detail)(scope, receive, send)


def _counting(receive: Receive, cap: int, what: str) -> Receive:
    """`receive` that raises 413 once more than `cap` body bytes have arrived."""
    received = 0

    async def wrapped() -> Message:
        nonlocal received
        message = await receive()
        if message["type"] == "http.request":
            received += len(message.get("body", b""))
            if received > cap:
                raise HTTPException(413, f"{what} is over the limit of {cap / 1e6:g} MB")
        return message

    return wrapped


def _replay(body: bytes, receive: Receive, first: Message | None = None) -> Receive:
    """`receive` that gives the buffered body once (or `first`), then passes through (disconnects)."""
    pending: list[Message] = (
        [first] if first is not None else [{"type": "http.request", "body": body, "more_body": False}]
    )

    async def wrapped() -> Message:
        return pending.pop() if pending else await receive()

    return wrapped
