"""The deterministic part of answering in a scenario: route, intent, prompt profile and retrieval plan.

`ScenarioRuntime.route` acts on it; the console's routing test shows it for a question (nothing is searched).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from lore.scenario.plan import RetrievalPlan, detect_intent, make_plan
from lore.scenario.profiles import ChosenProfile, PromptProfile, choose_profile
from lore.scenario.routing import Route, Router


@dataclass
class RoutingDecision:
    """Where a question goes and how it would be answered."""

    route: Route
    intent: str
    profile: ChosenProfile
    plan: RetrievalPlan

    def source(self) -> dict[str, Any]:
        """The business source the scenario's patterns point at (one: inferred; several: ambiguous)."""
        found = self.route.sources
        if len(found) == 1:
            return {"ids": found, "how": "inferred"}
        return {"ids": [], "how": "ambiguous" if found else "none", "candidates": found}


def decide(
    router: Router,
    profiles: dict[str, PromptProfile],
    variables: dict[str, str],
    question: str,
    *,
    top_k: int,
    recall_k: int,
    rerank: bool,
    max_passages: int,
    context_budget: int,
    faq_threshold: float,
) -> RoutingDecision:
    """Route the question, detect its intent, choose the profile and plan retrieval."""
    route = router.route(question)
    intent = detect_intent(question)
    profile = choose_profile(route.risk, intent, variables, profiles)
    plan = make_plan(
        question,
        intent=intent,
        risk=route.risk,
        doc_k=top_k,
        recall_k=recall_k,
        max_passages=max_passages,
        context_budget=context_budget,
        faq_threshold=faq_threshold,
        rerank=rerank,
    )
    return RoutingDecision(route, intent, profile, plan)
