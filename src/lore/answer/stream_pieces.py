"""An answer known whole (extractive, a refusal, a direct reply) cut into clause-sized stream pieces.

Cuts fall after a line break and after clause or sentence punctuation (followed by a space in Latin
text); a clause longer than `PIECE_UNITS` is cut further between words (or two CJK characters), leaving
no scrap. A cut never falls inside a word, a number or a `[n]` marker; the pieces join back to the text.
"""

from __future__ import annotations

import re

from lore.lexical import CJK
from lore.text.units import text_units

# About five English words or ten CJK characters: a clause longer than this streams in several pieces.
PIECE_UNITS = 10
_CLAUSE_END = re.compile(r"\n+|(?<=[,;:.!?])[ \t]+|(?<=[，；：、。！？])[ \t]*")
_WORD_GAP = re.compile(rf"[ \t]+|(?<=[{CJK}])(?=[{CJK}])")


def stream_pieces(text: str, max_units: int = PIECE_UNITS) -> list[str]:
    """`text` in clause-sized pieces whose concatenation is `text` (an empty text is one empty piece)."""
    pieces, start = [], 0
    for m in _CLAUSE_END.finditer(text):
        if m.end() > start and m.end() < len(text):
            pieces += _split_long(text[start : m.end()], max_units)
            start = m.end()
    pieces += _split_long(text[start:], max_units)
    return [p for p in pieces if p] or [text]


def _split_long(clause: str, max_units: int) -> list[str]:
    """A clause cut at the first word gap after each `max_units` units, unless less than half that would
    be left after the cut; short clauses stay whole."""
    pieces, start = [], 0
    for m in _WORD_GAP.finditer(clause):
        head, rest = clause[start : m.end()], clause[m.end() :]
        if text_units(head) >= max_units and 2 * text_units(rest) >= max_units:
            pieces.append(clause[start : m.end()])
            start = m.end()
    pieces.append(clause[start:])
    return pieces
