"""Sentence splitting for Chinese and English text, and token-overlap measures used by answers."""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from functools import lru_cache

from lore.lexical import is_chinese, tokenize
from lore.lexical.tokenize import word_frequency
from lore.text.units import text_units

# A sentence ends after CJK end punctuation (with the closing quote or bracket after it: "…。」"), after
# Latin end punctuation followed by a space and a sentence start, or at a line break; a citation marker
# right after the punctuation stays with its sentence ("…审批单。[1]", "…days.[2] Next"). "?;" inside a
# table row ("question: …?; answer: …") is no end.
_SPLIT = re.compile(
    r"(?<=[。！？；])(?![」』”’）)】]|\s*\[\d)\s*"
    r"|(?<=[。！？；][」』”’）)】])(?!\s*\[\d)\s*|(?<=[。！？；][」』”’）)】]\[\d\])\s*"
    r"|(?<=[。！？；]\[\d\])\s*|(?<=[。！？；]\[\d\d\])\s*"
    r"|(?<=[.!?])\s+(?=[A-Z0-9\"'(\u4e00-\u9fff])"
    r"|(?<=[.!?]\[\d\])\s+|(?<=[.!?]\[\d\d\])\s+"
    r"|\n+"
)
# Latin abbreviations and initials after which ". X" goes on: no sentence ends there. A capital after a
# degree sign or a digit is a unit ("40 °C.", "5 V."), not an initial.
_ABBREVIATION = re.compile(
    r"(?:\b(?:No|Nos|Op|St|Mr|Mrs|Ms|Dr|Prof|Jr|Sr|vs|etc|approx|ca|Vol|pp|Fig|Mt|Inc|Ltd|Co|Corp|Gen|"
    r"Gov|Sen|Rev|Jan|Feb|Mar|Apr|Jun|Jul|Aug|Sep|Sept|Oct|Nov|Dec)|(?<![°\d]\s)(?<![°\d])\b[A-Z]"
    r"|\b(?:[A-Za-z]\.){1,3}[A-Za-z])\.$"
)
_CLAUSE_MARKS = "，,、；;：: "
_LIST_ITEM = re.compile(r"^(?:[-*•·]|\d{1,2}[.)、]|[（(]?\d{1,2}[)）])\s*")
_MAX_LIST_ITEMS = 8
# A single line break after a character that ends no sentence, before a line that starts no list
# item or heading, is a wrap (PDF lines, hard-wrapped text): it joins rather than splits.
_WRAP = re.compile(r"([^\s。！？；：:.!?;])\n(?![-*•·#>|]|\d{1,2}[.)、])(?=\S)")
_CJK_WRAP = re.compile(r"[\u3000-\u9fff\uff00-\uffef]")  # CJK text and full-width marks: no space at a wrap
KEY_WEIGHT = 0.6  # a token this informative is a key term of a question (names, codes, rare words)


_HEADING_CHARS = 32  # a line this short that ends no sentence is a heading, not a wrapped line


def _unwrap(text: str) -> str:
    def join(m: re.Match[str]) -> str:
        line = text[text.rfind("\n", 0, m.start()) + 1 : m.start() + 1]
        if len(line.strip()) <= _HEADING_CHARS:
            return m.group(0)
        nxt = text[m.end()] if m.end() < len(text) else ""
        both_cjk = _CJK_WRAP.match(m.group(1)) and _CJK_WRAP.match(nxt)
        return m.group(1) + ("" if both_cjk else " ")

    return _WRAP.sub(join, text)


def _rejoin_abbreviations(pieces: list[str]) -> list[str]:
    """Undo splits after an abbreviation or initial ("Op. 21", "the U.S. Billboard", "J. S. Bach")."""
    out: list[str] = []
    for piece in pieces:
        if out and _ABBREVIATION.search(out[-1]) and "\n" not in out[-1][-4:]:
            out[-1] = f"{out[-1]} {piece}"
        else:
            out.append(piece)
    return out


_CODE = re.compile(r"\b[A-Za-z]+-?\d+[A-Za-z]*\b")  # LF-200, LF200C: a name, not a figure
_FIGURE = re.compile(r"\d")
_SENTENCE_END = (".", "!", "?", "。", "！", "？", ":", "：", ";", "；", "…", "]", ")", "）")
_TITLE_UNITS = 24
_TITLE_WORDS = 4  # words between spaces: a sentence that lost its full stop has more


