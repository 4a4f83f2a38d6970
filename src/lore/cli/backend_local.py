"""The in-process `Backend`: the application layer and the engine as the local operator (every tenant's
files; `--tenant/--roles/--datasets` narrow a question). Loaded only when a command runs locally."""

from __future__ import annotations

import functools
import os
import sys
from dataclasses import asdict, fields
from typing import TYPE_CHECKING, Any, NoReturn

from pydantic import ValidationError
from rich.console import Console

from lore.cli.backend import (
    AskOptions,
    BuildOptions,
    Built,
    Events,
    FileDeletion,
    FileListing,
    FileOutcome,
    Found,
    IngestOptions,
    KbRow,
    Outcome,
    SearchOptions,
    VersionRow,
)
from lore.cli.common import catalog_missing, no_kbs_yet
from lore.cli.render import print_report
from lore.errors import LoreError
from lore.ingest.files import discover

if TYPE_CHECKING:
    from lore.catalog import KnowledgeBase, Version
    from lore.engine import Lore
    from lore.ingest.pipeline import IngestReport
    from lore.scenario.scope import Scope

console = Console()
_OUTCOME_FIELDS = {f.name for f in fields(FileOutcome)}


def outcome(report: IngestReport) -> Outcome:
    """The engine's report as the CLI's result type."""
    return Outcome(
        [FileOutcome(**{k: v for k, v in asdict(f).items() if k in _OUTCOME_FIELDS}) for f in report.files]
    )


