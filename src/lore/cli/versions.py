"""`lore build / versions / activate / rollback`: knowledge-base versions as releases."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from lore.catalog import Version
from lore.cli import remote
from lore.cli.common import (
    ActivateOption,
    JsonOption,
    KbOption,
    MessageOption,
    QualityGateOption,
    failing,
    gate_failed,
    kb_change,
)
from lore.cli.progress import RichIngestProgress
from lore.cli.render import fail, print_report
from lore.engine import Lore
from lore.errors import LoreError
from lore.ingest.build import Removal
from lore.ingest.files import discover
from lore.storage.layout import reports_key

console = Console()
err = Console(stderr=True)
GATE_NOTE = "the version is FAILED; the active version keeps serving"


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
    how: dict[str, Any] = {
        "description": message,
        "activate": activate,
        "quality_gate": quality_gate,
        "force": force,
        "incremental_from": incremental_from,
    }
    if (c := remote.client()) is not None:
        with failing():  # the sources are uploaded, then built on the server
            built = remote.build(c, kb, source, **how, mode="exact", allow_removal=remove_missing)
        assert built.version is not None
        print_report(remote.report_of(built))
        console.print(f"version {built.version.seq} {built.version.status.upper()}")
        gate_failed(built.gate_reasons, GATE_NOTE)
        return
    lore = Lore()
    with failing():
        lore.catalog.get_kb(kb)
        found = discover(source)
        with RichIngestProgress(console, len(found)) as progress:
            result = lore.build(
                kb, source, **how, progress=progress, files=found, removal=Removal(allowed=remove_missing)
            )
    print_report(result.report)
    if result.removed:
        console.print(f"removed from this version: {', '.join(result.removed)}")
    v = result.version
    console.print(
        f"version {v.seq} {v.status.value.upper()}: " + ", ".join(f"{k}={n}" for k, n in v.counts.items())
    )
    console.print(f"[dim]quality report: {lore.reports_dir(kb) / str(v.seq) / 'quality.md'}[/]")
    gate_failed(result.gate_reasons, GATE_NOTE)


def report(
    kb: KbOption,
    seq: Annotated[int, typer.Argument(help="Version number.")],
    as_json: JsonOption = False,
) -> None:
    """Print a version's quality report."""
    lore = Lore()
    with failing():
        record = lore.catalog.get_kb(kb)
        lore.catalog.get_version(record.id, seq)
    path = lore.storage.fetch(f"{reports_key(record, seq)}/" + ("quality.json" if as_json else "quality.md"))
    if path is None:
        fail(LoreError(f"{lore.reports_dir(record) / str(seq)}: no quality report for version {seq}"))
        return
    print(path.read_text(encoding="utf-8"))


def versions(kb: KbOption, as_json: JsonOption = False) -> None:
    """List a knowledge base's versions."""
    with failing():
        if (c := remote.client()) is not None:
            rows = remote.version_rows(c, kb)
        else:
            lore = Lore()
            rows = [_row(v) for v in lore.catalog.list_versions(lore.catalog.get_kb(kb).id)]
    if as_json:
        print(json.dumps(rows, ensure_ascii=False, indent=2))
        return
    table = Table("seq", "status", "created", "files +/~/-/=", "chunks new/reused", "gate", "description")
    for r in rows:
        files = f"{r['files_added']}/{r['files_changed']}/{r['files_removed']}/{r['files_reused']}"
        gate = {None: "-", True: "pass", False: "FAIL"}[r["gate_passed"]]
        status = f"[bold green]{r['status']}[/]" if r["active"] else r["status"]
        table.add_row(
            str(r["seq"]),
            status,
            r["created"][:16].replace("T", " "),
            files,
            f"{r['chunks_embedded']}/{r['chunks_reused']}",
            gate,
            r["description"],
        )
    console.print(table)
    console.print("[dim]files: +added ~changed -removed =reused[/]")


def activate(kb: KbOption, seq: Annotated[int, typer.Argument(help="Version to activate.")]) -> None:
    """Make a version the one every query reads (one transaction; cache epoch + 1)."""
    if (c := remote.client()) is not None:
        with failing():
            console.print(f"version {c.activate(kb, seq).seq} is active")
        return
    with kb_change(kb) as change:
        v = change.lore.catalog.activate(change.kb.id, seq, actor=change.actor)
        change.audit("activate", str(seq))
    console.print(f"version {v.seq} is active")


def rollback(kb: KbOption) -> None:
    """Re-activate the version that was active before the current one."""
    if (c := remote.client()) is not None:
        with failing():
            console.print(f"rolled back: version {c.rollback(kb).seq} is active")
        return
    with kb_change(kb) as change:
        v = change.lore.catalog.rollback(change.kb.id, actor=change.actor)
        change.audit("rollback", str(v.seq))
    console.print(f"rolled back: version {v.seq} is active")


