"""`lore build / versions / activate / rollback`: knowledge-base versions as releases, in-process or against
a server (`--server`) through one `Backend`; no engine is imported until a command runs locally."""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from lore.cli.backend import BuildOptions, VersionRow
from lore.cli.backends import running
from lore.cli.common import (
    ActivateOption,
    JsonOption,
    KbOption,
    MessageOption,
    QualityGateOption,
    gate_failed,
)
from lore.cli.render import print_report

console = Console()
GATE_NOTE = "the version is FAILED; the active version keeps serving"
ReasonOption = Annotated[str, typer.Option("--reason", help="Why (kept in the activation log).")]


def build(
    kb: KbOption,
    source: Annotated[list[Path], typer.Option("--source", help="Files and folders (repeatable).")],
    message: MessageOption = "",
    activate: ActivateOption = False,
    quality_gate: QualityGateOption = False,
    new_version: Annotated[
        bool, typer.Option("--new-version", help="Make a new version (every build does).")
    ] = True,
    incremental_from: Annotated[
        str, typer.Option(help="Base recorded for the version: latest | active.")
    ] = "latest",
    force: Annotated[bool, typer.Option("--force", help="Re-read and re-chunk every file.")] = False,
    remove_missing: Annotated[
        bool,
        typer.Option(
            "--remove-missing",
            help="Files of the KB not among the sources are removed as asked (else the gate fails on them).",
        ),
    ] = False,
) -> None:
    """Build a new STAGED version of exactly the sources, incrementally (unchanged files are reused)."""
    del new_version  # accepted for scripts that spell it out: a build always makes a new version
    asked = BuildOptions(kb, source, message, activate, quality_gate, force, incremental_from, remove_missing)
    with running() as backend:
        built = backend.build(asked)
    print_report(built.outcome)
    if built.removed:
        console.print(f"removed from this version: {', '.join(built.removed)}")
    v = built.version
    counts = {k: n for k, n in asdict(v).items() if k.startswith(("files_", "chunks_"))}
    console.print(f"version {v.seq} {v.status}: " + ", ".join(f"{k}={n}" for k, n in counts.items()))
    if built.report is not None:
        console.print(f"[dim]quality report: {built.report}[/]")
    gate_failed(built.gate_reasons, GATE_NOTE)


def versions(kb: KbOption, as_json: JsonOption = False) -> None:
    """List a knowledge base's versions."""
    with running() as backend:
        rows = backend.versions(kb)
    if as_json:
        print(json.dumps([asdict(r) for r in rows], ensure_ascii=False, indent=2))
        return
    table = Table("seq", "status", "created", "files +/~/-/=", "chunks new/reused", "gate", "description")
    for r in rows:
        files = f"{r.files_added}/{r.files_changed}/{r.files_removed}/{r.files_reused}"
        gate = {None: "-", True: "pass", False: "FAIL"}[r.gate_passed]
        status = f"[bold green]{r.status}[/]" if r.active else r.status
        table.add_row(
            str(r.seq),
            status,
            r.created[:16].replace("T", " "),
            files,
            f"{r.chunks_embedded}/{r.chunks_reused}",
            gate,
            r.description,
        )
    console.print(table)
    console.print("[dim]files: +added ~changed -removed =reused[/]")


def activate(
    kb: KbOption, seq: Annotated[int, typer.Argument(help="Version to activate.")], reason: ReasonOption = ""
) -> None:
    """Make a version the one every query reads (one transaction; cache epoch + 1)."""
    with running() as backend:
        v: VersionRow = backend.activate(kb, seq, reason)
    console.print(f"version {v.seq} is active")


def rollback(kb: KbOption, reason: ReasonOption = "") -> None:
    """Re-activate the version that was active before the current one."""
    with running() as backend:
        v = backend.rollback(kb, reason)
    console.print(f"rolled back: version {v.seq} is active")
