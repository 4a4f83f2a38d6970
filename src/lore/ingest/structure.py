"""Structure-aware splitting: articles (第X条), clauses ((一), 1., a)), lists with their lead sentence and
table rows with their header are kept whole in a chunk whenever they fit, and each piece knows its
chapter/article path. Text without such structure is left to the plain splitter (see `Chunker`).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

from lore.text.units import text_units

_NUM = r"[一二三四五六七八九十百千零〇两\d]+"
ARTICLE = re.compile(rf"^\s*(第{_NUM}条)(?:之{_NUM})?(?=[\s　]|$)")
# A chapter/section line of a plain-text statute (Markdown headings are already in the heading path).
CHAPTER = re.compile(rf"^\s*第{_NUM}[编章节](?:[\s　].{{0,40}})?$")
ITEM = re.compile(
    r"^\s*(?:[（(][一二三四五六七八九十\d]+[)）]|\d{1,3}[.、．)）](?!\d)|[a-zA-Z][.)](?=\s)|[-*+•](?=\s))"
)
TABLE = re.compile(r"^\s*\|.*\|\s*$")
_LEAD_END = ("：", ":")


@dataclass
class Segment:
    """A piece of a block a chunk may start at; `carry` goes before it when a chunk does."""

    text: str
    carry: str = ""


@dataclass
class Block:
    """Text kept together when it fits: an article, a lead sentence with its items, a table, a paragraph."""

    segments: list[Segment]
    path: list[str] = field(default_factory=list)  # chapter / article titles below the section's headings
    opens: bool = False  # begins an article, a list or a table (not a later piece of one)

    @property
    def text(self) -> str:
        return _join(self.segments)


def has_structure(text: str) -> bool:
    """Whether `text` holds articles, list items or table rows (else the plain splitter is used)."""
    lines = [line for line in text.splitlines() if line.strip()]
    items = sum(1 for line in lines if ITEM.match(line))
    return any(ARTICLE.match(line) or TABLE.match(line) for line in lines) or items >= 2


def blocks(text: str, child_size: int) -> list[Block]:
    """The section's blocks in reading order; `child_size` bounds what a split piece may carry."""
    out: list[Block] = []
    chapter: list[str] = []
    atoms = _atoms(text)
    i = 0
    while i < len(atoms):
        kind, body = atoms[i]
        if kind == "chapter":
            chapter = [body.strip()]
            i += 1
            continue
        if kind == "article":
            j = _next(atoms, i + 1, {"article", "chapter"})
            label = ARTICLE.match(body).group(1)  # type: ignore[union-attr]
            out.append(Block(_segments(atoms[i:j], label, child_size), [*chapter, label], opens=True))
        elif kind == "table":
            j = _next(atoms, i + 1, {"article", "chapter", "para", "item"})
            out.append(_table([b for _, b in atoms[i:j]], chapter, child_size))
        elif kind == "para" and body.rstrip().endswith(_LEAD_END) and i + 1 < len(atoms):
            if atoms[i + 1][0] == "table":  # "... as follows:" and its table
                j = _next(atoms, i + 1, {"article", "chapter", "para", "item"})
                out.append(_table([b for _, b in atoms[i + 1 : j]], chapter, child_size, lead=body))
            else:
                j = _items_end(atoms, i + 1)
                out.append(Block(_segments(atoms[i:j], "", child_size), list(chapter), opens=True))
        elif kind == "item":
            j = _items_end(atoms, i)
            out.append(Block(_segments(atoms[i:j], "", child_size), list(chapter), opens=True))
        else:
            j = i + 1
            out.append(Block([Segment(body)], list(chapter)))
        i = max(j, i + 1)
    return out


def pack(
    items: list[Block], size: int, split: Callable[[str], list[str]], *, apart: bool = False
) -> list[list[Block]]:
    """Blocks grouped in order into groups of at most `size` units; a longer block is first cut at its
    segments (each piece led by its carry), a longer segment by `split`. `apart`: an article, list or
    table always starts a group (a search unit never mixes two articles)."""
    groups: list[list[Block]] = []
    for block in (piece for b in items for piece in _fit(b, size, split)):
        if block.opens and apart and groups:
            groups.append([block])
        elif groups and text_units(join_blocks([*groups[-1], block])) <= size:
            groups[-1].append(block)
        else:
            groups.append([block])
    return groups


