"""`lore scenario list / check / build`: scenarios as configuration folders."""

from __future__ import annotations

import json
from typing import Annotated, TypedDict

import typer
from rich.console import Console
from rich.table import Table

from lore.cli.common import (
    ActivateOption,
    JsonOption,
    MessageOption,
    QualityGateOption,
    failing,
    gate_failed,
    new_lore,
)
from lore.cli.render import print_report
from lore.errors import LoreError

scenario_app = typer.Typer(
    help="Business scenarios: FAQ + documents + access + routing, one folder each.", no_args_is_help=True
)
console = Console()
err = Console(stderr=True)


class _Row(TypedDict):
    id: str
    name: str
    kb: str
    sources: list[str]
    tenants: list[str]
    ok: bool
    error: str | None


@scenario_app.command("list")
def list_scenarios(as_json: JsonOption = False) -> None:
    """List the scenarios in the configured folder (scenario.scenarios_dir)."""
    from lore.scenario.request import scenarios

    found = scenarios(new_lore())
    rows: list[_Row] = []
    for sid in found.ids():
        try:
            sc = found.get(sid)
            rows.append(
                {
                    "id": sc.id,
                    "name": sc.name,
                    "kb": sc.kb_name,
                    "sources": [s.id for s in sc.sources],
                    "tenants": sc.tenants,
                    "ok": True,
                    "error": None,
                }
            )
        except LoreError as exc:
            rows.append(
                {
                    "id": sid,
                    "name": "",
                    "kb": "",
                    "sources": [],
                    "tenants": [],
                    "ok": False,
                    "error": str(exc),
                }
            )
    if as_json:
        print(json.dumps(rows, ensure_ascii=False, indent=2))
        return
    table = Table("id", "name", "kb", "sources", "tenants", "problem")
    for r in rows:
        table.add_row(
            r["id"],
            r["name"],
            r["kb"],
            ", ".join(r["sources"]),
            ", ".join(r["tenants"]),
            f"[red]{r['error']}[/]" if r["error"] else "",
        )
    console.print(table)
    console.print(f"[dim]folder: {found.root}[/]")


@scenario_app.command("check")
def check(scenario_id: Annotated[str, typer.Argument(help="Scenario id.")]) -> None:
    """Validate a scenario's scenario.toml, data/ folders and faq.csv without building."""
    from lore.scenario.build import check_sources
    from lore.scenario.faq import read_faq
    from lore.scenario.request import scenarios

    with failing():
        sc = scenarios(new_lore()).get(scenario_id)
        check_sources(sc)
        rows, problems = read_faq(sc.faq_path, sc) if sc.faq_path.exists() else ([], [])
    console.print(f"scenario [bold]{sc.id}[/] ok: {len(sc.sources)} sources, {len(rows)} FAQ rows")
    for p in problems:
        err.print(f"[yellow]{p.file}:{p.line}[/] {p.reason}")


@scenario_app.command("build")
def build(
    scenario_id: Annotated[str, typer.Argument(help="Scenario id.")],
    activate: ActivateOption = False,
    quality_gate: QualityGateOption = False,
    force: Annotated[
        bool, typer.Option("--force", help="Re-read every file (after changing metadata).")
    ] = False,
    message: MessageOption = "",
) -> None:
    """Build the scenario's FAQ and documents into its knowledge base as a new STAGED version."""
    from lore.cli.progress import ingest_progress
    from lore.ingest.files import discover
    from lore.scenario.build import build_scenario, scenario_inputs
    from lore.scenario.request import scenarios

    lore = new_lore()
    with failing():
        sc = scenarios(lore).get(scenario_id)
        found = discover(scenario_inputs(sc))
        with ingest_progress(console, len(found)) as progress:
            built = build_scenario(
                lore,
                sc,
                description=message,
                activate=activate,
                quality_gate=quality_gate,
                force=force,
                progress=progress,
                files=found,
            )
    print_report(built.result.report)
    v = built.result.version
    console.print(
        f"scenario {sc.id} -> kb {sc.kb_name} version {v.seq} {v.status.value.upper()}: "
        f"{built.faq_rows} FAQ rows, {len(built.faq_problems)} skipped"
    )
    if built.metadata_changed:
        console.print("[yellow]scenario metadata changed since the last build: every file was re-read[/]")
    for p in built.faq_problems:
        err.print(f"[yellow]{p.file}:{p.line}[/] {p.reason}")
    console.print(f"[dim]quality report: {lore.reports_dir(sc.kb_name) / str(v.seq) / 'quality.md'}[/]")
    gate_failed(built.result.gate_reasons)
