"""`lore report / diff / gc / unlock / calibrate`: a knowledge base's versions, examined and kept tidy
(locally only)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from lore.cli.common import JsonOption, KbOption, failing
from lore.cli.render import fail
from lore.engine import Lore
from lore.errors import LoreError
from lore.storage.layout import reports_key

console = Console()


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
        "per question language: "
        + ", ".join(
            f"{lang} {fit.threshold:.2f} ({'fit on' if fit.calibrated else 'model default'}"
            + (f" {fit.answerable} answerable)" if fit.calibrated else ")")
            for lang, fit in result.languages.items()
        )
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
