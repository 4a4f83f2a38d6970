"""Asking through a scenario: resolve its KB, the caller's scope and its stages, then `Lore.ask`."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from lore.answer.pipeline import Event
from lore.engine import Lore
from lore.errors import LoreError
from lore.grant import Grant
from lore.retrieve.search import SearchOptions
from lore.scenario.ask import ScenarioRuntime
from lore.scenario.config import Scenario, Scenarios
from lore.scenario.scope import check_scope, scenario_scope


def scenarios(lore: Lore) -> Scenarios:
    """The configured scenarios folder."""
    return Scenarios(lore.settings.scenario.scenarios_dir)


def scenario_runtime(lore: Lore, sc: Scenario, scope: Grant) -> ScenarioRuntime:
    """The stages of one request through a scenario (its router, profiles and search cache)."""
    return ScenarioRuntime(sc, scope, lore.settings.scenario, cache=lore.search_cache)


def scenario_ask(
    lore: Lore,
    name: str | None,
    question: str,
    options: SearchOptions | None = None,
    version: int | None = None,
    *,
    scenario: str | None = None,
    scope: Grant | None = None,
    mode: str = "fast",
    rewrite: str = "off",
    session_id: str | None = None,
    history: Sequence[dict[str, str]] | None = None,
) -> Iterator[Event]:
    """`Lore.ask`, through `scenario` when named (its KB when `name` is None): routing, FAQ paths, prompt
    profiles and a retrieval plan, under the caller's scope checked against the scenario's lists."""
    if scenario is None:
        return lore.ask(
            name,
            question,
            options,
            version,
            scope=scope,
            mode=mode,
            rewrite=rewrite,
            session_id=session_id,
            history=history,
        )
    sc = scenarios(lore).get(scenario)
    if name and name != sc.kb_name:
        raise LoreError(f"scenario {sc.id!r} answers from knowledge base {sc.kb_name!r}, not {name!r}")
    scope = (scenario_scope(sc) if scope is None else check_scope(scope, sc)).at_version(version)
    return resolved_ask(
        lore,
        sc,
        scope,
        question,
        options,
        version,
        mode=mode,
        rewrite=rewrite,
        session_id=session_id,
        history=history,
    )


def resolved_ask(
    lore: Lore,
    sc: Scenario,
    scope: Grant,
    question: str,
    options: SearchOptions | None = None,
    version: int | None = None,
    *,
    mode: str = "fast",
    rewrite: str = "off",
    session_id: str | None = None,
    history: Sequence[dict[str, str]] | None = None,
    runtime: ScenarioRuntime | None = None,
) -> Iterator[Event]:
    """`Lore.ask` through a scenario and a scope already resolved and checked for it (at `version`), as
    the service resolves them once per request (with the `runtime` it made); `scenario_ask` resolves them
    from names."""
    runtime = runtime or scenario_runtime(lore, sc, scope)
    return lore.ask(
        sc.kb_name,
        question,
        options,
        version,
        scope=scope,
        stages=runtime,
        search_cache=runtime.cache,
        answer=lore.settings.answer.model_copy(update={"support_contact": sc.support_contact}),
        mode=mode,
        rewrite=rewrite,
        session_id=session_id,
        history=history,
    )
