"""Mixed Chinese/English tokenisation for BM25.

Text is split into CJK runs and other runs. CJK runs go through jieba's search mode (words plus
their shorter sub-words, which lifts recall when a query and a passage segment differently);
other runs become lower-cased word tokens with Latin diacritics folded (`fold`: "Beyoncé" and
"Beyonce" are one token), English stop words dropped and Snowball-stemmed.
"""

from __future__ import annotations

import logging
import re
import unicodedata
from collections.abc import Iterable
from functools import lru_cache

import jieba
import Stemmer

from lore.lexical.fold import fold

CJK = r"\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af"  # kana, CJK ideographs, hangul
CJK_CHAR = re.compile(f"[{CJK}]")
_HAN = re.compile(r"[\u4e00-\u9fff]")
_WORD = rf"[^\W_{CJK}]+"  # word characters except underscore and CJK
_RUNS = re.compile(rf"([{CJK}]+)|({_WORD}(?:[.']{_WORD})*)", re.UNICODE)

# A compact English stop list (the usual Lucene/bm25s-style set).
STOP_WORDS = frozenset(
    [
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "but",
        "by",
        "for",
        "if",
        "in",
        "into",
        "is",
        "it",
        "no",
        "not",
        "of",
        "on",
        "or",
        "such",
        "that",
        "the",
        "their",
        "then",
        "there",
        "these",
        "they",
        "this",
        "to",
        "was",
        "will",
        "with",
        "were",
        "what",
        "which",
        "who",
        "whom",
        "when",
        "where",
        "why",
        "how",
        "than",
        "too",
        "very",
        "can",
        "just",
        "do",
        "does",
        "did",
        "has",
        "have",
        "had",
        "i",
        "me",
        "my",
        "we",
        "our",
        "you",
        "your",
        "he",
        "him",
        "his",
        "she",
        "her",
        "its",
        "them",
        "from",
        "about",
        "been",
        "being",
        "so",
        "all",
        "any",
        "both",
        "each",
        "few",
        "more",
        "most",
        "other",
        "some",
        "only",
        "own",
        "same",
        "s",
        "t",
        "don",
        "should",
        "now",
    ]
)
# Chinese function words and punctuation-like tokens that carry no retrieval signal.
CJK_STOP = frozenset(
    [
        "的",
        "了",
        "和",
        "是",
        "在",
        "也",
        "就",
        "都",
        "而",
        "及",
        "与",
        "或",
        "等",
        "之",
        "其",
        "这",
        "那",
        "个",
        "吗",
        "呢",
        "吧",
        "啊",
        "么",
        "什么",
        "怎么",
        "如何",
    ]
)

jieba.setLogLevel(logging.WARNING)


@lru_cache(maxsize=1)
def _stemmer() -> Stemmer.Stemmer:
    return Stemmer.Stemmer("english")


def stem_words(words: list[str]) -> list[str]:
    """English words stemmed as `tokenize` stems them (Snowball English), in one call."""
    stemmed: list[str] = _stemmer().stemWords(words)
    return stemmed


@lru_cache(maxsize=1)
def _jieba() -> jieba.Tokenizer:
    tok = jieba.Tokenizer()
    tok.initialize()
    return tok


def word_frequency(word: str) -> tuple[int, int]:
    """(frequency of `word` in jieba's dictionary, total of all frequencies)."""
    tok = _jieba()
    return tok.FREQ.get(word, 0), tok.total


def is_chinese(text: str) -> bool:
    """True when the text has Chinese characters (answers and notes then follow Chinese style)."""
    return _HAN.search(text) is not None


def _joinable(words: list[str]) -> bool:
    """Whether hyphen-joined words also count as one word ("Wi-Fi" is "WiFi", "e-mail" "email", "LF-200"
    "LF200"): two or three pieces, not all figures (a date, a phone number)."""
    return 2 <= len(words) <= 3 and not all(w.isdigit() for w in words)


def tokenize(text: str) -> list[str]:
    """Tokens of one text, in order (duplicates kept: BM25 needs term frequencies)."""
    text = unicodedata.normalize("NFKC", text)
    tokens: list[str] = []
    word_positions: list[int] = []
    chain: list[str] = []  # words joined by hyphens so far ("wi", "fi")
    chain_end = -1

    def close_chain() -> None:
        if _joinable(chain):
            word_positions.append(len(tokens))
            tokens.append("".join(chain))
        chain.clear()

    for match in _RUNS.finditer(text):
        cjk, word = match.groups()
        if not (word and chain and match.start() == chain_end + 1 and text[chain_end] == "-"):
            close_chain()
        if cjk:
            tokens.extend(p for p in _jieba().cut_for_search(cjk) if p not in CJK_STOP)
            continue
        acronym = len(word) == 2 and word.isupper()  # "IT" (support), "US": no stop words
        word = fold(word.lower())
        chain.append(word)
        chain_end = match.end()
        if acronym or word not in STOP_WORDS:
            word_positions.append(len(tokens))
            tokens.append(word)
    close_chain()
    if word_positions:
        # Stem all non-CJK words in one call (much faster than one call per word).
        stems = stem_words([tokens[i] for i in word_positions])
        for i, stem in zip(word_positions, stems, strict=True):
            tokens[i] = stem
    return tokens


def tokenize_many(texts: Iterable[str]) -> list[list[str]]:
    """Tokenise several texts."""
    return [tokenize(t) for t in texts]
