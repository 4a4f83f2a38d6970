"""`lore ask`: stream an answer with its status, then the numbered sources."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from lore.cli.backend import AskOptions
from lore.cli.backends import running
from lore.cli.render import fail, source_quote, split_list, where
from lore.errors import LoreError

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
    asked = AskOptions(
        question,
        kb,
        scenario,
        k,
        version,
        source,
        mode,
        rewrite,
        session,
        tenant,
        split_list(roles),
        split_list(datasets),
    )
    with running() as backend:
        if kb is None and scenario is None:
            raise LoreError("--kb: required unless --scenario is given")
        events = backend.ask(asked)
        try:
            end = _show(events, as_json, mode)
        finally:
            events.close()  # a stream left early (an error event) ends here, not when collected
    if end is None:
        fail(LoreError("the answer ended without its last event"))
    if as_json:
        print(json.dumps(end, ensure_ascii=False, indent=2))
        return
    console.print()
    _print_footer(end)


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
