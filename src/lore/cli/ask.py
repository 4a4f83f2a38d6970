"""`lore ask`: stream an answer with its status, then the numbered sources."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from lore.cli import remote
from lore.cli.render import fail, source_quote, split_list, where
from lore.errors import LoreError

if TYPE_CHECKING:  # the engine loads when a question is asked, not for `lore ask --help`
    from lore.engine import Lore
    from lore.scenario.scope import Scope

console = Console()
err = Console(stderr=True)


def ask(
    question: str,
    kb: Annotated[
        str | None, typer.Option("--kb", help="Knowledge base name (optional with --scenario).")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
    k: Annotated[int, typer.Option("-k", help="Hits handed to context building.")] = 10,
    version: Annotated[
        int | None, typer.Option("--version", help="Answer from this version (default: active).")
    ] = None,
    scenario: Annotated[
        str | None, typer.Option("--scenario", help="Scenario id (routing, FAQ, profiles).")
    ] = None,
    tenant: Annotated[str | None, typer.Option("--tenant", help="Tenant to ask as.")] = None,
    roles: Annotated[str | None, typer.Option("--roles", help="Roles held, comma-separated.")] = None,
    datasets: Annotated[
        str | None, typer.Option("--datasets", help="Datasets to search, comma-separated.")
    ] = None,
    source: Annotated[str | None, typer.Option("--source", help="Only this business source.")] = None,
    mode: Annotated[
        str,
        typer.Option(
            "--mode", help="fast, or deep: plan sub-questions, retrieve, grade, retry (at most 3 rounds)."
        ),
    ] = "fast",
    rewrite: Annotated[str, typer.Option("--rewrite", help="Query rewriting: off | on | hyde.")] = "off",
    session: Annotated[
        str | None, typer.Option("--session", help="Session id for follow-up questions.")
    ] = None,
) -> None:
    """Answer a question from a knowledge base, with numbered citations."""
    try:
        if (c := remote.client()) is not None:
            if tenant is not None or roles is not None or datasets is not None:
                raise remote.local_only("--tenant/--roles/--datasets")
            if kb is None and scenario is None:
                raise LoreError("--kb: required unless --scenario is given")
            events = remote.ask_events(
                c,
                question,
                kb=kb,
                scenario=scenario,
                top_k=k,
                version=version,
                source=source,
                mode=mode,
                rewrite=rewrite,
                session_id=session,
            )
        else:
            events = _local_events(
                question, kb, k, version, scenario, tenant, roles, datasets, source, mode, rewrite, session
            )
        end = _show(events, as_json, mode)
    except LoreError as exc:
        fail(exc)
    assert end is not None
    if as_json:
        print(json.dumps(end, ensure_ascii=False, indent=2))
        return
    console.print()
    _print_footer(end)


def _local_events(
    question: str,
    kb: str | None,
    k: int,
    version: int | None,
    scenario: str | None,
    tenant: str | None,
    roles: str | None,
    datasets: str | None,
    source: str | None,
    mode: str,
    rewrite: str,
    session: str | None,
) -> Iterator[tuple[str, dict[str, Any]]]:
    """The application layer's ask as the operator: a session (new unless `--session`) and a trace, as the
    API keeps them."""
    from pydantic import ValidationError

    from lore.app.conversation import answer_events, operator_plan
    from lore.app.requests import AskRequest
    from lore.engine import Lore

    if kb is None and scenario is None:
        raise LoreError("--kb: required unless --scenario is given")
    try:
        request = AskRequest(
            kb=None if scenario else kb,
            scenario=scenario,
            question=question,
            top_k=k,
            version=version,
            source=source,
            mode=mode,  # type: ignore[arg-type]
            rewrite=rewrite,  # type: ignore[arg-type]
            session_id=session,
        )
    except ValidationError as exc:
        problems = "; ".join(f"--{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
        raise LoreError(problems.replace("--top_k", "-k")) from None
    lore = Lore()
    scope = _scope(lore, scenario, tenant, split_list(roles), split_list(datasets), version)
    plan = operator_plan(lore, request, scope)
    if kb is not None and plan.kb != kb:
        raise LoreError(f"scenario {scenario!r} answers from knowledge base {plan.kb!r}, not {kb!r}")
    run = answer_events(lore, plan)
    try:
        for e in run:
            if e["event"] != "start":
                yield e["event"], e["data"]
    finally:
        run.close()


def _show(events: Iterator[tuple[str, dict[str, Any]]], as_json: bool, mode: str) -> dict[str, Any] | None:
    """Print status, tokens as they come (not with --json); the `end` event's data."""
    end = None
    with console.status("thinking…", spinner="dots") if not as_json else contextlib.nullcontext() as status:
        for kind, data in events:
            if kind == "status" and mode == "deep" and not as_json:
                _print_round(data, status)
            elif kind == "status" and status is not None:
                status.update(f"[dim]{data['stage']}…[/]")
            elif kind == "token" and not as_json:
                if status is not None:
                    status.stop()
                    status = None
                console.print(data["text"], end="", markup=False, highlight=False)
            elif kind == "error":
                err.print(f"[bold red]error:[/] {data['message']}")
                raise typer.Exit(3)
            elif kind == "end":
                end = data
    return end


