"""The one test chunk: every test builds its `Chunk` from `BASE`, changing only the fields it is about."""

from __future__ import annotations

import dataclasses
from typing import Any

from lore.schema import Chunk

BASE = Chunk(
    chunk_id="c0",
    text="正文",
    parent_id="p0",
    parent_text="父段",
    kb_id="kb",
    document_id="d0",
    file_path="a.md",
    file_sha256="0" * 64,
    chunk_index=0,
    chunk_schema="v1",
    embedding_model="m",
)


def make_chunk(**fields: Any) -> Chunk:
    """`BASE` with these fields changed."""
    return dataclasses.replace(BASE, **fields)
