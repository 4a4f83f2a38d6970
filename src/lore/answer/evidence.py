"""Evidence judgement before generation: the probability that the passages answer the question.

Signals: the best passages' coverage of the question's terms weighted by rarity, whether its key terms
occur at all, the best dense similarity (scaled to the embedder's declared band), agreement between the
dense and BM25 rankings, how many passages support it, and a reranker's calibrated score when the hits
carry one. A logistic model fit on development data (`evidence_model.json`, written by
`benchmarks/fit_evidence.py`) turns them into P(answerable); below the threshold -> refuse. A question
in another language than its top passage is judged by the `cross` model, on features that carry across
languages (`lore.answer.crosslang`).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np

from lore.answer.crosslang import (
    best_dense,
    cross_features,
    holds_question,
    is_cross_language,
    other_language,
)
from lore.answer.generators.base import Passage
from lore.answer.qtypes import asks_how_to, narrates
from lore.embed.base import Embedder, scaled_similarity
from lore.embed.cache import EmbeddingCache
from lore.lexical import is_chinese, tokenize
from lore.lexical.bilingual import english_translations, translate_terms, untranslated_names
from lore.lexical.tokenize import word_frequency
from lore.retrieve.search import Retrieval, SearchOptions
from lore.schema import Hit, index_text
from lore.store.fusion import RRF_K
from lore.text.sentences import (
    coverage,
    key_coverage,
    key_terms,
    split_sentences,
    token_set,
    token_weights,
)

MODEL_PATH = Path(__file__).with_name("evidence_model.json")
SUPPORT_COVERAGE = 0.5
# Share of a question's distinct words the KB must hold somewhere (English questions on the English dev KB,
# `fit` and `threshold` splits: 1 answerable question of 373 refused for 4 off-topic ones of 9 answered).
KNOWN_SHARE = 0.6
MAX_WORD_PROBES = 32  # BM25 searches one question's word check makes (`kb_holds`)
MAX_TRANSLATIONS = 6  # of a word judged across languages, looked up at most (one BM25 search each)
_PUNCTUATION = "\"'()[]{}<>,.;:!?"


@dataclass
class Evidence:
    """The judgement (`confidence` = P(the KB answers the question)) and the signals behind it."""

    confidence: float
    sufficient: bool
    coverage: float
    key_coverage: float
    similarity: float
    agreement: float
    supporting: int
    threshold: float = 0.0
    rerank: float | None = None
    reasons: list[str] = field(default_factory=list)
    cross_language: bool = False  # judged by the `cross` model: the passages are in another language

    def to_json(self) -> dict[str, Any]:
        return {k: (round(v, 3) if isinstance(v, float) else v) for k, v in self.__dict__.items()}


@dataclass(frozen=True)
class EvidenceModel:
    """Logistic models over named features: `base`, `rerank` for hits that carry a rerank score, and
    `cross` for a question in another language than its passages."""

    models: Mapping[str, Mapping[str, float]]  # name -> {feature: weight, "bias": b}
    threshold: float  # default refusal threshold on P, chosen on a held-out split of the dev data
    # A question language's own default where the dev data asked for a higher one ("zh": employees'
    # paraphrases pull the Chinese weights towards the semantic match, which off-topic questions share more).
    thresholds: Mapping[str, float] = field(default_factory=dict)

    def threshold_for(self, question: str) -> float:
        """The default refusal threshold for a question, by its language."""
        return self.language_threshold(question_language(question))

    def language_threshold(self, language: str) -> float:
        """The default refusal threshold for questions in `language` ("zh" or "en")."""
        return self.thresholds.get(language, self.threshold)

    def probability(self, features: Mapping[str, float]) -> float:
        """P(answerable) from the `cross` model for a cross-language question, else from the `rerank`
        model when features hold a rerank score, else from `base` (each only when it exists)."""
        name = "rerank" if "rerank" in features and "rerank" in self.models else "base"
        if features.get("cross") and "cross" in self.models:
            name = "cross"
        weights = self.models[name]
        z = weights.get("bias", 0.0) + sum(
            w * features.get(f, 0.0) for f, w in weights.items() if f != "bias"
        )
        return 1.0 / (1.0 + math.exp(-max(-30.0, min(30.0, z))))

    @classmethod
    def load(cls, path: Path = MODEL_PATH) -> EvidenceModel:
        data = json.loads(path.read_text(encoding="utf-8"))
        thresholds = {k: float(v) for k, v in data.get("thresholds", {}).items()}
        return cls(data["models"], float(data["threshold"]), thresholds)


def question_language(question: str) -> str:
    """ "zh" for a Chinese question, else "en": the language a refusal threshold is chosen by."""
    return "zh" if is_chinese(question) else "en"


@cache
def default_model() -> EvidenceModel:
    """The shipped model."""
    return EvidenceModel.load()


@dataclass(frozen=True, slots=True)
class EvidenceQuery:
    """The question the evidence is judged for: its text and tokens, and its vector with the embedder
    (and cache) that made it, which also embeds passages whose hits carry no dense score."""

    text: str
    tokens: list[str]
    vector: np.ndarray | None = None
    embedder: Embedder | None = None
    cache: EmbeddingCache | None = None


def evidence_features(
    query: EvidenceQuery, passages: Sequence[Passage], rerank: bool = True
) -> dict[str, float]:
    """The model's inputs (also what `benchmarks/fit_evidence.py` records); `rerank=False` leaves the
    reranker's scores out (they were given for another question than `query`)."""
    reranked = [h.rerank_score for p in passages[:3] for h in p.hits if h.rerank_score is not None]
    # The first-stage signals are read in first-stage order, as they were fit; the reranker's own
    # judgement enters only as its calibrated score.
    passages = first_stage_order(passages) if reranked else passages
    reranked = reranked if rerank else []
    top = passages[:3]
    covs = [_coverage(query.tokens, p.text) for p in passages]
    cov = max(covs[:3])
    key = max(_coverage(query.tokens, p.text, keys=True) for p in top)
    sim = float(np.clip(scaled_similarity(query.embedder, _similarity(query, top)), -1, 2))
    zh = 1.0 if is_chinese(query.text) else 0.0
    features = {
        "coverage": cov,
        "key_coverage": key,
        "similarity": sim,
        "agreement": _agreement(passages),
        "supporting": min(sum(c >= SUPPORT_COVERAGE for c in covs), 3) / 3,
        "no_key_terms": 0.0 if key_terms(query.tokens) else 1.0,
        "zh": zh,
        "zh_coverage": zh * cov,
        "zh_similarity": zh * sim,
        "coverage_x_similarity": cov * sim,
    }
    if is_cross_language(query.text, passages):  # only the `cross` model reads its margins
        features.update(
            cross=1.0, **cross_features(query.text, query.vector, passages, query.embedder, query.cache)
        )
    else:
        features["cross"] = 0.0
    if reranked:
        features["rerank"] = float(max(reranked))
    return features


