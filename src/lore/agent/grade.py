"""Grading one sub-question's candidates (score thresholds offline, a validated LLM grade when
configured) and choosing the next query when they are not enough."""

from __future__ import annotations

from typing import Any

from lore.agent import prompts
from lore.agent.llm import ask_validated
from lore.agent.rewrite import keyword_query
from lore.agent.state import RunContext
from lore.answer.consistency import check_consistency
from lore.answer.context import build_passages
from lore.answer.evidence import EvidenceQuery, judge_evidence, kb_holds, unmet
from lore.answer.generators.base import Passage
from lore.embed.base import scaled_similarity
from lore.lexical import tokenize
from lore.text.sentences import KEY_WEIGHT, coverage, token_weights

RELEVANT_COVERAGE = 0.3  # share of the sub-question's terms a passage holds to count as on topic
RELEVANT_SIMILARITY = 0.4  # dense similarity on the embedder's band (0 unrelated, 1 close paraphrase)
MIN_COVERAGE = 0.3


def sub_passages(ctx: RunContext, i: int) -> list[Passage]:
    """The numbered passages one sub-question's candidates make (same rules as the fast path)."""
    a = ctx.settings.answer
    return build_passages(ctx.hits.get(i, []), max_passages=a.max_passages, budget_units=a.context_budget)


def grade(ctx: RunContext, question: str, i: int, sub_question: str, round_: int) -> dict[str, Any]:
    """Judge sub-question `i`: relevance, sufficiency and consistency (offline: figures that differ
    between documents; the LLM's judgement when configured); a trace entry."""
    r, a = ctx.retriever, ctx.settings.answer
    passages = sub_passages(ctx, i)
    tokens = tokenize(sub_question)
    vector = None
    if ctx.search.mode != "bm25":
        vector = r.embed_query(sub_question)
    query = EvidenceQuery(sub_question, tokens, vector, r.embedder, r.cache)
    evidence = judge_evidence(query, passages, a.evidence_threshold)
    ctx.evidence[i] = evidence
    relevant = [
        p.n
        for p in passages
        if coverage(tokens, p.text) >= RELEVANT_COVERAGE
        or scaled_similarity(r.embedder, p.hit.dense_score or 0.0) >= RELEVANT_SIMILARITY
    ]
    # Retries give a borderline judgement more chances to pass by luck: offline, a part also needs
    # a top passage holding a good share of its terms.
    sufficient = evidence.sufficient and evidence.coverage >= MIN_COVERAGE
    reasons = list(evidence.reasons)
    if evidence.sufficient and not sufficient:
        reasons.append(f"top passages hold {evidence.coverage:.0%} of the sub-question's terms")
    if sufficient:
        holds = kb_holds(r, ctx.search)
        unmet_by = unmet(sub_question, ctx.hits.get(i, []), passages, holds, across=evidence.cross_language)
        if unmet_by:
            sufficient = False
            reasons.extend(unmet_by)
    rules = check_consistency(sub_question, [p for p in passages if p.n in relevant])
    ctx.consistent[i], ctx.conflicts[i] = rules.consistent, rules.conflicts
    if rules.conflicts:
        reasons.append("documents disagree: " + "; ".join(rules.conflicts))
    entry: dict[str, Any] = {
        "round": round_,
        "sub_question": i,
        "source": "rules",
        "confidence": evidence.confidence,
        "relevant": relevant,
        "sufficient": sufficient,
        "consistent": rules.consistent,
        "conflicts": rules.conflicts,
        "reasons": reasons,
    }
    notes: list[str] = []
    if ctx.llm is not None and passages:
        messages = prompts.grade_messages(question, sub_question, passages)
        verdict = ask_validated(
            ctx.llm, messages, prompts.Grade, budget=ctx.budget, max_tokens=300, note=notes.append
        )
        if verdict is not None:
            valid = {p.n for p in passages}
            relevant = [n for n in verdict.relevant if n in valid]
            entry.update(
                source="llm",
                relevant=relevant,
                sufficient=verdict.sufficient and bool(relevant),
                consistent=verdict.consistent,
                reason=verdict.reason,
            )
            ctx.consistent[i] = verdict.consistent
            if verdict.consistent:  # the LLM read the passages: the figure rule's doubt is overruled
                ctx.conflicts[i] = []
                entry["conflicts"] = []
            if verdict.missing.strip():
                ctx.missing[i] = verdict.missing.strip()
            if relevant:  # keep the on-topic candidates first for the next round and for the answer
                keep = {h.chunk.chunk_id for p in passages if p.n in relevant for h in p.hits}
                hits = ctx.hits[i]
                ctx.hits[i] = [h for h in hits if h.chunk.chunk_id in keep] + [
                    h for h in hits if h.chunk.chunk_id not in keep
                ]
    if notes:
        entry["notes"] = notes
    return entry


def next_query(
    ctx: RunContext, i: int, sub_question: str, question: str, tried: list[str]
) -> tuple[str, str]:
    """(query, strategy) for the next round: the LLM grader's suggestion, else keyword-only, else
    core terms only, else the sub-question with the whole question's keywords."""
    suggestion = ctx.missing.pop(i, "")
    candidates = [(suggestion, "llm suggestion")] if suggestion else []
    candidates += [
        (keyword_query(sub_question), "keywords only"),
        (core_terms(sub_question), "core terms only"),
        (
            _unique_words(f"{keyword_query(sub_question)} {keyword_query(question)}"),
            "with the question's context",
        ),
    ]
    seen = {q.strip().lower() for q in tried}
    for query, strategy in candidates:
        if query.strip() and query.strip().lower() not in seen:
            return query.strip(), strategy
    return sub_question, "unchanged (no new variant)"


def core_terms(text: str) -> str:
    """Only the most specific terms (rare words, names, codes): modifiers and common words dropped."""
    words = keyword_query(text).split()
    weights = token_weights(tokenize(text))
    keep = [
        w
        for w in words
        if any(ch.isdigit() for ch in w)
        or max((weights.get(t, 0.0) for t in tokenize(w)), default=0) >= KEY_WEIGHT
    ]
    return " ".join(keep) or " ".join(words)


def _unique_words(text: str) -> str:
    return " ".join(dict.fromkeys(text.split()))
