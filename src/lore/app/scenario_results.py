"""Typed results about scenarios: the picker's list, a scenario's configuration, its FAQ rows and a routing
test (the HTTP API's response models)."""

from __future__ import annotations

from lore.app.results import Result
from lore.scenario.config import Access, Defaults, ProfileText, Risk, Routing, Source
from lore.scenario.plan import RetrievalPlan
from lore.scenario.routing import Route


class SourceLabel(Result):
    """A business source of a scenario, as the picker shows it."""

    id: str
    label: str


class ScenarioSummary(Result):
    """A scenario serving the caller's tenant, with its knowledge base and business sources."""

    id: str
    name: str
    domain: str
    description: str
    kb: str
    assistant_name: str
    sources: list[SourceLabel]


class ScenarioDetail(Result):
    """A scenario's configuration (`scenario.toml`) with its resolved KB, access lists and editability."""

    id: str
    name: str
    domain: str
    description: str
    kb: str
    assistant_name: str
    support_contact: str
    sources: list[Source]
    variables: dict[str, str]
    defaults: Defaults
    access: Access
    routing: Routing
    risk: Risk
    profiles: dict[str, ProfileText]
    tenants: list[str]
    datasets: list[str]
    faq_file: bool
    writable: bool


class FaqRowInfo(Result):
    """One FAQ row as the chunk it becomes, with its status: ok, duplicate, conflict, disabled, invalid."""

    index: int
    line: int
    question: str
    answer: str
    source: str
    tenant: str
    dataset: str
    visibility: str
    roles: list[str]
    disabled: bool
    status: str
    reason: str
    clash: list[int]


class FaqList(Result):
    """The FAQ rows the caller reads, at `revision` (edits name it), and how many it does not see."""

    scenario: str
    revision: str
    writable: bool
    rows: list[FaqRowInfo]
    hidden: int


class ChosenProfileInfo(Result):
    """The prompt profile chosen for a question, why, and the notice shown with its answers."""

    name: str
    reason: str
    notice: str | None


class SourceGuess(Result):
    """The business source the scenario's patterns point at (`how`: inferred, ambiguous or none)."""

    ids: list[str]
    how: str
    candidates: list[str] | None = None


class RouteTest(Result):
    """Where a question goes and how it would be answered (nothing searched or generated)."""

    scenario: str
    question: str
    route: Route
    direct: bool
    intent: str
    profile: ChosenProfileInfo
    plan: RetrievalPlan
    source: SourceGuess
