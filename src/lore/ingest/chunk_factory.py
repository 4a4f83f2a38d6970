"""The one place chunks are made: their ids, document ids and the fields every chunk of a file shares.

Ids are derived from content with `stable_id` and must not change for the same input: existing knowledge
bases and incremental builds recognise their chunks by them (tests/ingest/test_chunk_factory.py pins them).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from lore.ingest.chunking import Chunker
from lore.schema import Chunk, LoadedDocument
from lore.text.normalise import normalise
from lore.text.units import stable_id


@dataclass(frozen=True)
class ChunkSource:
    """The file chunks are made from and the build making them: what each of its chunks carries."""

    kb_id: str
    file_name: str
    file_sha256: str
    chunk_schema: str
    embedding_model: str
    seq: int | None = None  # a versioned build: chunks are valid from it and their ids include it

    def chunk(
        self,
        index: int,
        text: str,
        *,
        chunk_id: str,
        parent_id: str,
        parent_text: str,
        document_id: str,
        **fields: Any,
    ) -> Chunk:
        """A chunk of this file at position `index` with the given ids and further fields."""
        return Chunk(
            chunk_id=chunk_id,
            text=text,
            parent_id=parent_id,
            parent_text=parent_text,
            kb_id=self.kb_id,
            document_id=document_id,
            file_path=self.file_name,
            file_sha256=self.file_sha256,
            chunk_index=index,
            chunk_schema=self.chunk_schema,
            embedding_model=self.embedding_model,
            valid_from_seq=self.seq or 1,
            **fields,
        )

    @property
    def version_tag(self) -> list[str]:
        """The id part of a versioned build (none for an unversioned ingest)."""
        return [f"v{self.seq}"] if self.seq else []


def file_document_id(kb_id: str, file_name: str) -> str:
    """The document id of a file that does not carry its own (stable across re-ingests)."""
    return "doc_" + stable_id(kb_id, file_name)[:16]


def document_id_of(doc: LoadedDocument, kb_id: str, file_name: str, tenant: str = "default") -> str:
    """A record's own id (JSONL), namespaced by its tenant unless that is the default; else the file's."""
    if doc.document_id:
        return doc.document_id if tenant == "default" else f"{tenant}:{doc.document_id}"
    return file_document_id(kb_id, file_name)


def document_chunk(
    src: ChunkSource,
    index: int,
    text: str,
    *,
    document_id: str,
    parent_key: int,
    parent_text: str,
    **fields: Any,
) -> Chunk:
    """A document's child chunk: its id from file, document, schema, position, text (and version); its
    parent's from the document, the parent's position in it and the parent's text."""
    return src.chunk(
        index,
        text,
        chunk_id=stable_id(
            src.kb_id, src.file_name, document_id, src.chunk_schema, index, text, *src.version_tag
        ),
        parent_id=stable_id(src.kb_id, document_id, parent_key, parent_text),
        parent_text=parent_text,
        document_id=document_id,
        **fields,
    )


def chunk_document(
    doc: LoadedDocument,
    chunker: Chunker,
    *,
    kb_id: str,
    file_name: str,
    file_sha256: str,
    embedding_model: str,
    seq: int | None = None,
    metadata: dict[str, Any] | None = None,
) -> list[Chunk]:
    """Split one loaded document into child chunks carrying the metadata contract; `metadata` (tenant_id,
    source, ...) overrides the defaults. In a versioned build (`seq` set) the chunks are valid from `seq`
    and their ids include it, so a text that comes back later is a new row, never an older version's."""
    meta = metadata or {}
    src = ChunkSource(kb_id, file_name, file_sha256, chunker.params.schema, embedding_model, seq)
    document_id = document_id_of(doc, kb_id, file_name, meta.get("tenant_id", "default"))
    chunks = []
    for i, piece in enumerate(chunker.split(doc.sections)):
        s = piece.section
        where = {
            "source_type": "table_row" if s.kind == "table_row" else "doc",
            "page": s.page,
            "slide": s.slide,
            "heading_path": list(piece.heading_path),
            "sheet": s.sheet,
            "row": s.row,
            "title": doc.title,
        }
        chunks.append(
            document_chunk(
                src,
                i,
                piece.text,
                document_id=document_id,
                parent_key=piece.parent_key,
                parent_text=piece.parent_text,
                **{**where, **meta},
            )
        )
    return chunks


def edited_chunk(src: ChunkSource, index: int, text: str, *, parent_text: str, **fields: Any) -> Chunk:
    """A chunk a person wrote for a file (add-by-chunks): the file's document (as when it is ingested),
    ids marked `edited` so they never collide with the chunker's, each chunk its own parent."""
    document_id = file_document_id(src.kb_id, src.file_name)
    return src.chunk(
        index,
        text,
        chunk_id=stable_id(src.kb_id, src.file_name, document_id, src.chunk_schema, index, text, "edited"),
        parent_id=stable_id(src.kb_id, document_id, "edited", index, parent_text),
        parent_text=parent_text,
        document_id=document_id,
        **fields,
    )


def retexted(chunk: Chunk, text: str) -> Chunk:
    """The chunk with its text replaced by an edit: a new id (derived from the old), so it is embedded."""
    return replace(chunk, text=text, chunk_id=stable_id(chunk.chunk_id, "edited", text))


def faq_chunk(
    src: ChunkSource,
    index: int,
    question: str,
    answer: str,
    *,
    tenant_id: str,
    dataset_id: str,
    source: str,
    visibility: str,
    allowed_roles: list[str],
    **fields: Any,
) -> Chunk:
    """An FAQ row's chunk: the question is searched, the answer is its passage and direct answer. Its id
    covers everything that decides who reads it; its document is the question within the tenant."""
    key = normalise(question, match_key=True)
    chunk_id = stable_id(
        src.kb_id,
        src.file_name,
        "faq",
        tenant_id,
        dataset_id,
        key,
        answer,
        source,
        visibility,
        *allowed_roles,
        *src.version_tag,
    )
    return src.chunk(
        index,
        question,
        chunk_id=chunk_id,
        parent_id=chunk_id,
        parent_text=answer,
        document_id="faq_" + stable_id(src.kb_id, tenant_id, key)[:16],
        source_type="faq",
        source=source,
        tenant_id=tenant_id,
        dataset_id=dataset_id,
        visibility=visibility,
        allowed_roles=list(allowed_roles),
        answer=answer,
        **fields,
    )
