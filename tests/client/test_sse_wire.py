"""Server-sent events between the service's framing (sse-starlette's encoder, in `LiveResponse`) and the
Python client's reader (httpx-sse), through a real uvicorn: a `data:` payload over several lines arrives
whole, comments are skipped, and the framing of Lore's own events stays what the console reads."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Iterator
from types import SimpleNamespace
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from fastapi.responses import JSONResponse

from lore.api.live import LiveResponse, Slot, sse, sse_frame
from lore.client import AsyncLoreClient, LoreAPIError, LoreClient
from tests.api.conftest import LiveServer

# An answer whose JSON is written over many lines (indented), with line breaks inside its strings too.
END = {"answer": "第一行\n第二行\r\nthird line", "citations": [{"n": 1, "quote": "a\nb"}], "refused": False}
START = {"trace_id": "t1", "session_id": "s1", "kb": "hb"}


def _app(slots: list[Slot]) -> FastAPI:
    app = FastAPI()

    async def frames() -> AsyncIterator[str]:
        yield sse({"event": "start", "data": START})
        yield ": a comment line, as a keep-alive would send\n\n"
        yield sse({"event": "token", "data": {"text": "第一行\n"}})
        yield sse_frame("end", json.dumps(END, ensure_ascii=False, indent=2))

    @app.post("/api/ask")
    async def ask() -> LiveResponse:
        slot = Slot(SimpleNamespace(tenant_streams={"t": 1}), "t")  # type: ignore[arg-type]
        slots.append(slot)
        return LiveResponse(frames(), slot)

    @app.post("/not-a-stream/api/ask")
    async def not_a_stream() -> JSONResponse:
        return JSONResponse({"answer": "a JSON reply where events were expected"})

    return app


@pytest.fixture(scope="module")
def served() -> Iterator[tuple[LiveServer, list[Slot]]]:
    slots: list[Slot] = []
    with LiveServer(_app(slots)) as server:
        yield server, slots


def _check(events: list[Any]) -> None:
    assert [e.event for e in events] == ["start", "token", "end"]
    assert events[0].data == START and events[1].data == {"text": "第一行\n"}
    assert events[2].data == END  # every `data:` line of the event, joined, is the JSON sent


def test_the_multi_line_payload_is_framed_as_several_data_lines(
    served: tuple[LiveServer, list[Slot]],
) -> None:
    server = served[0]
    body = httpx.post(f"{server.url}/api/ask", timeout=30).text
    end = body[body.index("event: end\n") :]
    assert end.count("\ndata: ") == len(json.dumps(END, ensure_ascii=False, indent=2).splitlines()) > 5


def test_a_multi_line_data_payload_round_trips_to_the_sync_client(
    served: tuple[LiveServer, list[Slot]],
) -> None:
    with LoreClient(served[0].url) as client:
        _check(list(client.ask_stream("q", "hb")))


def test_a_multi_line_data_payload_round_trips_to_the_async_client(
    served: tuple[LiveServer, list[Slot]],
) -> None:
    async def run() -> list[Any]:
        async with AsyncLoreClient(served[0].url) as client:
            return [e async for e in client.ask_stream("q", "hb")]

    _check(asyncio.run(run()))


def test_a_reply_that_is_not_an_event_stream_is_an_api_error(served: tuple[LiveServer, list[Slot]]) -> None:
    with LoreClient(served[0].url + "/not-a-stream") as client, pytest.raises(LoreAPIError) as caught:
        list(client.ask_stream("q", "hb"))
    assert "text/event-stream" in str(caught.value) and "application/json" in str(caught.value)


def test_lores_events_keep_the_wire_format_the_console_reads() -> None:
    # common.js splits events on a blank line and reads `event: ` and `data: ` lines (LF line ends).
    event = {"event": "token", "data": {"text": "两行\n文字", "n": 1}}
    assert sse(event) == 'event: token\ndata: {"text": "两行\\n文字", "n": 1}\n\n'
    assert sse_frame("end", "a\r\nb\rc\nd") == "event: end\ndata: a\ndata: b\ndata: c\ndata: d\n\n"
    assert sse_frame("bad\nname", "x").startswith("event: badname\n")  # no line injected through a name
