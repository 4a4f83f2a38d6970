"""OpenAI-compatible chat: `POST /v1/chat/completions` (model = knowledge base) and `GET /v1/models`.

Answers carry `[n]` markers; the cited passages are in a top-level `citations` list (non-streaming)
and in the final streamed chunk, with Lore's route, confidences and trace id under `lore`. `usage` is what
the LLM endpoint reported for the request's calls, or else estimated by `lore.text.units.estimate_tokens`.
"""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator
from typing import Annotated, Any, Literal

from fastapi import APIRouter, HTTPException, Request
from pydantic import BaseModel, ConfigDict, Field
from starlette.concurrency import run_in_threadpool
from starlette.responses import JSONResponse, Response

from lore.answer.generators.openai_chat import USAGE, UsageMeter
from lore.api.deps import Caller, State, bearer
from lore.api.live import LiveResponse, Watch, guarded, open_slot
from lore.api.routers.ask import ask_result, start_stream
from lore.app.access import visible_kbs
from lore.app.fields import MAX_ITEMS, NAME_CHARS
from lore.app.requests import AskRequest
from lore.app.scenarios import MODEL_PREFIX, visible_scenarios
from lore.text.units import estimate_tokens

router = APIRouter(prefix="/v1", tags=["openai-compatible"])


class ChatMessage(BaseModel):
    """One message; `content` is text or a list of `{"type": "text", "text": ...}` parts."""

    model_config = ConfigDict(extra="allow")

    role: Literal["system", "user", "assistant", "tool", "developer"]
    # Text is checked against `answer.max_question_chars` when read (a 422 naming that limit).
    content: str | Annotated[list[dict[str, Any]], Field(max_length=MAX_ITEMS)] | None = None

    def text(self) -> str:
        if isinstance(self.content, list):
            return "".join(str(p.get("text", "")) for p in self.content if p.get("type") == "text")
        return self.content or ""


class StreamOptions(BaseModel):
    """`include_usage`: a last chunk, before `[DONE]`, with `choices: []` and the request's `usage`."""

    model_config = ConfigDict(extra="allow")

    include_usage: bool = False


class ChatRequest(BaseModel):
    """The subset of the chat-completions request Lore uses; other OpenAI parameters are accepted and
    ignored."""

    model_config = ConfigDict(extra="allow")

    model: str = Field(
        max_length=NAME_CHARS, description="A knowledge base name, or `scenario:<id>` (see GET /v1/models)."
    )
    messages: list[ChatMessage] = Field(min_length=1, max_length=MAX_ITEMS)
    stream: bool = False
    stream_options: StreamOptions | None = None


def _lore_extra(end: dict[str, Any], meter: UsageMeter) -> dict[str, Any]:
    extra = {
        k: end.get(k)
        for k in (
            "trace_id",
            "route",
            "refused",
            "evidence_confidence",
            "answer_confidence",
            "low_confidence",
            "warning",
            "answer",
            "scenario",
            "plan",
            "faq_match",
        )
    }
    extra["profile"] = (end.get("profile") or {}).get("name")
    extra["usage"] = "llm" if meter.reported else "estimated"  # where `usage` comes from
    return extra


def _error_status(data: dict[str, Any]) -> int:
    return {"internal": 500, "generate": 502}.get(str(data.get("stage") or data.get("kind")), 400)


def _usage(meter: UsageMeter, messages: list[ChatMessage], answer: str) -> dict[str, Any]:
    """The upstream LLM's reported usage when it wrote the answer; else estimated: the prompt is the text of
    every message sent, the completion the answer."""
    if meter.reported:
        prompt, completion = meter.prompt_tokens, meter.completion_tokens
    else:
        prompt = sum(estimate_tokens(m.text()) for m in messages)
        completion = estimate_tokens(answer)
    return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}


