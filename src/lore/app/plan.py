"""One question resolved for answering: what every transport's ask carries from resolution to trace."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Any

from lore.agent.rewrite import Standalone
from lore.app.requests import AskMode, QueryRewrite
from lore.app.scenarios import ScenarioCall
from lore.catalog.service_records import ChatSession
from lore.grant import Grant
from lore.retrieve.search import SearchOptions
from lore.scenario.ask import ScenarioRuntime


@dataclass
class AskPlan:
    """One question, resolved: knowledge base and version, session, standalone query, scoped options."""

    kb: str
    question: str
    query: str
    kb_version: int | None
    version: int | None  # asked for explicitly (time travel), else None = active
    options: SearchOptions
    transport: str
    tenant: str  # whose sessions and traces these are
    caller: Grant | None  # None: the local operator (CLI without a key)
    session: ChatSession | None = None
    rewrite: Standalone | None = None
    trace_id: str = field(default_factory=lambda: uuid.uuid4().hex)
    scenario: ScenarioCall | None = None  # asked through a scenario: its routing, FAQ, profiles, scope
    stages: ScenarioRuntime | None = None  # the scenario's stages, made once for the request
    mode: AskMode = "fast"
    query_rewrite: QueryRewrite = "off"  # query variants
    hide_bm25: bool = False  # the store's BM25 statistics count other tenants' chunks
    scope: Grant | None = None  # the operator's narrowing, applied by `Lore.ask` (a key's is in `options`)

    @property
    def scenario_id(self) -> str:
        return self.scenario.scenario.id if self.scenario else "default"

    @property
    def session_id(self) -> str | None:
        return self.session.id if self.session else None

    def asked(self) -> dict[str, Any]:
        """What was asked, as the `start` event and the trace both record it."""
        return {
            "session_id": self.session_id,
            "kb": self.kb,
            "kb_version": self.kb_version,
            "question": self.question,
            "query": self.query,
        }
