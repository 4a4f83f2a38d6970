"""`lore demo`: build the sample knowledge base in the home, then run sample searches and answers."""

from __future__ import annotations

import os
from collections.abc import Iterator
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console

from lore.cli.render import fail, print_report, where
from lore.errors import LoreError

if TYPE_CHECKING:
    from lore.answer.pipeline import Event

console = Console()


def demo(
    source: Annotated[
        Path | None, typer.Option(help="Folder of sample documents.", show_default="the shipped handbook")
    ] = None,
    kb: Annotated[str, typer.Option("--kb")] = "handbook",
    scenarios: Annotated[
        Path | None,
        typer.Option(
            help="Scenarios folder (the `hr` sample is built).", show_default="the shipped scenarios"
        ),
    ] = None,
) -> None:
    """Build the sample knowledge base and run sample searches."""
    with resources.as_file(resources.files("lore") / "samples") as samples:
        _demo(source or samples / "handbook", kb, scenarios or samples / "scenarios")


def _demo(source: Path, kb: str, scenarios: Path) -> None:
    from lore.cli.progress import ingest_progress
    from lore.engine import Lore
    from lore.ingest.files import discover
    from lore.retrieve.search import SearchOptions
    from lore.scenario.build import build_scenario
    from lore.scenario.config import Scenarios
    from lore.scenario.request import scenario_ask

    lore = Lore()
    try:
        if kb not in {k.name for k in lore.catalog.list_kbs()}:
            lore.create_kb(kb, "Lanternfish Robotics sample handbook")
        found = discover([source])
        with ingest_progress(console, len(found)) as progress:
            report = lore.ingest(kb, [], progress, sources=found)
        print_report(report)
        for q in (
            "报销需要什么材料",
            "What is the refund window?",
            "LF-200 的保修期多久",
            "一线城市住宿上限是多少",
            "How many days per week can I work remotely?",
        ):
            console.rule(f"search: {q}")
            for i, h in enumerate(lore.search(kb, q, SearchOptions(top_k=3)), 1):
                console.print(f"{i}. [dim]{where(h.to_json())}[/] {h.chunk.text[:120].replace(chr(10), ' ')}")
        for q, mode in (
            ("年假有几天？怎么申请？", "fast"),
            ("What is the refund window?", "fast"),
            ("Who won the 1998 World Cup?", "fast"),
            ("Compare LF-200 and LF-500", "fast"),
            ("对比LF-200和LF-500的载重", "deep"),
        ):
            _demo_answer(f"ask ({mode}): {q}", lore.ask(kb, q, mode=mode))
        if (scenarios / "hr" / "scenario.toml").exists():
            console.rule("scenario hr: build")
            lore.settings.scenario.scenarios_dir = scenarios  # the demo's folder, whatever is configured
            result = build_scenario(lore, Scenarios(scenarios).get("hr"), activate=True).result
            console.print(
                f"version {result.version.seq} {result.version.status.value}: {result.version.counts}"
            )
            for q in ("你好", "如何申请年假？", "一线城市出差住宿每晚最多多少钱？"):
                _demo_answer(f"scenario hr: {q}", scenario_ask(lore, None, q, scenario="hr"))
    except LoreError as exc:
        fail(exc)
    home = lore.settings.home.resolve()
    console.rule("next")
    console.print(f"the sample knowledge base {kb!r} is in {home}; from a shell:", soft_wrap=True)
    if os.environ.get("LORE_HOME"):  # not the default home: later commands need it too
        console.print(f"  export LORE_HOME={home}", soft_wrap=True, highlight=False)
    console.print(
        f"  lore search 'refund window' --kb {kb}\n  lore ask 'How many days of annual leave?' --kb {kb}"
    )


def _demo_answer(title: str, events: Iterator[Event]) -> None:
    console.rule(title)
    end = next(e.data for e in events if e.type in ("end", "error"))
    if "message" in end:
        raise LoreError(end["message"])
    console.print(end["answer"])
    for c in end["citations"]:
        console.print(f"  [dim][{c['n']}] {where(c)}[/]")
    console.print(f"  [dim]route={end['route']} mode={end.get('mode', 'fast')}[/]")
