"""Parent/child chunking: parents keep context for answers, small children are what gets searched.

Sizes are in *text units*, an approximation of model tokens that treats languages fairly:
one CJK character is one unit, three other characters are one unit.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

from langchain_text_splitters import RecursiveCharacterTextSplitter

from lore.config import ChunkStrategy
from lore.errors import ConfigError
from lore.ingest.semantic_chunks import EmbedFn, split_semantic
from lore.ingest.structure import blocks, has_structure, join_blocks, pack
from lore.schema import Section
from lore.text.units import text_units

# Paragraphs, lines, then sentence ends (CJK and Latin), clauses, words, characters.
SEPARATORS = ["\n\n", "\n", "。", "！", "？", "；", ". ", "! ", "? ", "; ", "，", "、", ", ", " ", ""]
# v2: articles, clauses, lists with their lead sentence and table rows are kept whole (structure.py).
SCHEMA_NAME = "parent-child-v2"
SEMANTIC_SCHEMA = "semantic-v1"


@dataclass(frozen=True)
class ChunkParams:
    """Chunker parameters; `schema` names them so a change forces re-chunking."""

    child_size: int = 240
    child_overlap: int = 30
    parent_size: int = 1200
    strategy: ChunkStrategy = "structure"

    @classmethod
    def from_schema(cls, schema: str) -> ChunkParams:
        """The parameters a schema name states: "semantic-v1:c240-o30-p1200" -> (240, 30, 1200, semantic)."""
        name, sizes = schema.split(":", 1)
        c, o, p = sizes.split("-")
        strategy: ChunkStrategy = "semantic" if name == SEMANTIC_SCHEMA else "structure"
        return cls(int(c[1:]), int(o[1:]), int(p[1:]), strategy)

    @property
    def schema(self) -> str:
        sizes = f"c{self.child_size}-o{self.child_overlap}-p{self.parent_size}"
        return f"{SCHEMA_NAME}:{sizes}" if self.strategy == "structure" else f"{SEMANTIC_SCHEMA}:{sizes}"


@dataclass
class Piece:
    """One child chunk before ids and metadata are attached."""

    text: str
    parent_key: int  # index of its parent within the document
    parent_text: str
    section: Section
    heading_path: list[str] = field(default_factory=list)  # the section's, then chapter/article (if any)


class Chunker:
    """Splits a document's sections into parents and children; table rows stay whole, and so do articles,
    clauses and lists in text that has them (`structure.py`)."""

    def __init__(self, params: ChunkParams, embed: EmbedFn | None = None) -> None:
        if params.strategy == "semantic" and embed is None:
            raise ConfigError("chunk.strategy = semantic needs the KB's embedder (Wiring.chunker)")
        self.params, self._embed = params, embed
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
            if section.kind == "text" and self._embed is not None and self.params.strategy == "semantic":
                pieces = self._semantic(text, section, parent_key)
                yield from pieces
                parent_key = pieces[-1].parent_key + 1 if pieces else parent_key
                continue
            if section.kind == "text" and has_structure(text):
                pieces = self._structured(text, section, parent_key)
                yield from pieces
                parent_key = pieces[-1].parent_key + 1 if pieces else parent_key
                continue
            for parent in self._parents.split_text(text):
                children = (
                    self._children.split_text(parent)
                    if text_units(parent) > self.params.child_size
                    else [parent]
                )
                for child in children:
                    yield Piece(child, parent_key, parent, section, list(section.heading_path))
                parent_key += 1

    def _structured(self, text: str, section: Section, parent_key: int) -> list[Piece]:
        """Parents and children packed from whole blocks; a child's heading path ends with its first
        block's chapter/article."""
        p, out = self.params, []
        parents = pack(blocks(text, p.child_size), p.parent_size, self._parents.split_text)
        for key, group in enumerate(parents, start=parent_key):
            parent_text = join_blocks(group)
            # A child never mixes two articles (lists, tables): packed together, the right one ranked lower.
            for children in pack(group, p.child_size, self._children.split_text, apart=True):
                path = [*section.heading_path, *children[0].path]
                out.append(Piece(join_blocks(children), key, parent_text, section, path))
        return out

    def _semantic(self, text: str, section: Section, parent_key: int) -> list[Piece]:
        """Children cut where the meaning moves (`semantic_chunks.py`), a child at most `child_size` (a
        longer single unit is split by sizes); parents are runs of whole children up to `parent_size`."""
        p, embed = self.params, self._embed
        assert embed is not None
        children: list[str] = []
        for piece in split_semantic(text, embed, min_units=p.child_size // 4, max_units=p.child_size):
            fits = text_units(piece) <= p.child_size
            children += [piece] if fits else self._children.split_text(piece)
        out: list[Piece] = []
        group: list[str] = []
        for child in [*children, ""]:
            if group and (not child or text_units("\n".join([*group, child])) > p.parent_size):
                parent = "\n".join(group)
                out += [Piece(c, parent_key, parent, section, list(section.heading_path)) for c in group]
                parent_key, group = parent_key + 1, []
            if child:
                group.append(child)
        return out

    def _table_row(self, text: str, section: Section, parent_key: int) -> Iterator[Piece]:
        # A row carries its own "header: value" pairs; a very long row is split, and each
        # piece is prefixed with where it came from so it never loses its headers' context.
        if text_units(text) <= self.params.parent_size:
            yield Piece(text, parent_key, text, section, list(section.heading_path))
            return
        where = f"[{section.sheet or ''} row {section.row}] "
        for piece in self._parents.split_text(text):
            yield Piece(where + piece, parent_key, text, section, list(section.heading_path))


def _splitter(size: int, overlap: int) -> RecursiveCharacterTextSplitter:
    return RecursiveCharacterTextSplitter(
        chunk_size=size,
        chunk_overlap=overlap,
        length_function=text_units,
        separators=SEPARATORS,
        keep_separator="end",
        strip_whitespace=True,
    )
