"""Resolve one ask request's scenario and scope into the KB name, bounded options and runtime."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from lore.config import AnswerSettings
from lore.errors import LoreError
from lore.retrieve.search import SearchOptions
from lore.scenario.ask import ScenarioRuntime
from lore.scenario.config import Scenario, Scenarios
from lore.scenario.scope import Scope, ScopeError, check_scope, scenario_scope

if TYPE_CHECKING:
    from lore.engine import Lore


def scenarios(lore: Lore) -> Scenarios:
    """The configured scenarios folder."""
    return Scenarios(lore.settings.scenario.scenarios_dir)


def scenario_request(
    lore: Lore,
    name: str | None,
    options: SearchOptions,
    version: int | None,
    scenario_id: str | None,
    scope: Scope | None,
) -> tuple[str | None, SearchOptions, int | None, ScenarioRuntime | None, AnswerSettings]:
    """(kb name, options bounded by the scope, version to read, scenario runtime, answer settings)."""
    sc: Scenario | None = scenarios(lore).get(scenario_id) if scenario_id else None
    if sc is not None:
        if name and name != sc.kb_name:
            raise LoreError(f"scenario {sc.id!r} answers from knowledge base {sc.kb_name!r}, not {name!r}")
        name = sc.kb_name
        if scope is None:
            scope = scenario_scope(sc)
        else:
            scope = check_scope(scope, sc)
    elif scope is not None and scope.scenario is not None:
        raise ScopeError(f"scope is for scenario {scope.scenario!r}: pass scenario={scope.scenario!r}")
    assert scope is not None
    scope = scope.at_version(version)  # naming another version than the scope's needs time travel
    if options.filter.version_seq is not None and options.filter.version_seq != scope.version:
        raise ScopeError(f"version_seq {options.filter.version_seq}: set the version through the scope")
    bounded = replace(options, filter=scope.bound(options.filter))
    answer = lore.settings.answer
    if sc is None:
        return name, bounded, scope.version, None, answer
    runtime = ScenarioRuntime(sc, scope, lore.settings.scenario, cache=lore.search_cache)
    return (
        name,
        bounded,
        scope.version,
        runtime,
        answer.model_copy(update={"support_contact": sc.support_contact}),
    )