def _coverage(tokens: list[str], text: str, keys: bool = False) -> float:
    """`coverage` (or `key_coverage`) of the question's tokens in `text`, read past jieba's segmentation:
    a Chinese word counts when the text holds it at all ("事假" in "请事假"), and so does a word jieba made
    up (not in its dictionary) whose every character the text holds ("假里" of "年假里", "金要" of
    "失业金要"): not a rare term the passage misses (an employee's wording; enterprise_dev)."""
    if not any(is_chinese(t[:1]) for t in tokens):
        return key_coverage(tokens, text) if keys else coverage(tokens, text)
    present = token_set(text)

    def found(t: str) -> bool:
        if t in present or len(t) < 2 or not is_chinese(t[:1]):
            return t in present
        return t in text or (word_frequency(t)[0] == 0 and all(ch in text for ch in t))

    held = {t for t in tokens if found(t)}
    if keys:
        wanted = key_terms(tokens)
        return len(wanted & held) / len(wanted) if wanted else 1.0
    weights = token_weights(tokens)
    total = sum(weights.values())
    return sum(w for t, w in weights.items() if t in held) / total if total else 0.0


def judge_evidence(
    query: EvidenceQuery,
    passages: Sequence[Passage],
    threshold: float | None = None,
    model: EvidenceModel | None = None,
    rerank: bool = True,
) -> Evidence:
    """Score the evidence; `sufficient` when P(answerable) >= threshold (if None, the model's default for
    the question's language)."""
    model = model or default_model()
    threshold = model.threshold_for(query.text) if threshold is None else threshold
    if not passages:
        return Evidence(0.0, False, 0.0, 0.0, 0.0, 0.0, 0, threshold, None, ["no passages retrieved"])
    f = evidence_features(query, passages, rerank)
    p = round(model.probability(f), 4)
    reasons = []
    held = p < threshold or _held_across(query.text, passages, f)
    if not held:
        reasons.append("no passage holds half of the question's words, as they are or translated")
    if p < threshold:
        reasons.append(f"P(answerable) {p:.2f} is below the threshold {threshold:.2f}")
        if f["cross"]:
            reasons.append("the passages are in another language: judged on the semantic match alone")
        elif f["key_coverage"] < 0.5:
            reasons.append(f"the question's key terms are {f['key_coverage']:.0%} covered")
        if f["coverage"] < 0.3:
            reasons.append(f"passages cover {f['coverage']:.0%} of the question's terms")
        if f["similarity"] < 0.3:
            reasons.append("the best semantic match is weak")
    supporting = round(f["supporting"] * 3)
    return Evidence(
        p,
        p >= threshold and held,
        f["coverage"],
        f["key_coverage"],
        f["similarity"],
        f["agreement"],
        supporting,
        threshold,
        f.get("rerank"),
        reasons,
        bool(f["cross"]) and "cross" in model.models,
    )


