"""Questions asked in another language than the passages that answer them (an English question about
a Chinese handbook): detecting them, and the evidence features that carry across languages.

Term coverage is near zero across languages, so a cross-language question is judged on what the
multilingual embedder sees: how strong the best passage's match is and how far it stands above the
other retrieved passages (a question the KB does not cover matches every passage about equally).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from lore.answer.generators.base import Passage
from lore.embed.base import Embedder, scaled_similarity
from lore.embed.cache import EmbeddingCache, embed_texts
from lore.lexical import is_chinese, tokenize
from lore.lexical.bilingual import (
    in_other_language,
    language,
    shows_names,
    translated_coverage,
    translation_groups,
    untranslated_names,
)
from lore.schema import Hit, index_text
from lore.text.sentences import coverage

TRANSLATED_COVER = 0.5  # share of a question's translated words an other-language passage must hold
# How much closer (scaled dense similarity) the question's own-language passages may be than the other
# language's before those are no longer asked: the multilingual embedder ranks same-language text higher, but
# on enterprise_dev a Chinese question its Chinese statutes miss by wording sat 0.30+ closer to them than to
# the English handbook it then got answered from; its real cross-language questions 0.10-0.22.
OWN_LANGUAGE_MARGIN = 0.25


def question_language(question: str) -> str:
    """A question's language: Chinese when it has Chinese characters (as everywhere answers are made)."""
    return "zh" if is_chinese(question) else "en"


def is_cross_language(question: str, passages: Sequence[Passage]) -> bool:
    """Whether the retriever's top passage is in another language than the question."""
    return bool(passages) and language(passages[0].text) != question_language(question)


def other_language(question: str, passages: Sequence[Passage]) -> list[Passage]:
    """The passages in the other language than the question, in their order, when one of them holds at
    least `TRANSLATED_COVER` of the question's words translated by dictionary (年假 for "annual leave")
    and every name the dictionary cannot translate; else []. The multilingual embedder alone cannot vouch
    for them: it ranks an off-topic question's other-language passages as high as an answerable one's."""
    lang = question_language(question)
    others = [p for p in passages if in_other_language(p.text, lang)]
    return others if others and holds_question(question, others) else []


def names_unshown(question: str, passages: Sequence[Passage]) -> bool:
    """Whether the question names something no dictionary translates ("Clef" of 在Clef内推…) that none of
    the passages in its own language shows: they answer about something else, whatever they cover."""
    names = untranslated_names(question)
    lang = question_language(question)
    own = [p for p in passages if not in_other_language(p.text, lang)]
    return bool(names) and not any(shows_names(names, p.text) for p in own)


def own_language_closer(
    question: str,
    own: Sequence[Passage],
    others: Sequence[Passage],
    query_vector: np.ndarray | None,
    embedder: Embedder | None,
    cache: EmbeddingCache | None,
) -> bool:
    """Whether the question's own-language passages (of `own`) match it clearly better than the other
    language's do (`OWN_LANGUAGE_MARGIN`), and it names nothing only those show ("Clef" of 在Clef内推…):
    then its own language's documents are where it is asked about, and their failing to answer it is no
    reason to answer from the other language's ("事假请多了会不会影响年假？" from an English leave page)."""
    lang = question_language(question)
    own = [p for p in own if not in_other_language(p.text, lang)]
    names = untranslated_names(question)
    if (
        names
        and any(shows_names(names, p.text) for p in others)
        and not any(shows_names(names, p.text) for p in own)
    ):
        return False
    mine = dense_scores(query_vector, own, embedder, cache)
    theirs = dense_scores(query_vector, others, embedder, cache)
    if not mine or not theirs:
        return False
    gap = float(scaled_similarity(embedder, max(mine))) - float(scaled_similarity(embedder, max(theirs)))
    return gap > OWN_LANGUAGE_MARGIN


def holds_question(question: str, passages: Sequence[Passage]) -> bool:
    """Whether one passage holds at least `TRANSLATED_COVER` of the question's words, as they are or
    translated by dictionary, and every name no dictionary translates ("WiFi" in 公司的WiFi密码)."""
    groups, names, tokens = translation_groups(question), untranslated_names(question), tokenize(question)
    held = (
        max(translated_coverage(groups, p.text), coverage(tokens, p.text))
        for p in passages
        if shows_names(names, p.text)
    )
    return max(held, default=0.0) >= TRANSLATED_COVER


def word_translations(groups: list[list[str]]) -> list[list[str]]:
    """The translations of two characters or more: a one-character gloss (好 for "good", 做 for "make",
    课 for "lesson") is a substring of any long Chinese passage, so an everyday question found all of
    its words in a Chinese wiki (on the dev sets' English user queries, "How do I teach a good lesson?")."""
    kept = ([t for t in group if len(t) >= 2] for group in groups)
    return [group for group in kept if group]


def best_dense(
    hits: Sequence[Hit],
    query_vector: np.ndarray | None,
    embedder: Embedder | None,
    cache: EmbeddingCache | None,
) -> float | None:
    """The hits' best dense score (cosine); embedded from the cache when the store gave none (backends
    that fuse natively); None without hits or a query vector."""
    known = [h.dense_score for h in hits if h.dense_score is not None]
    if known:
        return float(max(known))
    if query_vector is None or embedder is None or not hits:
        return None
    vecs = embed_texts(embedder, [index_text(h.chunk) for h in hits], "passage", cache)
    return float(np.max(vecs @ query_vector))


def dense_scores(
    query_vector: np.ndarray | None,
    passages: Sequence[Passage],
    embedder: Embedder | None,
    cache: EmbeddingCache | None,
) -> list[float]:
    """Each passage's best dense score (`best_dense` of its hits)."""
    scores = (best_dense(p.hits, query_vector, embedder, cache) for p in passages)
    return [s for s in scores if s is not None]


def cross_features(
    question: str,
    query_vector: np.ndarray | None,
    passages: Sequence[Passage],
    embedder: Embedder | None,
    cache: EmbeddingCache | None,
) -> dict[str, float]:
    """Evidence that carries across languages: the best passage's dense margin over the mean of the other
    retrieved passages (`margin`) and over the runner-up (`margin_2`), scaled to the embedder's band, and
    the most of the question's words translated by dictionary (`word_translations`) that a top passage
    holds, its headings included (`translated`: 申请 and 年假 under 如何申请年假 for "How do I apply for
    annual leave?"); 0 for a Chinese question, whose dictionary glosses describe more than they translate
    (on the dev sets' `threshold` split it refused more Chinese questions on English passages, not fewer)."""
    groups = [] if is_chinese(question) else word_translations(translation_groups(question))
    translated = max(
        (translated_coverage(groups, f"{p.context}\n{p.text}") for p in passages[:3]), default=0.0
    )
    # Only passages the dense search itself found, when it reported any: passages that BM25 alone brought
    # (by translated words, say) would lower the others' mean and inflate the margin.
    dense_found = [p for p in passages if any(h.dense_score is not None for h in p.hits)]
    scores = sorted(dense_scores(query_vector, dense_found or passages, embedder, cache), reverse=True)
    if len(scores) < 2:
        return {"margin": 0.0, "margin_2": 0.0, "translated": translated}
    scaled = [float(scaled_similarity(embedder, s)) for s in scores]
    return {
        "margin": float(np.clip(scaled[0] - float(np.mean(scaled[1:])), -1.0, 1.0)),
        "margin_2": float(np.clip(scaled[0] - scaled[1], -1.0, 1.0)),
        "translated": translated,
    }
