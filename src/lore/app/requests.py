"""The question a caller sends, the same on every path: SSE, WebSocket, OpenAI-compatible chat, MCP."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from lore.app.fields import Name, Seq

AskMode = Literal["fast", "deep"]
QueryRewrite = Literal["off", "on", "hyde"]


class AskRequest(BaseModel):
    """A question to a knowledge base or a scenario; the caller's scope comes from its key, not from here."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    kb: Name | None = Field(default=None, description="Knowledge base name (or give `scenario`).")
    scenario: Name | None = Field(
        default=None,
        description="Scenario id: routing, FAQ, prompt profiles and "
        "the scenario's access lists bound the key's scope (or give `kb`).",
    )
    source: Name | None = Field(
        default=None, description="Only this business source (e.g. a scenario source)."
    )
    question: str = Field(description="The question, Chinese or English.")
    session_id: Name | None = Field(default=None, description="Continue this session (follow-ups use it).")
    new_session: bool = Field(default=True, description="Open a session when no session_id is given.")
    version: Seq | None = Field(default=None, description="Answer from this version (admin keys only).")
    top_k: int | None = Field(default=None, ge=1, le=50, description="Hits handed to context building.")
    mode: AskMode = Field(
        default="fast",
        description="deep: plan sub-questions, retrieve, "
        "grade and retry (at most 3 rounds); status events show each round.",
    )
    rerank: bool | None = Field(
        default=None,
        description="false: no reranking; true/absent: the configured "
        "reranker where the retrieval plan uses it.",
    )
    rewrite: QueryRewrite = Field(
        default="off",
        description="Search query variants (fast mode); "
        "LLM steps are skipped with a note when no LLM is configured.",
    )

    @model_validator(mode="after")
    def _one_target(self) -> AskRequest:
        if (self.kb is None) == (self.scenario is None):
            raise ValueError("give exactly one of 'kb' and 'scenario'")
        return self


class SearchRequest(BaseModel):
    """A search; tenant, datasets and roles come from the API key."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    kb: Name
    query: str = Field(min_length=1, description="At most `answer.max_question_chars` characters.")
    top_k: int = Field(default=10, ge=1, le=100)
    mode: Literal["dense", "bm25", "hybrid"] | None = None
    version: Seq | None = Field(default=None, description="Search this version (admin keys only).")
    rerank: bool | None = Field(
        default=None,
        description="Re-score the candidates with the configured "
        "reranker (default: as configured; false: first-stage order).",
    )
    recall_k: int | None = Field(
        default=None,
        ge=1,
        le=1000,
        description="Candidates recalled before rerank/cut (default: configured).",
    )
    rerank_k: int | None = Field(
        default=None, ge=1, le=1000, description="Candidates re-scored (default: [rerank] rerank_k)."
    )
    rrf_k: int | None = Field(
        default=None, ge=1, le=1000, description="Hybrid fusion's RRF constant (default: [retrieve] rrf_k)."
    )
    explain: bool = Field(
        default=False,
        description="Also judge the hits as an answer would (`evidence`: P(the KB answers), the KB's "
        "refusal threshold).",
    )
