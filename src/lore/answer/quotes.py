"""The cited sentence of a source with a little context around it, for the sources list: what the answer
took from the passage, not the passage's start."""

from __future__ import annotations

import re
from dataclasses import dataclass

from lore.answer.readable import clean_markup, plain
from lore.lexical import tokenize
from lore.text.sentences import coverage, split_sentences

QUOTE_CONTEXT = 80  # characters of the passage shown on each side of the cited sentence, at most
_MARKER = re.compile(r"\s?\[(\d{1,3})\]")
_SPACE = re.compile(r"\s+")
_END = "。！？；;.!?:：，,"
_LATIN = re.compile(r"[A-Za-z0-9]")


@dataclass
class Quote:
    """`text` shows the cited sentence at text[start:end], with up to QUOTE_CONTEXT characters either side
    ("…" where the passage goes on)."""

    text: str
    start: int
    end: int


def cited_lines(answer: str) -> dict[int, list[str]]:
    """The answer's sentences citing each passage number, as the source wrote them (markers removed)."""
    out: dict[int, list[str]] = {}
    for line in answer.splitlines():
        for sentence in split_sentences(line):
            numbers = [int(m.group(1)) for m in _MARKER.finditer(sentence)]
            said = plain(_MARKER.sub("", sentence)).strip()
            for n in dict.fromkeys(numbers):
                out.setdefault(n, []).append(said)
    return out


def quote_for(sentences: list[str], passage: str, context: int = QUOTE_CONTEXT) -> Quote | None:
    """The first of `sentences` found in `passage` (else the passage sentence sharing most of its words),
    with up to `context` characters of the passage around it; None if nothing of it is there."""
    source = clean_markup(passage)
    squeezed, where = _squeeze(source)
    for sentence in sentences:
        span = _find(sentence, squeezed, where)
        if span is None:
            best = _closest(sentence, source)
            span = _find(best, squeezed, where) if best else None
        if span is not None:
            return _window(source, *span, context)
    return None


def _squeeze(text: str) -> tuple[str, list[int]]:
    """`text` without whitespace, and where each kept character stands in `text`."""
    keep = [(ch, i) for i, ch in enumerate(text) if not ch.isspace()]
    return "".join(ch for ch, _ in keep), [i for _, i in keep]


def _find(sentence: str, squeezed: str, where: list[int]) -> tuple[int, int] | None:
    """(start, end) in the unsqueezed text of `sentence` (its closing punctuation aside), whitespace aside."""
    core, _ = _squeeze(sentence.rstrip(_END + " "))
    if not core:
        return None
    at = squeezed.find(core)
    if at < 0:
        return None
    end = at + len(core)
    while end < len(squeezed) and squeezed[end] in _END:  # the sentence's own full stop
        end += 1
    return where[at], where[end - 1] + 1


def _closest(sentence: str, source: str) -> str | None:
    """The source sentence holding most of `sentence`'s words (a table cell said as "column: value")."""
    tokens = tokenize(sentence)
    if not tokens:
        return None
    best = max(split_sentences(source), key=lambda s: coverage(tokens, s), default=None)
    return best if best is not None and coverage(tokens, best) > 0 else None


def _window(source: str, start: int, end: int, context: int) -> Quote:
    """The sentence at source[start:end] with context, cut at a word gap, whitespace runs as one space."""
    left, right = max(0, start - context), min(len(source), end + context)
    if left > 0 and _LATIN.match(source[left - 1]) and _LATIN.match(source[left]):
        gap = source.find(" ", left, start)
        left = gap + 1 if gap >= 0 else start
    if right < len(source) and _LATIN.match(source[right - 1]) and _LATIN.match(source[right]):
        gap = source.rfind(" ", end, right)
        right = gap if gap >= 0 else end
    before = _SPACE.sub(" ", source[left:start]).lstrip()
    said = _SPACE.sub(" ", source[start:end])
    after = _SPACE.sub(" ", source[end:right]).rstrip()
    before = ("…" if left > 0 and before else "") + before
    after = after + ("…" if right < len(source) and after else "")
    return Quote(before + said + after, len(before), len(before) + len(said))