def title_line(text: str) -> bool:
    """A few words with no sentence end and no figure but in a code: a title or heading such as a page's
    text starts with ("LF-200 Picker", "LF-200 拣选机器人 - 灯笼鱼机器人有限公司")."""
    bare = text.strip()
    return (
        "\n" not in bare
        and not bare.endswith(_SENTENCE_END)
        and text_units(bare) <= _TITLE_UNITS
        and len(bare.split()) <= _TITLE_WORDS
        and not _FIGURE.search(_CODE.sub("", bare))
    )


def split_sentences(text: str) -> list[str]:
    """Sentences in order, stripped, empty ones (no letter, figure or character: "。") dropped; a line
    ending in a colon keeps the list items that follow it (so "年假天数如下：" comes with its items)."""
    # A clause mark left at the start (a name the source dropped: "（），是…") starts no sentence.
    pieces = [
        s.strip().lstrip(_CLAUSE_MARKS)
        for s in _SPLIT.split(_unwrap(text))
        if s and any(ch.isalnum() for ch in s)
    ]
    pieces = _rejoin_abbreviations(pieces)
    merged: list[str] = []
    items = 0
    for piece in pieces:
        if (
            merged
            and _LIST_ITEM.match(piece)
            and merged[-1].rstrip().endswith((":", "：", ";", "；"))
            or (merged and items and _LIST_ITEM.match(piece) and items < _MAX_LIST_ITEMS)
        ):
            merged[-1] = f"{merged[-1]}\n{piece}"
            items += 1
            continue
        merged.append(piece)
        items = 0
    return merged


def token_weights(tokens: Iterable[str]) -> dict[str, float]:
    """Weight of each distinct token by how informative it is.

    Chinese words are weighted by their rarity in jieba's dictionary (common words such as 需要 or
    公司 match almost any passage and must not make one look relevant); other tokens weigh 1, single
    characters 0.3 at most.
    """
    return {t: _weight(t) for t in tokens}


def key_terms(query_tokens: Iterable[str], key_weight: float = KEY_WEIGHT) -> set[str]:
    """The query's key tokens: names, codes, rare words (weight >= key_weight)."""
    return {t for t, w in token_weights(query_tokens).items() if w >= key_weight}


def key_coverage(query_tokens: Iterable[str], text: str, key_weight: float = KEY_WEIGHT) -> float:
    """Share of the query's key tokens (weight >= key_weight) found in `text`; 1.0 if it has none."""
    keys = key_terms(query_tokens, key_weight)
    if not keys:
        return 1.0
    present = token_set(text)
    return len(keys & present) / len(keys)


@lru_cache(maxsize=8192)
def token_set(text: str) -> frozenset[str]:
    """The distinct tokens of a passage or sentence; cached, since evidence, grading, citing and
    extracting all test the same passages against the question's terms. Tokens come accent-folded
    (`lore.lexical.fold`), so "Beyonce" in a question meets "Beyoncé" in a passage."""
    return frozenset(tokenize(text))


@lru_cache(maxsize=65536)
def _weight(token: str) -> float:
    cap = 0.3 if len(token) == 1 else 1.0
    if not is_chinese(token[:1]):  # jieba's dictionary knows Chinese words only
        return cap
    freq, total = word_frequency(token)
    rarity = math.log(total / max(freq, 1))  # 7 for everyday words, 12+ for specialised ones
    return min(cap, max(0.1, (rarity - 7.0) / 5.0))


def coverage(query_tokens: Iterable[str], text: str, weights: dict[str, float] | None = None) -> float:
    """Weighted share of the query's distinct tokens that occur in `text` (0-1); `weights` overrides
    the tokens' own weights (e.g. `local_weights`)."""
    weights = weights if weights is not None else token_weights(query_tokens)
    total = sum(weights.values())
    if not total:
        return 0.0
    present = token_set(text)
    return sum(w for t, w in weights.items() if t in present) / total


def local_weights(query_tokens: Iterable[str], texts: Iterable[str]) -> dict[str, float]:
    """The query tokens' weights scaled by how rare each is among `texts` (the retrieved passages):
    a word every passage shares (the article's subject) tells them apart less than one only a few hold."""
    weights = token_weights(query_tokens)
    sets = [token_set(t) for t in texts]
    if len(sets) < 3:
        return weights
    n = len(sets)
    out = {}
    for t, w in weights.items():
        df = sum(t in s for s in sets)
        out[t] = w * (0.5 + 0.5 * math.log((n + 1) / (df + 0.5)) / math.log((n + 1) / 0.5))
    return out
