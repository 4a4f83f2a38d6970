"""Chunk edits made in the console: a chunk switched off or its text replaced, kept per knowledge base.

An edit names its chunk by file, position and a digest of the chunk's original text; the pipeline
applies it whenever it chunks that file again (the new text is embedded then). Until a build or an
ingest of the file has applied it, an edit is pending; a versioned KB applies it in its next build.
The edits are catalog rows (every replica sees them); a KB's old `chunk_edits/<kb>.json` file is
imported on first use.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import replace
from pathlib import Path

from lore.catalog.console import ChunkEdit
from lore.catalog.legacy import KbRows
from lore.ingest.chunk_factory import retexted
from lore.schema import Chunk

__all__ = ["ChunkEdit", "ChunkEdits", "digest", "legacy_chunk_edits"]


def digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def legacy_chunk_edits(path: Path) -> list[ChunkEdit]:
    """The edits of an old `chunk_edits/<kb>.json` file (a list of edit objects)."""
    return [ChunkEdit(**e) for e in json.loads(path.read_text(encoding="utf-8"))]


class ChunkEdits(KbRows):
    """The edits of one knowledge base, in the catalog (the old JSON file at `legacy` imported once)."""

    def load_legacy(self, path: Path) -> list[ChunkEdit]:
        return legacy_chunk_edits(path)

    def store_legacy(self, data: list[ChunkEdit]) -> int:
        return self.catalog.import_chunk_edits(self.kb.id, data)

    def all(self) -> list[ChunkEdit]:
        self.import_legacy()
        return self.catalog.list_chunk_edits(self.kb.id)

    def for_file(self, name: str) -> list[ChunkEdit]:
        self.import_legacy()
        return self.catalog.list_chunk_edits(self.kb.id, name)

    def pending(self, name: str) -> bool:
        """Does the file have an edit no ingest or build has applied yet?"""
        return any(e.applied_in is None for e in self.for_file(name))

    def put(self, edit: ChunkEdit) -> ChunkEdit:
        """Record `edit` (replacing the one at the same position), stamped now, pending."""
        self.import_legacy()
        return self.catalog.put_chunk_edit(self.kb.id, replace(edit, at="", applied_in=None))

    def apply(self, name: str, chunks: list[Chunk]) -> list[Chunk]:
        """The file's chunks with its edits applied: switched-off ones left out, edited ones re-texted
        (a new chunk id, so the new text is embedded); an edit whose chunk changed since does nothing."""
        edits = {(e.chunk_index, e.original_sha): e for e in self.for_file(name) if not e.revert}
        out = []
        for c in chunks:
            e = edits.get((c.chunk_index, digest(c.text)))
            if e is None:
                out.append(c)
            elif not e.off and e.text is not None:
                out.append(retexted(c, e.text))
        return out

    def mark_applied(self, name: str, seq: int | None) -> None:
        """The file was indexed with its edits (reverts, once applied, are dropped)."""
        self.import_legacy()
        self.catalog.mark_chunk_edits_applied(self.kb.id, name, seq or 0)