@router.post("/chat/completions", response_model=None)
async def chat_completions(body: ChatRequest, request: Request, scope: Caller, state: State) -> Response:
    """Answer the last user message from the knowledge base named by `model`; earlier user turns are
    history."""
    users = [m.text() for m in body.messages if m.role == "user"]
    if not users:
        raise HTTPException(400, "messages: no user message to answer")
    if body.model.startswith(MODEL_PREFIX):
        ask = AskRequest(
            scenario=body.model.removeprefix(MODEL_PREFIX), question=users[-1], new_session=False
        )
    else:
        ask = AskRequest(kb=body.model, question=users[-1], new_session=False)
    created, model = int(time.time()), body.model
    meter = UsageMeter()
    USAGE.set(meter)  # the LLM calls made for this request (standalone rewrite, answer) add to it
    if body.stream:
        slot = open_slot(state, scope)  # 429 over the tenant's open streams
        with slot.until_opened():
            events = await start_stream(state, scope, ask, "openai", history=users[:-1])
            watch = Watch(state, bearer(request.headers.get("authorization")))
            usage = body.stream_options.include_usage if body.stream_options else False
            reply = _Reply(created, model, meter, body.messages, usage)
            return LiveResponse(reply.chunks(events, watch), slot)
    result = await ask_result(state, scope, ask, "openai", history=users[:-1])
    end, error = result.end, result.error
    if end is None:
        data = error or {"message": "the answer stream ended without a result"}
        return JSONResponse(
            {"error": {"message": data["message"], "type": "lore_error", "trace_id": data.get("trace_id")}},
            _error_status(data),
        )
    return JSONResponse(
        {
            "id": f"chatcmpl-{end['trace_id']}",
            "object": "chat.completion",
            "created": created,
            "model": model,
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": end["answer"]},
                    "finish_reason": "stop",
                }
            ],
            "usage": _usage(meter, body.messages, end["answer"]),
            "citations": end["citations"],
            "lore": _lore_extra(end, meter),
        }
    )


class _Reply:
    """One streamed completion: `chat.completion.chunk` events from the answer's events."""

    def __init__(
        self, created: int, model: str, meter: UsageMeter, messages: list[ChatMessage], usage: bool
    ) -> None:
        self.created, self.model, self.meter, self.messages = created, model, meter, messages
        self.usage = usage  # stream_options.include_usage
        self.id = "chatcmpl-"

    def chunk(self, delta: dict[str, Any], finish: str | None = None, **extra: Any) -> str:
        choices = [{"index": 0, "delta": delta, "finish_reason": finish}]
        return self._event(choices=choices, **({"usage": None} if self.usage else {}), **extra)

    def _event(self, **fields: Any) -> str:
        payload = {
            "id": self.id,
            "object": "chat.completion.chunk",
            "created": self.created,
            "model": self.model,
            **fields,
        }
        return f"data: {json.dumps(payload, ensure_ascii=False)}\n\n"

    async def chunks(self, events: AsyncIterator[dict[str, Any]], watch: Watch) -> AsyncIterator[str]:
        """A role chunk, a content chunk per `token` event, the final chunk with the citations, then (with
        `include_usage`) a usage chunk, and `[DONE]`; an `error` event is an `error` payload."""
        # Set again in the task that streams: the answer runs in a task copied from this one's context.
        USAGE.set(self.meter)
        guarded_events = guarded(events, watch)
        try:
            async for event in guarded_events:
                kind, data = event["event"], event["data"]
                if kind == "start":
                    self.id += data["trace_id"]
                    yield self.chunk({"role": "assistant", "content": ""})
                elif kind == "token" and data["text"]:
                    yield self.chunk({"content": data["text"]})
                elif kind == "end":
                    yield self.chunk(
                        {}, "stop", citations=data["citations"], lore=_lore_extra(data, self.meter)
                    )
                    if self.usage:
                        yield self._event(choices=[], usage=_usage(self.meter, self.messages, data["answer"]))
                elif kind == "error":
                    err = {
                        "message": data["message"],
                        "type": "lore_error",
                        "code": data.get("status"),
                        "trace_id": data.get("trace_id"),
                    }
                    yield f"data: {json.dumps({'error': err}, ensure_ascii=False)}\n\n"
            yield "data: [DONE]\n\n"
        finally:
            await guarded_events.aclose()  # type: ignore[attr-defined]


@router.get("/models")
async def models(scope: Caller, state: State) -> dict[str, Any]:
    """One model per knowledge base, and `scenario:<id>` per scenario serving the key's tenant."""
    kbs = await run_in_threadpool(visible_kbs, state.lore, scope)
    found = await run_in_threadpool(visible_scenarios, state.lore, scope)
    created = {kb.name: int(kb.created_at.timestamp()) for kb in kbs}
    return {
        "object": "list",
        "data": [
            *(
                {
                    "id": kb.name,
                    "object": "model",
                    "created": created[kb.name],
                    "owned_by": "lore",
                    "description": kb.description,
                }
                for kb in kbs
            ),
            *(
                {
                    "id": MODEL_PREFIX + sc.id,
                    "object": "model",
                    "created": created.get(sc.kb_name, 0),
                    "owned_by": "lore",
                    "description": sc.name,
                    "kb": sc.kb_name,
                }
                for sc in found
            ),
        ],
    }
