"""A sentence (or row, FAQ answer) in the running for an extractive answer, and when two say one fact."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from lore.text.sentences import token_set

SAME_FACT = 0.85  # token overlap (both ways) at which two sentences say the same thing
SAME_FIGURES = 0.6  # overlap enough when both state the same two or more figures (a row and its prose)
_NUMBERS = re.compile(r"\d+(?:[.,]\d+)*")


@dataclass(eq=False)
class Candidate:
    passage: int  # passage number n
    index: int  # sentence position within the passage
    text: str  # what is scored against the question
    score: float
    out: str = ""  # what the answer says (a row's asked cell, an FAQ row's answer); `text` if empty
    also: list[int] = field(default_factory=list)  # other passages stating the same fact

    @property
    def said(self) -> str:
        return self.out or self.text

    @property
    def at(self) -> tuple[int, int]:
        """Where it stands: (passage number, position in the passage)."""
        return self.passage, self.index


def same_fact(cand: Candidate, chosen: Sequence[Candidate]) -> Candidate | None:
    """The chosen sentence saying what `cand` says (from another file, or repeated), if any."""
    mine = token_set(cand.said)
    if not mine:
        return None
    figures = _figures(cand.said)
    for other in chosen:
        if _figures(other.said) != figures:  # 500 元 vs 600 元: a disagreement, not one fact
            continue
        theirs = token_set(other.said)
        shared = len(mine & theirs)
        if theirs and shared >= SAME_FACT * len(mine) and shared >= SAME_FACT * len(theirs):
            return other
        # The same figures, one sentence inside the other ("600 元 … 400 元" with and without the
        # list of cities): one fact, the longer says it.
        if figures and theirs and shared >= SAME_FACT * min(len(mine), len(theirs)):
            return other
        # A table row and a sentence stating its figures ("Price: 2600 USD/yr", "USD 2,600 per year").
        if len(figures) > 1 and shared >= SAME_FIGURES * min(len(mine), len(theirs)):
            return other
    return None


def _figures(text: str) -> set[str]:
    """The figures a sentence states, thousands separators dropped (2,600 is 2600)."""
    return {re.sub(r",(?=\d{3}(?!\d))", "", f) for f in _NUMBERS.findall(text)}
