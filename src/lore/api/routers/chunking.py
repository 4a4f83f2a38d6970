"""A knowledge base's own chunking settings, sizes and strategy (used by its next build), and a preview of the
chunks a file or pasted text would make with given settings, without building."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from fastapi import APIRouter, HTTPException
from pydantic import BaseModel, ConfigDict, Field, model_validator
from starlette.concurrency import run_in_threadpool

from lore.api.deps import Caller, State
from lore.api.routers.ingest import uploaded
from lore.api.uploads import safe_name
from lore.app.access import audit, require_file, require_kb
from lore.app.admin_results import STRATEGY_HELP, ChunkingPreview, ChunkingSettings
from lore.app.fields import Name
from lore.config import ChunkSettings, ChunkStrategy
from lore.engine import Lore
from lore.errors import LoadError
from lore.ingest.chunking import ChunkParams
from lore.ingest.loaders import load_file
from lore.ingest.loaders.limits import FileLimits
from lore.policy import Action
from lore.text.units import text_units

router = APIRouter(prefix="/api/kbs/{kb}/chunking", tags=["chunking"])
_LIMITS = ChunkSettings.model_fields
TEXT_CHARS = 200_000  # pasted text of a preview


def _size(name: str) -> Any:
    """A size field (None: the KB's) with the bounds of `[chunk]`'s own."""
    bounds = {k: getattr(m, k) for m in _LIMITS[name].metadata for k in ("ge", "le") if hasattr(m, k)}
    return Field(default=None, ge=bounds["ge"], le=bounds["le"])


class Sizes(BaseModel):
    """Chunk sizes in text units (1 CJK character or 3 other characters) and the strategy; one left out is
    the KB's."""

    model_config = ConfigDict(extra="forbid")

    child_size: int | None = _size("child_size")
    child_overlap: int | None = _size("child_overlap")
    parent_size: int | None = _size("parent_size")
    strategy: ChunkStrategy | None = Field(default=None, description=STRATEGY_HELP)

    def over(self, base: ChunkParams) -> ChunkParams:
        """These sizes and strategy over `base`; 422 unless overlap < child size <= parent size."""
        p = ChunkParams(
            base.child_size if self.child_size is None else self.child_size,
            base.child_overlap if self.child_overlap is None else self.child_overlap,
            base.parent_size if self.parent_size is None else self.parent_size,
            strategy=base.strategy if self.strategy is None else self.strategy,
        )
        if p.child_overlap >= p.child_size:
            raise HTTPException(422, "child_overlap must be smaller than child_size")
        if p.child_size > p.parent_size:
            raise HTTPException(422, "child_size must not exceed parent_size")
        return p


class SettingsBody(Sizes):
    """The KB's new chunk sizes and strategy, or `reset`: follow the configured `[chunk]` section again."""

    reset: bool = False


class PreviewBody(Sizes):
    """An upload of the KB (`file`) or pasted `text` (read as `name`'s format), and the sizes and strategy to
    try."""

    file: Name | None = None
    text: str | None = Field(default=None, max_length=TEXT_CHARS)
    name: Name = "pasted.md"
    limit: int = Field(default=200, ge=1, le=1000)

    @model_validator(mode="after")
    def _one(self) -> PreviewBody:
        if (self.file is None) == (self.text is None):
            raise ValueError("give either file or text")
        return self


def _json(lore: Lore, kb: str) -> dict[str, Any]:
    record = lore.catalog.get_kb(kb)
    own = lore.catalog.get_chunk_settings(record.id)
    p, c = lore.kb_chunk_params(record), lore.chunk_params
    return {
        "kb": kb,
        "child_size": p.child_size,
        "child_overlap": p.child_overlap,
        "parent_size": p.parent_size,
        "strategy": p.strategy,
        "schema_name": p.schema,
        "own": own is not None,
        "defaults": {
            "child_size": c.child_size,
            "child_overlap": c.child_overlap,
            "parent_size": c.parent_size,
            "strategy": c.strategy,
        },
        "updated_by": own.updated_by if own else None,
        "updated_at": own.updated_at.isoformat() if own else None,
    }


@router.get("", response_model=ChunkingSettings)
async def get_settings(kb: str, scope: Caller, state: State) -> dict[str, Any]:
    """The KB's chunk sizes and strategy (admins who may build it)."""

    def run() -> dict[str, Any]:
        require_kb(state.lore, scope, kb, Action.BUILD)
        return _json(state.lore, kb)

    return await run_in_threadpool(run)


@router.put("", response_model=ChunkingSettings)
async def put_settings(kb: str, body: SettingsBody, scope: Caller, state: State) -> dict[str, Any]:
    """Set the KB's own chunk sizes and strategy, used by its next build (or `reset` to the configured ones);
    one left out keeps the KB's."""

    def run() -> dict[str, Any]:
        lore = state.lore
        record = require_kb(lore, scope, kb, Action.BUILD)
        if body.reset:
            lore.catalog.set_chunk_settings(record.id, None, by=scope.actor)
        else:
            p = body.over(lore.kb_chunk_params(record))
            lore.catalog.set_chunk_settings(
                record.id, (p.child_size, p.child_overlap, p.parent_size), by=scope.actor, strategy=p.strategy
            )
        audit(lore, scope, "chunking", kb=kb, target=_json(lore, kb)["schema_name"])
        return _json(lore, kb)

    return await run_in_threadpool(run)


def _source(lore: Lore, kb: str, body: PreviewBody, scope: Any, tmp: Path) -> tuple[Path, str]:
    """The file to split: the caller's visible upload, or the pasted text written under `tmp`."""
    record = require_kb(lore, scope, kb, Action.BUILD)
    if body.file is not None:
        path = uploaded(lore, record, body.file, scope)
        require_file(lore, record, path.name, scope)
        return path, body.file
    path = tmp / safe_name(body.name)
    path.write_text(body.text or "", encoding="utf-8")
    return path, body.name


@router.post("/preview", response_model=ChunkingPreview)
async def preview(kb: str, body: PreviewBody, scope: Caller, state: State) -> dict[str, Any]:
    """The chunks an upload of the KB or pasted text would make with the sizes and strategy given (the KB's
    for those left out): text, length, heading path; nothing is built or stored (admins who may build it)."""

    def run() -> dict[str, Any]:
        lore = state.lore
        with tempfile.TemporaryDirectory(prefix="lore-chunking-") as tmp:
            path, label = _source(lore, kb, body, scope, Path(tmp))
            record = lore.catalog.get_kb(kb)
            params = body.over(lore.kb_chunk_params(record))
            limits = FileLimits.from_settings(lore.settings.ingest)
            try:
                docs = load_file(path, ocr=lore.settings.ingest.ocr, limits=limits)
            except LoadError as exc:
                raise HTTPException(422, f"{label}: {exc.reason}") from exc
        chunker = lore.chunker(record, params)  # "semantic": with the KB's embedder, as its build
        pieces, parents = [], 0
        for doc in docs:
            split = list(chunker.split(doc.sections))
            pieces += [(parents + p.parent_key, p) for p in split]
            parents += len({p.parent_key for p in split})
        return {
            "source": label,
            "strategy": params.strategy,
            "schema_name": params.schema,
            "documents": len(docs),
            "chunks": len(pieces),
            "parents": parents,
            "preview": [
                {
                    "index": i,
                    "text": p.text,
                    "length": text_units(p.text),
                    "chars": len(p.text),
                    "heading_path": p.heading_path,
                    "parent": parent,
                    "page": p.section.page,
                }
                for i, (parent, p) in enumerate(pieces[: body.limit])
            ],
        }

    return await run_in_threadpool(run)
