"""Verification after generation: how well each sentence is supported by the passages it cites."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from lore.answer.citations import MARKER
from lore.answer.generators.base import Passage
from lore.embed.base import Embedder, scaled_similarity
from lore.embed.cache import EmbeddingCache, embed_texts
from lore.lexical import tokenize
from lore.text.sentences import coverage, split_sentences

SUPPORTED = 0.6  # a sentence whose support is below this is flagged


@dataclass
class SentenceCheck:
    """One answer sentence, the passages it cites and how well they support it (0-1)."""

    text: str
    cited: list[int]
    support: float

    @property
    def supported(self) -> bool:
        return self.support >= SUPPORTED

    def to_json(self) -> dict[str, Any]:
        return {
            "text": self.text,
            "cited": self.cited,
            "support": round(self.support, 3),
            "supported": self.supported,
        }


def verify(
    answer: str,
    passages: Sequence[Passage],
    embedder: Embedder | None = None,
    cache: EmbeddingCache | None = None,
) -> list[SentenceCheck]:
    """Support of every sentence: lexical containment in its cited passages, lifted by embedding
    similarity when an embedder is given. Uncited sentences get support 0."""
    by_n = {p.n: p for p in passages}
    checks = []
    for sentence in _claims(answer):
        cited = [int(n) for n in MARKER.findall(sentence) if int(n) in by_n]
        plain = MARKER.sub("", sentence).strip()
        if not plain:
            continue
        tokens = tokenize(plain)
        lexical = max((coverage(tokens, by_n[n].text) for n in cited), default=0.0)
        checks.append(SentenceCheck(plain, cited, lexical))
    if embedder is not None:
        _lift_by_similarity(checks, by_n, embedder, cache)
    return checks


def _claims(answer: str) -> list[str]:
    """The answer's sentences; a Markdown table's cells each as one claim, "item column value[n]"."""
    claims: list[str] = []
    prose: list[str] = []
    header: list[str] = []
    for line in answer.splitlines():
        if not line.strip().startswith("|"):
            prose.append(line)
            header = []  # a table ended; the next one has its own header
            continue
        row = [c.strip() for c in line.strip().strip("|").split("|")]
        if not header:
            header = row
        elif not all(set(c) <= set("-: ") for c in row):  # not the |---| line
            claims += [f"{row[0]} {header[j]} {c}" for j, c in enumerate(row[1:], 1) if j < len(header)]
    return split_sentences("\n".join(prose)) + claims


def _lift_by_similarity(
    checks: list[SentenceCheck], by_n: dict[int, Passage], embedder: Embedder, cache: EmbeddingCache | None
) -> None:
    # Paraphrases (an LLM's own words) share few tokens; a high embedding similarity still counts.
    todo = [c for c in checks if c.cited and not c.supported]
    if not todo:
        return
    sents = embed_texts(embedder, [c.text for c in todo], "query", cache)
    for check, vec in zip(todo, sents, strict=True):
        texts = [by_n[n].text for n in check.cited]
        pvecs = embed_texts(embedder, texts, "passage", cache)
        sim = float(scaled_similarity(embedder, float(np.max(pvecs @ vec))))
        # From 0.4 of the embedder's band (loosely related) to 0.9 (a close paraphrase).
        check.support = max(check.support, float(np.clip((sim - 0.4) / 0.5, 0.0, 1.0)))


def answer_confidence(evidence: float, checks: Sequence[SentenceCheck]) -> float:
    """Evidence confidence scaled by the share of supported sentences (0 when nothing checks)."""
    if not checks:
        return 0.0
    supported = sum(c.supported for c in checks) / len(checks)
    mean_support = sum(c.support for c in checks) / len(checks)
    return round(evidence * (0.5 * supported + 0.5 * mean_support), 3)