def _held_across(question: str, passages: Sequence[Passage], features: Mapping[str, float]) -> bool:
    """False for an English question judged across languages when no passage holds half of its words, as
    they are or translated (`crosslang.holds_question`): the embedder alone does not vouch for Chinese
    passages. Chinese questions are not held to it: the dictionary's English glosses describe more than they
    translate ("beyoncé, american pop singer"); on the dev sets' `fit` and `threshold` splits it refused 10 of
    their 18 answered questions on English passages for 5 of 6 off-topic ones."""
    return not features.get("cross") or is_chinese(question) or holds_question(question, passages)


def other_language_passages(
    question: str,
    retriever: Retrieval,
    options: SearchOptions,
    vector: np.ndarray | None,
    make_passages: Callable[[list[Hit]], list[Passage]],
) -> list[Passage]:
    """In a KB of two languages, the other language's passages for a question its own language's passages
    do not answer: searched densely by the question and by BM25 on its words translated by dictionary,
    kept when one of them holds the question (`crosslang.other_language`); else []."""
    translated = translate_terms(question)
    if not translated:
        return []
    hits = retriever.search(translated, replace(options, translate=False), vector=vector)
    return other_language(question, make_passages(hits))


def kb_holds(
    retriever: Retrieval, options: SearchOptions, max_probes: int = MAX_WORD_PROBES
) -> Callable[[str], bool]:
    """`holds(word)`: whether the KB, as `options` scope it (the asker's tenant, roles, version), holds
    the word anywhere (one BM25 hit). After `max_probes` searches every word counts as held: a question
    of 248 unknown codes costs 32 searches, and is never refused for words it was not searched for."""
    probe = replace(options, mode="bm25", top_k=1, rerank=False, translate=False)
    left = [max_probes]

    def holds(word: str) -> bool:
        if left[0] <= 0:
            return True
        left[0] -= 1
        return bool(retriever.search(word, probe))

    return holds


