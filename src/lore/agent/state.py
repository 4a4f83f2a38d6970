"""Deep mode's typed graph state (checkpointed per session) and per-request run context (not)."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Annotated, Any, TypedDict

from lore.agent.llm import Budget, ChatLLM
from lore.answer.evidence import Evidence
from lore.answer.generators.base import Generator
from lore.answer.pipeline import AskPipeline, Event
from lore.config import Settings
from lore.retrieve.search import SearchOptions
from lore.schema import Hit

HISTORY_MESSAGES = 20  # a session remembers its last 10 turns


def _last_turns(old: list[dict[str, str]], new: list[dict[str, str]]) -> list[dict[str, str]]:
    return (old + new)[-HISTORY_MESSAGES:]


class DeepState(TypedDict, total=False):
    """What the graph reads and writes. `history` accumulates across the turns of one session."""

    question: str
    standalone: str  # the question made self-contained from the session's history
    history: Annotated[list[dict[str, str]], _last_turns]
    kind: str  # simple | multi-hop | comparison
    plan_source: str  # rules | llm
    sub_questions: list[str]
    queries: list[str]  # the current search query of each sub-question
    sufficient: list[bool]
    round: int
    verdict: str  # sufficient | retry | rounds exhausted | budget spent
    trace: list[dict[str, Any]]  # this turn's steps (reset by `turn_input`)
    answer: str


def turn_input(question: str) -> DeepState:
    """A new turn: every per-turn field reset; `history` (a reducer) is kept by the checkpointer."""
    return DeepState(
        question=question,
        standalone=question,
        kind="simple",
        plan_source="rules",
        sub_questions=[],
        queries=[],
        sufficient=[],
        round=0,
        verdict="",
        answer="",
        trace=[],
    )


@dataclass
class RunContext:
    """One request's collaborators and working data (hits and evidence are not checkpointed)."""

    retriever: Any  # a Retriever or a drop-in (CachedRetriever)
    generator: Generator
    settings: Settings
    search: SearchOptions
    budget: Budget
    llm: ChatLLM | None
    emit: Callable[[Event], None] = lambda e: None
    trace_id: str = field(default_factory=lambda: uuid.uuid4().hex)
    hits: dict[int, list[Hit]] = field(default_factory=dict)
    evidence: dict[int, Evidence] = field(default_factory=dict)
    missing: dict[int, str] = field(default_factory=dict)  # the LLM grader's better query per sub-question
    consistent: dict[int, bool | None] = field(default_factory=dict)
    conflicts: dict[int, list[str]] = field(default_factory=dict)  # figures the documents disagree on
    timings_ms: dict[str, float] = field(default_factory=dict)
    history: list[dict[str, str]] | None = None  # the caller's own history; overrides the session's
    fast: Callable[[], AskPipeline] | None = (
        None  # the fast pipeline simple questions go to (e.g. a scenario's)
    )
    end: dict[str, Any] | None = None  # the `end` payload once finished
    error: Event | None = None

    def status(self, stage: str, **data: Any) -> dict[str, Any]:
        """Emit a status event and return it as a trace entry."""
        entry = {"stage": stage, **data}
        self.emit(Event("status", entry))
        return entry

    def timed(self, name: str, started: float) -> None:
        self.timings_ms[name] = self.timings_ms.get(name, 0.0) + (time.perf_counter() - started) * 1000
