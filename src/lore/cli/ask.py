"""`lore ask`: stream an answer with its status, then the numbered sources."""

from __future__ import annotations

import json
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from lore.cli.render import where
from lore.engine import Lore
from lore.errors import LoreError
from lore.retrieve.search import SearchOptions

console = Console()
err = Console(stderr=True)


def ask(
    question: str,
    kb: Annotated[str, typer.Option("--kb", help="Knowledge base name.")],
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
    k: Annotated[int, typer.Option("-k", help="Hits handed to context building.")] = 10,
    version: Annotated[int | None, typer.Option("--version", help="Answer from this version (default: active).")] = None,
) -> None:
    """Answer a question from a knowledge base, with numbered citations."""
    lore = Lore()
    r = lore.settings.retrieve
    opts = SearchOptions(r.mode, r.recall_k, k, r.rrf_k, r.min_score)
    try:
        events = lore.ask(kb, question, opts, version)
        end = None
        with console.status("thinking…", spinner="dots") if not as_json else _nullcontext() as status:
            for event in events:
                if event.type == "status" and status is not None:
                    status.update(f"[dim]{event.data['stage']}…[/]")
                elif event.type == "token" and not as_json:
                    if status is not None:
                        status.stop()
                        status = None
                    console.print(event.data["text"], end="", markup=False, highlight=False)
                elif event.type == "error":
                    err.print(f"[bold red]error:[/] {event.data['message']}")
                    raise typer.Exit(3)
                elif event.type == "end":
                    end = event.data
    except LoreError as exc:
        err.print(f"[bold red]error:[/] {exc}")
        raise typer.Exit(2) from None
    assert end is not None
    if as_json:
        print(json.dumps(end, ensure_ascii=False, indent=2))
        return
    console.print()
    _print_footer(end)


def _print_footer(end: dict) -> None:
    if end["warning"]:
        console.print(f"[yellow]{end['warning']}[/]")
    if end["citations"]:
        table = Table("#", "source", "passage")
        for c in end["citations"]:
            table.add_row(str(c["n"]), where(c), c["text"][:200].replace("\n", " "))
        console.print(table)
    console.print(f"[dim]route={end['route']} evidence={end['evidence_confidence']:.2f} "
                  f"answer={end['answer_confidence']:.2f} trace={end['trace_id']}[/]")


class _nullcontext:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None