def join_blocks(group: list[Block]) -> str:
    """The text of blocks packed together (a blank line between blocks)."""
    return "\n\n".join(b.text for b in group)


def _fit(block: Block, size: int, split: Callable[[str], list[str]]) -> list[Block]:
    if text_units(block.text) <= size:
        return [block]
    # the first piece still opens the article; later ones carry its heading instead
    pieces: list[list[Segment]] = []
    current: list[Segment] = []
    for n, seg in enumerate(block.segments):
        if current and text_units(_join([*current, seg])) <= size:
            current.append(seg)
            continue
        if current:
            pieces.append(current)
        current = [Segment(seg.carry), seg] if n and seg.carry else [seg]
        if text_units(_join(current)) <= size:
            continue
        current = []
        for k, part in enumerate(split(seg.text)):  # one clause alone is too long: cut, led by its article
            prefix = seg.carry if (k or n) and seg.carry else ""
            pieces.append([Segment(f"{prefix}\n{part}" if prefix else part)])
    if current:
        pieces.append(current)
    return [Block(p, block.path, opens=block.opens and not n) for n, p in enumerate(pieces)]


def _join(segments: list[Segment]) -> str:
    return "\n".join(s.text for s in segments)


def _atoms(text: str) -> list[tuple[str, str]]:
    """(kind, text) per line group: article and item lines start a new atom; other lines continue the
    paragraph they follow (a blank line ends it)."""
    atoms: list[tuple[str, str]] = []
    open_para = False
    for line in text.splitlines():
        if not line.strip():
            open_para = False
            continue
        kind = _kind(line)
        if kind == "para" and open_para and atoms and atoms[-1][0] in ("para", "article", "item"):
            atoms[-1] = (atoms[-1][0], atoms[-1][1] + "\n" + line)
        else:
            atoms.append((kind, line))
        open_para = kind in ("para", "article", "item")
    return atoms


def _kind(line: str) -> str:
    if ARTICLE.match(line):
        return "article"
    if CHAPTER.match(line):
        return "chapter"
    if TABLE.match(line):
        return "table"
    return "item" if ITEM.match(line) else "para"


def _next(atoms: list[tuple[str, str]], start: int, stop: set[str]) -> int:
    return next((k for k in range(start, len(atoms)) if atoms[k][0] in stop), len(atoms))


def _items_end(atoms: list[tuple[str, str]], start: int) -> int:
    k = start
    while k < len(atoms) and atoms[k][0] == "item":
        k += 1
    return k


def _segments(atoms: list[tuple[str, str]], label: str, child_size: int) -> list[Segment]:
    """One segment per atom; an item carries its lead sentence (when short) or else the article label."""
    segments: list[Segment] = []
    lead = ""
    for kind, body in atoms:
        if kind == "item" and lead and text_units(lead) <= child_size // 3:
            carry = lead
        else:
            carry = label
        if kind != "item":
            lead = body if body.rstrip().endswith(_LEAD_END) else ""
            if lead and label and not ARTICLE.match(lead):
                lead = f"{label} {lead}"
        segments.append(Segment(body, carry))
    return segments


def _table(lines: list[str], chapter: list[str], child_size: int, lead: str = "") -> Block:
    """Rows with their header (and its separator line, and the sentence leading to the table when it is
    short) carried into every piece."""
    head = 2 if len(lines) > 2 and re.fullmatch(r"[\s|:\-]+", lines[1]) else 1
    top = [lead, *lines[:head]] if lead else lines[:head]
    header = "\n".join(top if text_units("\n".join(top)) <= child_size // 2 else lines[:head])
    carry = header if text_units(header) <= child_size // 2 else ""
    segments = [Segment(t) for t in top] + [Segment(row, carry) for row in lines[head:]]
    return Block(segments, list(chapter), opens=True)
