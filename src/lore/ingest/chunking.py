"""Parent/child chunking: parents keep context for answers, small children are what gets searched.

Sizes are in *text units*, an approximation of model tokens that treats languages fairly:
one CJK character is one unit, three other characters are one unit.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from langchain_text_splitters import RecursiveCharacterTextSplitter

from lore.schema import Section
from lore.text.units import text_units

# Paragraphs, lines, then sentence ends (CJK and Latin), clauses, words, characters.
SEPARATORS = ["\n\n", "\n", "。", "！", "？", "；", ". ", "! ", "? ", "; ", "，", "、", ", ", " ", ""]
SCHEMA_NAME = "parent-child-v1"


@dataclass(frozen=True)
class ChunkParams:
    """Chunker parameters; `schema` names them so a change forces re-chunking."""

    child_size: int = 240
    child_overlap: int = 30
    parent_size: int = 1200

    @property
    def schema(self) -> str:
        return f"{SCHEMA_NAME}:c{self.child_size}-o{self.child_overlap}-p{self.parent_size}"


@dataclass
class Piece:
    """One child chunk before ids and metadata are attached."""

    text: str
    parent_key: int  # index of its parent within the document
    parent_text: str
    section: Section


class Chunker:
    """Splits a document's sections into parents and children; table rows stay whole."""

    def __init__(self, params: ChunkParams) -> None:
        self.params = params
        self._parents = _splitter(params.parent_size, 0)
        self._children = _splitter(params.child_size, params.child_overlap)

    def split(self, sections: list[Section]) -> Iterator[Piece]:
        """Yield children in reading order, each with its parent's text."""
        parent_key = 0
        for section in sections:
            text = section.text.strip()
            if not text:
                continue
            if section.kind == "table_row":
                yield from self._table_row(text, section, parent_key)
                parent_key += 1
                continue
            for parent in self._parents.split_text(text):
                children = (
                    self._children.split_text(parent)
                    if text_units(parent) > self.params.child_size
                    else [parent]
                )
                for child in children:
                    yield Piece(child, parent_key, parent, section)
                parent_key += 1

    def _table_row(self, text: str, section: Section, parent_key: int) -> Iterator[Piece]:
        # A row carries its own "header: value" pairs; a very long row is split, and each
        # piece is prefixed with where it came from so it never loses its headers' context.
        if text_units(text) <= self.params.parent_size:
            yield Piece(text, parent_key, text, section)
            return
        where = f"[{section.sheet or ''} row {section.row}] "
        for piece in self._parents.split_text(text):
            yield Piece(where + piece, parent_key, text, section)


def _splitter(size: int, overlap: int) -> RecursiveCharacterTextSplitter:
    return RecursiveCharacterTextSplitter(
        chunk_size=size,
        chunk_overlap=overlap,
        length_function=text_units,
        separators=SEPARATORS,
        keep_separator="end",
        strip_whitespace=True,
    )
