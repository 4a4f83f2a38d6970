"""Chunk edits made in the console: a chunk switched off or its text replaced, kept per knowledge base.

An edit names its chunk by file, position and a digest of the chunk's original text; the pipeline
applies it whenever it chunks that file again (the new text is embedded then). Until a build or an
ingest of the file has applied it, an edit is pending; a versioned KB applies it in its next build.
"""

from __future__ import annotations

import hashlib
import json
import threading
from dataclasses import asdict, dataclass, replace
from datetime import UTC, datetime
from pathlib import Path

from lore.ingest.chunk_factory import retexted
from lore.schema import Chunk

_LOCK = threading.Lock()


def digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


@dataclass
class ChunkEdit:
    """One chunk's change: `off` (left out of the index) or `text` (replaces it); neither is a revert."""

    file: str
    chunk_index: int
    original_sha: str
    original: dict  # the chunk as it was stored before any edit (its text, location and access fields)
    text: str | None = None
    off: bool = False
    by: str = ""
    at: str = ""
    applied_in: int | None = None  # None: pending; 0: applied by an unversioned ingest; n: in version n

    @property
    def revert(self) -> bool:
        return not self.off and self.text is None

    def chunk(self) -> Chunk:
        """The original chunk (for access checks and to show a switched-off chunk)."""
        return Chunk(**self.original)

    def to_json(self) -> dict:
        out = {k: v for k, v in asdict(self).items() if k != "original"}
        return {**out, "original_text": self.original["text"], "pending": self.applied_in is None}


class ChunkEdits:
    """The edits of one knowledge base, in `<storage dir>/chunk_edits/<kb>.json`."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def all(self) -> list[ChunkEdit]:
        if not self.path.is_file():
            return []
        return [ChunkEdit(**e) for e in json.loads(self.path.read_text(encoding="utf-8"))]

    def for_file(self, name: str) -> list[ChunkEdit]:
        return [e for e in self.all() if e.file == name]

    def pending(self, name: str) -> bool:
        """Does the file have an edit no ingest or build has applied yet?"""
        return any(e.applied_in is None for e in self.for_file(name))

    def put(self, edit: ChunkEdit) -> ChunkEdit:
        """Record `edit` (replacing the one at the same position), stamped now, pending."""
        edit = replace(edit, at=datetime.now(UTC).isoformat(timespec="seconds"), applied_in=None)
        with _LOCK:
            rest = [e for e in self.all() if (e.file, e.chunk_index) != (edit.file, edit.chunk_index)]
            self._save([*rest, edit])
        return edit

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
        with _LOCK:
            edits = []
            for e in self.all():
                if e.file == name and e.applied_in is None:
                    if e.revert:
                        continue
                    e = replace(e, applied_in=seq or 0)
                edits.append(e)
            self._save(edits)

    def _save(self, edits: list[ChunkEdit]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps([asdict(e) for e in edits], ensure_ascii=False, indent=1), encoding="utf-8")
        tmp.replace(self.path)
