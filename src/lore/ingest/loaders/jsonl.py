"""JSON Lines loader for BEIR-style corpora: one document per `{"_id", "title", "text"}` record."""

from __future__ import annotations

import json
from pathlib import Path

from lore.errors import LoadError
from lore.ingest.loaders.base import LoadOptions
from lore.ingest.loaders.encoding import read_text
from lore.schema import LoadedDocument, Section


def load_jsonl(path: Path, options: LoadOptions) -> list[LoadedDocument]:
    """Each record becomes a document with `document_id=_id`, `title`, and one section of its text."""
    text, encoding = read_text(path)
    file = str(path)
    docs: list[LoadedDocument] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise LoadError(file, f"line {number}: invalid JSON ({exc.msg})") from exc
        if not isinstance(record, dict):
            raise LoadError(file, f"line {number}: expected a JSON object, got {type(record).__name__}")
        doc_id = record.get("_id", record.get("id"))
        if doc_id is None or str(doc_id).strip() == "":
            raise LoadError(file, f'line {number}: record has no "_id"')
        title = str(record.get("title") or "").strip()
        body = str(record.get("text") or "").strip()
        # The title stays out of the section text: chunking puts it in front of every chunk's
        # index text instead, so each chunk of a long record keeps its title.
        content = body or title
        docs.append(
            LoadedDocument(
                path=file,
                sections=[Section(text=content)] if content else [],
                document_id=str(doc_id),
                title=title or None,
                encoding=encoding,
                warnings=[] if content else [f"line {number}: record {doc_id} has no text"],
            )
        )
    return docs