def invalid(exc: ValidationError, renames: dict[str, str]) -> LoreError:
    """A request model's refusal in the command's own option names."""
    problems = "; ".join(f"--{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
    for field_name, option in renames.items():
        problems = problems.replace(f"--{field_name}", option)
    return LoreError(problems.replace("_", "-"))


class LocalBackend:
    """Commands run in this process, as the local operator."""

    where = ""

    @functools.cached_property
    def lore(self) -> Lore:
        from lore.engine import Lore

        return Lore()

    def close(self) -> None:
        if (lore := self.__dict__.pop("lore", None)) is not None:
            lore.close()  # every finished file is committed; a Milvus Lite store flushes

    # --- knowledge bases and files ----------------------------------------------------------------------

    def _row(self, kb: KnowledgeBase) -> KbRow:
        files = self.lore.catalog.list_files(kb.id, "ingested")
        active = self.lore.catalog.active_version(kb.id)
        return KbRow(
            kb.name,
            kb.description,
            kb.owner_tenant,
            kb.embedding_model,
            kb.embedding_dim,
            kb.store_backend,
            len(files),
            sum(f.chunk_count for f in files),
            self.lore.catalog.has_versions(kb.id),
            active.seq if active else None,
            kb.created_at.isoformat(),
        )

    def create_kb(self, name: str, description: str, tenant: str | None) -> KbRow:
        return self._row(self.lore.create_kb(name, description, owner_tenant=tenant or "default"))

    def list_kbs(self) -> tuple[list[KbRow], str | None]:
        from lore.config import load_settings

        settings = load_settings()
        if catalog_missing(settings):  # nothing to list, and listing creates nothing
            return [], no_kbs_yet(settings)
        return [self._row(kb) for kb in self.lore.catalog.list_kbs()], None

    def delete_kb(self, name: str) -> None:
        self.lore.delete_kb(name, via="cli")  # everything it holds, audited as its owner tenant

    def list_files(self, kb: str) -> FileListing:
        from lore.storage.layout import uploads_key

        record = self.lore.catalog.get_kb(kb)
        uploads = self.lore.storage.list(uploads_key(record))
        indexed = [
            {"path": f.path, "status": f.status, "chunks": f.chunk_count, "error": f.error, "size": f.size}
            for f in self.lore.catalog.list_files(record.id)
        ]
        return FileListing([{"name": e.name, "size": e.size} for e in uploads], indexed)

    def delete_file(self, kb: str, name: str) -> FileDeletion:
        done = self.lore.delete_file(self.lore.catalog.get_kb(kb), name, key_id=None)
        return FileDeletion(done["file"], done["upload"], done["indexed"], done.get("note"))

    # --- ingest and builds ------------------------------------------------------------------------------

    def ingest(self, options: IngestOptions) -> Outcome:
        from lore.cli.progress import ingest_progress, stop_on_signals
        from lore.cli.web import fetch_sources

        lore = self.lore
        lore.catalog.get_kb(options.kb)
        done = Outcome()
        sources = []
        if options.urls or options.sitemap:
            o = options
            crawl = fetch_sources(lore, o.kb, o.urls, o.sitemap, o.prefix, o.max_pages)
            sources, done.refused = crawl.sources, crawl.refused
            done.web = f"{len(sources)} pages fetched ({crawl.unchanged} not modified since the last crawl)"
        found = [*discover(options.files), *sources]
        with stop_on_signals() as stop, ingest_progress(console, len(found), stop) as progress:
            try:
                report = lore.ingest(options.kb, [], progress, sources=found)
            finally:
                self.close()
        if report.stopped:
            _stopped(report, stop.code)
        done.files = outcome(report).files
        return done

    def build(self, options: BuildOptions) -> Built:
        from lore.cli.progress import RichIngestProgress
        from lore.ingest.build import Removal

        lore = self.lore
        lore.catalog.get_kb(options.kb)
        found = discover(options.sources)
        with RichIngestProgress(console, len(found)) as progress:
            result = lore.build(
                options.kb,
                options.sources,
                description=options.description,
                activate=options.activate,
                quality_gate=options.quality_gate,
                force=options.force,
                incremental_from=options.incremental_from,
                progress=progress,
                files=found,
                removal=Removal(allowed=options.remove_missing),
            )
        v = result.version
        report = lore.reports_dir(options.kb) / str(v.seq) / "quality.md"
        return Built(outcome(result.report), _version(v), result.removed, result.gate_reasons, str(report))

    # --- versions ---------------------------------------------------------------------------------------

    def versions(self, kb: str) -> list[VersionRow]:
        return [_version(v) for v in self.lore.catalog.list_versions(self.lore.catalog.get_kb(kb).id)]

    def activate(self, kb: str, seq: int, reason: str) -> VersionRow:
        return self._move(kb, "activate", seq, reason)

    def rollback(self, kb: str, reason: str) -> VersionRow:
        return self._move(kb, "rollback", None, reason)

    def _move(self, kb: str, action: str, seq: int | None, reason: str) -> VersionRow:
        """Activate `seq` (None: roll back) in one transaction, audited as the KB's owner tenant."""
        catalog = self.lore.catalog
        record = catalog.get_kb(kb)
        actor = f"cli@{record.owner_tenant or ''}"
        with catalog.transaction():
            if seq is None:
                v = catalog.rollback(record.id, actor=actor, reason=reason)
            else:
                v = catalog.activate(record.id, seq, actor=actor, reason=reason)
            detail = {"reason": reason} if reason else {}
            tenant = record.owner_tenant or ""
            catalog.audit(action, tenant=tenant, key_id=None, kb=kb, target=str(v.seq), via="cli", **detail)
        return _version(v, active=True)

    # --- search and answers -----------------------------------------------------------------------------

    def search(self, options: SearchOptions) -> Found:
        from lore.app import searching
        from lore.app.requests import SearchRequest

        try:
            request = SearchRequest(**asdict(options))
        except ValidationError as exc:
            raise invalid(exc, {"top_k": "-k"}) from None
        result = searching.search(self.lore, None, request)
        return Found(result.version, result.mode, result.rerank, [h.model_dump() for h in result.hits])

    def ask(self, options: AskOptions) -> Events:
        """The application layer's ask as the operator: a session (new unless `--session`) and a trace, as
        the API keeps them."""
        from lore.app.conversation import answer_events, operator_plan
        from lore.app.requests import AskRequest

        o = options
        try:
            request = AskRequest(
                kb=None if o.scenario else o.kb,
                scenario=o.scenario,
                question=o.question,
                top_k=o.top_k,
                version=o.version,
                source=o.source,
                mode=o.mode,  # type: ignore[arg-type]
                rewrite=o.rewrite,  # type: ignore[arg-type]
                session_id=o.session,
            )
        except ValidationError as exc:
            raise invalid(exc, {"top_k": "-k", "session_id": "--session"}) from None
        scope = _scope(self.lore, o)
        plan = operator_plan(self.lore, request, scope)
        if o.kb is not None and plan.kb != o.kb:
            raise LoreError(f"scenario {o.scenario!r} answers from knowledge base {plan.kb!r}, not {o.kb!r}")
        run = answer_events(self.lore, plan)
        try:
            for e in run:
                if e["event"] != "start":
                    yield e["event"], e["data"]
        finally:
            run.close()


def _version(v: Version, active: bool | None = None) -> VersionRow:
    data: dict[str, Any] = {"seq": v.seq, **v.counts, "gate_passed": v.gate_passed}
    data |= {"description": v.description, "base_seq": v.base_seq}
    is_active = v.status.value == "active" if active is None else active
    return VersionRow.of(data, v.status.value, is_active, v.created_at.isoformat())


def _scope(lore: Lore, o: AskOptions) -> Scope | None:
    """The CLI caller's scope: the scenario's access lists narrowed by the flags (wider is an error)."""
    from lore.scenario.request import scenarios
    from lore.scenario.scope import Scope, scenario_scope

    travel = o.version is not None
    if o.scenario is not None:
        sc = scenarios(lore).get(o.scenario)
        return scenario_scope(
            sc, tenant=o.tenant, roles=o.roles, datasets=o.datasets, version=o.version, time_travel=travel
        )
    if o.tenant is None:
        if o.roles is not None or o.datasets is not None:
            raise LoreError("--roles/--datasets: give --tenant (or --scenario) too")
        return None
    datasets = tuple(o.datasets) if o.datasets is not None else None
    return Scope(o.tenant, datasets, roles=tuple(o.roles or ()), version=o.version, time_travel=travel)


def _stopped(report: IngestReport, code: int) -> NoReturn:
    """Say what a stopped ingest kept and how to resume, then exit at once with `code` (130 on Ctrl-C)."""
    print_report(outcome(report))
    kept = report.count("ingested") + report.count("skipped")
    console.print(
        f"[yellow]interrupted[/]: {kept} files are in the knowledge base ({report.chunks} chunks, searchable "
        f"now); {len(report.unfinished)} not ingested, {report.unfinished[0]!r} was in progress and is "
        "redone next time.\nTo resume, run the same `lore ingest` again: files already ingested and "
        "unchanged are skipped."
    )
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)  # not waiting for the abandoned worker threads (a batch inside the embedding engine)