def diff(
    kb: KbOption,
    base: Annotated[int, typer.Argument(help="Base version.")],
    candidate: Annotated[int, typer.Argument(help="Candidate version.")],
    eval_set: Annotated[
        Path | None, typer.Option("--eval", help="Eval set JSONL (default: gate.eval_set).")
    ] = None,
    as_json: JsonOption = False,
) -> None:
    """Compare two versions: files added/changed/removed and, with an eval set, Recall@k and MRR."""
    lore = Lore()
    with failing():
        d = lore.diff(kb, base, candidate, eval_set)
    if as_json:
        print(json.dumps(d, ensure_ascii=False, indent=2))
        return
    f = d["files"]
    console.print(
        f"[bold]{kb}[/]: version {base} → {candidate}: {len(f['added'])} added, {len(f['changed'])} changed, "
        f"{len(f['removed'])} removed, {f['unchanged']} unchanged"
    )
    for path in f["added"]:
        console.print(f"  [green]+ {path}[/]")
    for c in f["changed"]:
        console.print(
            f"  [yellow]~ {c['file']}[/] ({', '.join(c['why'])}; chunks {c['chunks'][0]} → {c['chunks'][1]})"
        )
    for path in f["removed"]:
        console.print(f"  [red]- {path}[/]")
    r = d.get("retrieval")
    if r:
        table = Table(f"eval set ({r['questions']} questions)", f"version {base}", f"version {candidate}")
        table.add_row(f"Recall@{r['k']}", f"{r['base']['recall']:.3f}", f"{r['candidate']['recall']:.3f}")
        table.add_row(f"MRR@{r['k']}", f"{r['base']['mrr']:.3f}", f"{r['candidate']['mrr']:.3f}")
        console.print(table)
        for q in r["lost"]:
            console.print(f"  [red]lost:[/] {q}")
        for q in r["gained"]:
            console.print(f"  [green]gained:[/] {q}")


def gc(kb: KbOption) -> None:
    """Delete chunks no readable version sees (abandoned or failed builds, expired history)."""
    lore = Lore()
    with failing():
        result = lore.gc(kb)
    if result.recovered_builds:
        console.print(f"closed abandoned builds: {', '.join(map(str, result.recovered_builds))}")
    console.print(
        f"deleted {result.deleted_chunks} chunks; versions kept readable: "
        f"{', '.join(map(str, result.kept_versions)) or 'none'}"
    )


def unlock(kb: KbOption) -> None:
    """Release a build lock left by a build on another machine that is gone."""
    lore = Lore()
    with failing():
        kb_id = lore.catalog.get_kb(kb).id
        holder = lore.catalog.build_lock_holder(kb_id)
    if holder is None:
        console.print(f"knowledge base {kb!r} has no build lock")
        return
    lore.catalog.release_build_lock(kb_id, holder)
    console.print(f"released the build lock held by {holder.host} pid {holder.pid}")


def _row(v: Version) -> dict[str, Any]:
    return {
        "seq": v.seq,
        "status": v.status.value.upper(),
        "active": v.status.value == "active",
        "created": v.created_at.isoformat(timespec="seconds"),
        **v.counts,
        "gate_passed": v.gate_passed,
        "description": v.description,
        "base_seq": v.base_seq,
    }


def calibrate(
    kb: KbOption,
    eval_set: Annotated[Path | None, typer.Option("--eval", help="JSONL of {question, answerable}.")] = None,
    version: Annotated[int | None, typer.Option(help="Version number (default: the active one).")] = None,
    as_json: JsonOption = False,
) -> None:
    """Fit the KB's refusal threshold and print the expected false-refusal and off-topic rates."""
    from lore.answer.calibration import read_eval_set

    lore = Lore()
    try:
        questions = read_eval_set(eval_set) if eval_set is not None else []
        result = lore.calibrate(kb, version=version, eval_questions=questions)
    except (LoreError, OSError) as exc:
        fail(exc if isinstance(exc, LoreError) else LoreError(str(exc)))
    if as_json:
        print(json.dumps(result.to_json(), ensure_ascii=False, indent=2))
        return
    where = f"version {result.version}" if result.version is not None else "the unversioned index"
    console.print(
        f"{kb} ({where}): threshold {result.threshold:.2f} on P(answerable) "
        f"(model default {result.model_threshold:.2f}), from {result.answerable} {result.source} "
        f"answerable and {result.offtopic} off-topic questions"
    )
    console.print(
        f"expected false refusals {result.false_refusal:.1%}, off-topic answered "
        f"{result.offtopic_answered:.1%} (off-topic refused {1 - result.offtopic_answered:.1%})"
    )
    pinned = lore.settings.answer.evidence_threshold
    if pinned is not None:
        console.print(
            f"[yellow]note:[/] answer.evidence_threshold = {pinned} is pinned in the config and wins"
        )