def _print_round(data: dict[str, Any], status: object) -> None:
    """Deep mode shows its plan and every round as it goes."""
    stage = data.get("stage", "")
    detail = {k: v for k, v in data.items() if k not in ("stage", "round") and v not in (None, [], {}, "")}
    prefix = f"round {data['round']} " if data.get("round") is not None else ""
    if stage == "plan" and "sub_questions" in detail:
        console.print(f"[bold]plan[/] ({detail.get('kind', '')}):")
        for i, q in enumerate(detail["sub_questions"], 1):
            console.print(f"  {i}. {q.get('question', q) if isinstance(q, dict) else q}")
    elif stage in ("retrieve", "grade", "rewrite", "verdict", "route"):
        text = ", ".join(f"{k}={v}" for k, v in detail.items())[:160]
        console.print(f"[dim]{prefix}{stage}: {text}[/]", markup=True, highlight=False)
    if status is not None:
        status.update(f"[dim]{prefix}{stage}…[/]")  # type: ignore[attr-defined]


def _scope(
    lore: Lore,
    scenario: str | None,
    tenant: str | None,
    roles: list[str] | None,
    datasets: list[str] | None,
    version: int | None,
) -> Scope | None:
    """The CLI caller's scope: the scenario's access lists narrowed by the flags (wider is an error)."""
    from lore.scenario.request import scenarios
    from lore.scenario.scope import Scope, scenario_scope

    if scenario is not None:
        sc = scenarios(lore).get(scenario)
        return scenario_scope(
            sc,
            tenant=tenant,
            roles=roles,
            datasets=datasets,
            version=version,
            time_travel=version is not None,
        )
    if tenant is None:
        if roles is not None or datasets is not None:
            raise LoreError("--roles/--datasets: give --tenant (or --scenario) too")
        return None
    return Scope(
        tenant,
        tuple(datasets) if datasets is not None else None,
        roles=tuple(roles or ()),
        version=version,
        time_travel=version is not None,
    )


def _print_footer(end: dict[str, Any]) -> None:
    if (end.get("profile") or {}).get("notice"):
        console.print(f"[cyan]{end['profile']['notice']}[/]")
    if end["warning"]:
        console.print(f"[yellow]{end['warning']}[/]")
    if end["citations"]:
        table = Table("#", "source", "passage")
        for c in end["citations"]:
            table.add_row(str(c["n"]), where(c), source_quote(c))
        console.print(table)
    profile = f" profile={end['profile']['name']}" if end.get("profile") else ""
    console.print(
        f"[dim]route={end['route']}{profile} evidence={end['evidence_confidence']:.2f} "
        f"answer={end['answer_confidence']:.2f} trace={end['trace_id']}"
        + (f" session={end['session_id']}" if end.get("session_id") else "")
        + "[/]"
    )