def unknown_words(
    question: str, hits: Sequence[Hit], known: Callable[[str], bool], across: bool = False
) -> list[str]:
    """The words of an English question that no retrieved hit holds and that, asked one by one (`known`),
    the KB the asker may read holds nowhere, when they are more than `1 - KNOWN_SHARE` of its distinct
    words ("choose", "float" of "How do I choose a fishing float?"); else []. `across` (judged on passages
    in the other language): the words the dictionary translates, each known by one of its translations
    ("money": 钱, 金, 货币), and the names it cannot. Chinese questions are not checked: jieba splits
    names its own way (芸香叶有, 赛斯 of 赛斯纳), and as substrings every everyday character is known
    (画 of 怎么画葡萄)."""
    if is_chinese(question):
        return []
    if across:
        units = english_translations(question) + [(n, [n]) for n in untranslated_names(question)]
        unknown = [w for w, terms in units if not any(known(t) for t in terms[:MAX_TRANSLATIONS])]
        return unknown if len(units) - len(unknown) < KNOWN_SHARE * len(units) else []
    tokens = list(dict.fromkeys(tokenize(question)))
    if not tokens:
        return []
    # The word as asked is what is searched: stemming a stem again can change it ("earli" -> "ear").
    asked = {t: w.strip(_PUNCTUATION) for w in question.split() for t in tokenize(w)}
    seen = frozenset().union(*(token_set(index_text(h.chunk)) for h in hits))
    missing = [t for t in tokens if t not in seen]
    if len(tokens) - len(missing) >= KNOWN_SHARE * len(tokens):
        return []
    unknown = [t for t in missing if not known(asked.get(t, t))]
    if len(tokens) - len(unknown) >= KNOWN_SHARE * len(tokens):
        return []
    return list(dict.fromkeys(asked.get(t, t) for t in unknown))


def how_to_unmet(question: str, passages: Sequence[Passage]) -> str | None:
    """Why a how-to question goes unanswered when every sentence of the top passages that shares a word
    with it tells what someone did ("How do I send a letter?": "Before he left, he sent a letter"); else
    None."""
    if not asks_how_to(question):
        return None
    asked = token_set(question)
    matching = [s for p in passages[:3] for s in split_sentences(p.text) if asked & token_set(s)]
    if matching and all(narrates(s) for s in matching):
        return "the question asks how to do something; the passages that match it tell what was done"
    return None


def unmet(
    question: str,
    hits: Sequence[Hit],
    passages: Sequence[Passage],
    known: Callable[[str], bool],
    across: bool = False,
) -> list[str]:
    """Why a question the evidence model accepts is still refused: words the KB holds nowhere
    (`unknown_words`), or a how-to question met only by narration (`how_to_unmet`); [] when neither."""
    unknown = unknown_words(question, hits, known, across=across)
    if unknown:
        return [f"the knowledge base holds these words of the question nowhere: {', '.join(unknown)}"]
    reason = how_to_unmet(question, passages)
    return [reason] if reason else []


def _similarity(query: EvidenceQuery, passages: Sequence[Passage]) -> float:
    hits = [h for p in passages for h in p.hits]
    return best_dense(hits, query.vector, query.embedder, query.cache) or 0.0


def first_stage_order(passages: Sequence[Passage]) -> list[Passage]:
    """The passages by their best hit's reciprocal-rank fusion of its dense and BM25 ranks (the first
    stage's order, which a reranker changed); passages without ranks keep their order after them."""
    return sorted(passages, key=lambda p: -max(_fused(h) for h in p.hits))


def _fused(h: Hit) -> float:
    return sum(1.0 / (RRF_K + r) for r in (h.dense_rank, h.bm25_rank) if r is not None)


def _agreement(passages: Sequence[Passage]) -> float:
    """1 when the top passage ranks in the top 3 of both dense and BM25, 0.5 for one of them."""
    h = passages[0].hit
    if h.rerank_score is not None:  # the passage's best chunk in the first stage, as without a reranker
        h = max(passages[0].hits, key=_fused)
    both = [r for r in (h.dense_rank, h.bm25_rank) if r is not None and r <= 3]
    return len(both) / 2
