"""The one accent folding: Latin letters without their diacritics, for BM25 and every overlap measure."""

from __future__ import annotations

import unicodedata
from functools import lru_cache

# Bumped whenever `tokenize` gives other tokens for the same text: a lexical index records the
# version it was built with, and one built by an older version is re-tokenised (1: accents kept;
# 2: hyphen-joined words not also joined, "IT" a stop word).
TOKENIZER_VERSION = 3

# Latin letters that carry their mark in the letter itself (no Unicode decomposition), as
# Lucene's ASCII folding spells them.
_LETTERS = str.maketrans(
    {"ß": "ss", "æ": "ae", "œ": "oe", "ø": "o", "ł": "l", "đ": "d", "ð": "d", "þ": "th", "ı": "i"}
)


def _latin(ch: str) -> bool:
    return ch.isascii() or unicodedata.name(ch, "").startswith("LATIN")


@lru_cache(maxsize=65536)
def fold(word: str) -> str:
    """A lower-case word without the diacritics of its Latin letters ("beyoncé" -> "beyonce",
    "dvořák" -> "dvorak"). ASCII words, CJK, Cyrillic, Greek and other scripts are unchanged."""
    if word.isascii():
        return word
    kept: list[str] = []
    for ch in unicodedata.normalize("NFD", word):
        # A mark goes only when it sits on a Latin letter (or on a mark that did): "й" keeps its breve.
        if unicodedata.combining(ch) and kept and _latin(kept[-1]):
            continue
        kept.append(ch)
    return unicodedata.normalize("NFC", "".join(kept)).translate(_LETTERS)
