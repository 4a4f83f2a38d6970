"""Changing a KB's content: ingest into an unversioned KB, versioned builds (gated, optionally
activated and recalibrated) and garbage collection."""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any

from lore.catalog import KnowledgeBase, Version, VersionStatus
from lore.engine.quality import Quality
from lore.errors import ConflictError, LoreError
from lore.eval.compare import load_eval_set
from lore.eval.sets import EvalSets
from lore.ingest.build import BuildResult, Removal, build_lock, build_version, fail_version, recover_abandoned
from lore.ingest.chunking import ChunkParams
from lore.ingest.edits import ChunkEdits
from lore.ingest.files import SourceFile, discover
from lore.ingest.gc import GcResult, collect_garbage
from lore.ingest.loaders.limits import FileLimits
from lore.ingest.pipeline import ChunkMetadata, CustomChunks, IngestPipeline, IngestReport, Progress
from lore.ingest.reviews import OcrReviews, unreviewed
from lore.metrics import BUILD_SECONDS, BUILDS
from lore.storage import publish_folder


class Builds(Quality):
    """Ingest, versioned builds and garbage collection."""

    def ingest(
        self,
        name: str,
        inputs: list[Path],
        progress: Progress | None = None,
        *,
        chunk_metadata: ChunkMetadata | None = None,
        custom_chunks: CustomChunks | None = None,
        force: bool = False,
        sources: list[SourceFile] | None = None,
    ) -> IngestReport:
        """Ingest files and folders straight into an unversioned KB; bad files are reported.

        `chunk_metadata` sets chunk fields (e.g. the caller's tenant); `custom_chunks` supplies a file's
        chunks; `sources` are files already found elsewhere (e.g. fetched web pages named by their URL).
        """
        kb = self.catalog.get_kb(name)
        if self.catalog.has_versions(kb.id):
            raise ConflictError(
                f"knowledge base {name!r} is versioned: its content changes only through builds "
                f"(lore build --kb {name}, or POST /api/kbs/{name}/builds), which stage a new "
                "version instead of changing the one people are using"
            )
        self._check_model(kb, kb.embedding_model, "the index")
        params = ChunkParams.from_schema(kb.chunk_schema)  # unversioned: keep the KB's schema
        report = self._pipeline(
            kb,
            progress,
            params=params,
            force=force,
            chunk_metadata=chunk_metadata,
            custom_chunks=custom_chunks,
        ).run([*discover(inputs), *(sources or [])])
        self.catalog.bump_cache_epoch(kb.id)  # every replica's cached results of this KB are stale now
        return report

    def build(
        self,
        name: str,
        inputs: list[Path],
        *,
        description: str = "",
        activate: bool = False,
        actor: str | None = None,
        quality_gate: bool = False,
        incremental_from: str = "latest",
        force: bool = False,
        progress: Progress | None = None,
        chunk_metadata: ChunkMetadata | None = None,
        custom_chunks: CustomChunks | None = None,
        extra_quality: dict[str, Any] | None = None,
        files: list[SourceFile] | None = None,
        removal: Removal | None = None,
    ) -> BuildResult:
        """Build a new STAGED version incrementally; optionally activate it.

        The new version indexes exactly the given sources. Files unchanged since the build that last
        indexed them are reused (no parse, no embedding) unless `force`; `incremental_from`
        ("latest" or "active") is recorded as the version's base. `chunk_metadata` and
        `custom_chunks` let a caller (scenario builds) set chunk fields or make a file's chunks;
        `files` are `discover(inputs)` when the caller has found them already (files discovered once);
        `removal` carries unlisted files over or names those to drop (`ingest.build.Removal`). `actor` is
        who activates, for the activation log: the API key's `Grant.actor` for a build queued through the
        service; None only for the local operator in this process (`cli@<the KB's owner tenant>`).
        """
        if incremental_from not in ("latest", "active"):
            raise LoreError(f"--incremental-from: 'latest' or 'active', not {incremental_from!r}")
        kb = self.catalog.get_kb(name)
        files = discover(inputs) if files is None else files
        carried = removal is not None and removal.keep_unlisted
        if not files and not carried:  # e.g. an unmounted share: never build a version that drops everything
            raise LoreError(
                f"{', '.join(map(str, inputs))}: no files found; refusing to build a version of "
                f"{name!r} without any"
            )
        with build_lock(self.catalog, kb, self.settings.worker.lease_s):
            recover_abandoned(kb, self.catalog, self.store(kb))
            base = (
                self.catalog.active_version(kb.id)
                if incremental_from == "active"
                else next(reversed(self.catalog.list_versions(kb.id)), None)
            )
            version = self.catalog.create_version(
                kb.id,
                description=description,
                base_seq=base.seq if base else None,
                embedding_model=self.embedder(kb).model_id,
                chunk_schema=self.kb_chunk_params(kb).schema,
            )
            pipeline = self._pipeline(
                kb,
                progress,
                seq=version.seq,
                force=force,
                params=self.kb_chunk_params(kb),
                chunk_metadata=chunk_metadata,
                custom_chunks=custom_chunks,
            )
            compare = None
            if self.settings.gate.eval_set is not None:
                questions = load_eval_set(self.settings.gate.eval_set)  # a bad eval set fails before any work

                def compare(v: Version) -> dict[str, Any]:
                    active = self.catalog.active_version(kb.id)
                    return self._compare(name, active.seq if active else None, v.seq, questions)

            try:
                with BUILD_SECONDS.time():
                    result = build_version(
                        kb,
                        self.catalog,
                        self.store(kb),
                        pipeline,
                        files,
                        version,
                        gate=self.settings.gate,
                        reports_dir=self.reports_dir(name),
                        quality_gate=quality_gate,
                        activate=activate,
                        actor=actor or f"cli@{kb.owner_tenant or ''}",
                        compare=compare,
                        extra_quality=extra_quality,
                        ocr_review=lambda files: unreviewed(self.ocr_reviews(name), files),
                        removal=removal,
                    )
                BUILDS.labels(str(result.version.status)).inc()
                publish_folder(self.storage, self.reports_dir(name) / str(result.version.seq))
            except Exception as exc:  # disk full, store gone...: the active version keeps serving
                BUILDS.labels("error").inc()
                with contextlib.suppress(Exception):  # if this fails too, the next build recovers it
                    fail_version(
                        kb, self.catalog, self.store(kb), version.seq, f"{type(exc).__name__}: {exc}"
                    )
                raise LoreError(
                    f"build of version {version.seq} of {name!r} failed ({exc}); it is marked FAILED "
                    "and the active version is unchanged"
                ) from exc
        if self.settings.answer.calibrate_on_build and result.version.status is not VersionStatus.FAILED:
            self.calibrate(name, version=result.version.seq)  # a new build recalibrates its version
        return result

    def gc(self, name: str) -> GcResult:
        """Delete chunks no readable version sees (abandoned and failed builds, expired history)."""
        kb = self.catalog.get_kb(name)
        return collect_garbage(kb, self.catalog, self.store(kb))

    def _pipeline(
        self,
        kb: KnowledgeBase,
        progress: Progress | None,
        *,
        params: ChunkParams,
        seq: int | None = None,
        force: bool = False,
        chunk_metadata: ChunkMetadata | None = None,
        custom_chunks: CustomChunks | None = None,
    ) -> IngestPipeline:
        return IngestPipeline(
            kb,
            self.catalog,
            self.store(kb),
            self.embedder(kb),
            self.chunker(kb, params),
            self.cache,
            max_file_bytes=int(self.settings.ingest.max_file_mb * 1e6),
            ocr=self.settings.ingest.ocr,
            limits=FileLimits.from_settings(self.settings.ingest),
            progress=progress,
            seq=seq,
            force=force,
            chunk_metadata=chunk_metadata,
            custom_chunks=custom_chunks,
            edits=self.chunk_edits(kb.name),
        )

    def chunk_edits(self, name: str) -> ChunkEdits:
        """The console's chunk edits of a KB (applied whenever its files are chunked)."""
        kb = self.catalog.get_kb(name)
        return ChunkEdits(self.catalog, kb, self.settings.files_dir / "chunk_edits" / f"{name}.json")

    def ocr_reviews(self, name: str) -> OcrReviews:
        """The console's OCR page reviews of a KB (which scanned pages a reviewer checked)."""
        kb = self.catalog.get_kb(name)
        return OcrReviews(self.catalog, kb, self.settings.files_dir / "ocr_reviews" / f"{name}.json")

    def eval_sets(self, name: str) -> EvalSets:
        """The eval sets saved for a KB from the console."""
        return EvalSets(self.catalog, self.catalog.get_kb(name), self.settings.files_dir / "eval_sets" / name)

    def import_file_state(self) -> dict[str, int]:
        """Import every KB's chunk edits, OCR reviews and eval sets that older Lore kept in files under the
        storage dir into the catalog (each file once, then renamed `*.imported`); how many rows of each."""
        out = {"chunk edits": 0, "OCR page reviews": 0, "eval sets": 0}
        for kb in self.catalog.list_kbs():
            out["chunk edits"] += self.chunk_edits(kb.name).import_legacy()
            out["OCR page reviews"] += self.ocr_reviews(kb.name).import_legacy()
            out["eval sets"] += self.eval_sets(kb.name).import_legacy()
        return out
