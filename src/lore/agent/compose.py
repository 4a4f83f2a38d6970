"""Deep mode's answer: passages from every covered sub-question, generation (per sub-question for
the extractive generator, one grounded call for an LLM), citations, verification, confidence, and
an honest list of what the knowledge base does not cover."""

from __future__ import annotations

import time
from datetime import date
from typing import Any

from lore.agent.state import DeepState, RunContext
from lore.answer.citations import MARKER, renumber
from lore.answer.consistency import disagreement_note
from lore.answer.context import build_passages
from lore.answer.evidence import Evidence
from lore.answer.generators.base import GenerationError, Passage
from lore.answer.pipeline import AskContext, Event, check, cite
from lore.answer.prompt import prompt_options
from lore.answer.rows import asked_cells, comparison_table, every_cell
from lore.lexical import is_chinese
from lore.schema import Hit

_ENDS = set("。！？；.!?;")
_JOIN = {"": "；", " ": "; "}  # between two parts when the first does not end a sentence (table rows)


def interleave(lists: list[list[Hit]], limit: int) -> list[Hit]:
    """Round-robin over several ranked lists, each chunk once: every list's best comes first."""
    out: list[Hit] = []
    seen: set[str] = set()
    for rank in range(max((len(x) for x in lists), default=0)):
        for hits in lists:
            if rank < len(hits) and hits[rank].chunk.chunk_id not in seen:
                seen.add(hits[rank].chunk.chunk_id)
                out.append(hits[rank])
    return out[:limit]


def compose_passages(ctx: RunContext, covered: list[int]) -> tuple[list[Passage], dict[int, list[Passage]]]:
    """Numbered passages for the covered sub-questions (room for two each), and which are whose."""
    a = ctx.settings.answer
    n = len(covered)
    hits = interleave([ctx.hits[i] for i in covered], limit=max(a.max_passages, 2 * n) * 4)
    passages = build_passages(
        hits, max_passages=max(a.max_passages, 2 * n), budget_units=a.context_budget * min(n, 2)
    )
    by_sub = {}
    for i in covered:
        parents = {h.chunk.parent_id for h in ctx.hits[i]}
        by_sub[i] = [p for p in passages if any(h.chunk.parent_id in parents for h in p.hits)]
    return passages, by_sub


def generate(ctx: RunContext, state: DeepState, covered: list[int]) -> tuple[str, list[Passage]]:
    """Stream the answer as `token` events; returns its text and the passages it cites."""
    started = time.perf_counter()
    question = state["standalone"]
    subs = state["sub_questions"]
    passages, by_sub = compose_passages(ctx, covered)
    text = ""
    table = _comparison(ctx, state, covered, by_sub) if ctx.generator.name == "extractive" else None
    if table:  # known whole before it is sent: numbered 1..k in reading order
        text, passages = renumber(table, passages)
        ctx.emit(Event("token", {"text": text}))
    elif ctx.generator.name == "extractive":
        # Each part answered from its own passages, so one part's sentences never crowd out another's.
        seen: set[str] = set()
        sep = "" if is_chinese(question) else " "
        for i in covered:
            first = True
            for delta in ctx.generator.stream(subs[i], by_sub[i]):
                key = MARKER.sub("", delta).strip()
                if not key or key in seen:
                    continue
                seen.add(key)
                piece = delta.lstrip() if first else delta
                if first and text:
                    ended = MARKER.sub("", text).rstrip()[-1:] in _ENDS
                    piece = (sep if ended else _JOIN[sep]) + piece
                first = False
                text += piece
                ctx.emit(Event("token", {"text": piece}))
    else:
        parts = "\n".join(f"{k}. {subs[i]}" for k, i in enumerate(covered, start=1))
        prompt = question if len(covered) == 1 else f"{question}\n\nAnswer each part:\n{parts}"
        dated = prompt_options(ctx.generator, ctx.settings.answer.today or date.today())
        for delta in ctx.generator.stream(prompt, passages, **dated):
            text += delta
            ctx.emit(Event("token", {"text": delta}))
    ctx.timed("generate", started)
    if not text.strip():
        raise GenerationError(f"{ctx.generator.name}: empty answer")
    return text.strip(), passages


def _comparison(
    ctx: RunContext, state: DeepState, covered: list[int], by_sub: dict[int, list[Passage]]
) -> str:
    """A comparison whose every part is answered by a table row: a Markdown table of the compared
    attributes, a citation per cell ("" otherwise)."""
    if state["kind"] != "comparison" or len(covered) < 2:
        return ""
    rows = []
    for i in covered:
        sub = state["sub_questions"][i]
        row = _asked_row(ctx, sub, by_sub[i])
        if row is None:
            return ""
        rows.append(row)
    return comparison_table(rows, is_chinese(state["question"]))


def _asked_row(
    ctx: RunContext, sub: str, passages: list[Passage]
) -> tuple[str, list[tuple[str, str]], int] | None:
    """(item, [(attribute, value)], passage number) from the best table row for one part: the chosen
    sentence's passage if it is a row with the asked column, else the first row (chosen sentences'
    passages first, then retrieval order) that names the part's item, with the asked column (every
    column when the part asks none: "Compare LF-200 and LF-500")."""
    picked = ctx.generator.select(sub, passages) if hasattr(ctx.generator, "select") else []
    if not picked:
        return None
    by_n = {p.n: p for p in passages}
    order = dict.fromkeys([c.passage for c in picked] + [p.n for p in passages])
    for k, n in enumerate(order):
        if n not in by_n:
            continue
        asked = asked_cells(by_n[n].text, sub)
        # A row that does not name the part's item answers only by a column the part asks about.
        if asked is None and (whole := every_cell(by_n[n].text, sub)) and whole[0] is not None:
            asked = whole
        if asked and asked[1] and (k == 0 or asked[0] is not None):
            return asked[0] or sub.rstrip("？?"), asked[1], n
    return None


def not_covered_note(question: str, missing: list[str]) -> str:
    """What the knowledge base does not say, in the question's language."""
    if is_chinese(question):
        return "知识库中没有找到以下内容：" + "；".join(f"「{m.rstrip('？?')}」" for m in missing) + "。"
    return "The knowledge base does not cover: " + "; ".join(m.rstrip("?") for m in missing) + "."


def finish(
    ctx: RunContext, state: DeepState, answer: str, passages: list[Passage], covered: list[int]
) -> dict[str, Any]:
    """Cite, verify and score the answer; the `end` payload (fast-path keys plus deep-mode ones)."""
    started = time.perf_counter()
    subs, question = state["sub_questions"], state["question"]
    a = ctx.settings.answer
    ask = AskContext(question, ctx.search, trace_id=ctx.trace_id, route="deep")
    ask.passages = passages
    ask.evidence = _overall_evidence(ctx, len(subs), covered)
    ask.answer = answer
    cite(ask)  # the same citing, verification and refusal as the fast path
    check(ask, ctx.retriever.embedder, ctx.retriever.cache, a.support_contact)
    missing = [subs[i] for i in range(len(subs)) if i not in covered]
    if ask.refused:
        missing = list(subs)
    else:
        sep = "" if is_chinese(question) else " "
        disagree = [(subs[i], ctx.conflicts.get(i, [])) for i in covered if ctx.consistent.get(i) is False]
        notes = [not_covered_note(question, missing)] if missing else []
        notes += [disagreement_note(question, disagree)] if disagree else []
        for note in notes:
            ask.answer = f"{ask.answer}{sep}{note}"
            ctx.emit(Event("token", {"text": sep + note}))
    ctx.timed("verify", started)
    ask.timings_ms = dict(ctx.timings_ms)
    result = ask.result(a)
    result["plan"].update(kind=state["kind"], source=state["plan_source"], sub_questions=list(subs))
    result.update(
        mode="deep",
        rounds=state["round"],
        kind=state["kind"],
        verdict=state["verdict"],
        sub_questions=[_sub_json(ctx, i, q, state) for i, q in enumerate(subs)],
        not_covered=missing,
        standalone_question=state["standalone"],
        context=[p.hit.chunk.chunk_id for p in passages],  # what the generator was given, in order
        candidates=[
            {"chunk_id": h.chunk.chunk_id, "document_id": h.chunk.document_id, "score": h.score}
            for h in interleave([ctx.hits.get(i, []) for i in range(len(subs))], ctx.search.top_k)
        ],
        budget={
            "tokens_used": ctx.budget.tokens_used,
            "token_budget": ctx.budget.max_tokens,
            "elapsed_s": round(ctx.budget.elapsed_s(), 3),
            "time_budget_s": ctx.budget.time_s,
        },
    )
    return result


def _sub_json(ctx: RunContext, i: int, question: str, state: DeepState) -> dict[str, Any]:
    ev = ctx.evidence.get(i)
    return {
        "question": question,
        "query": state["queries"][i] if i < len(state["queries"]) else question,
        "sufficient": bool(state["sufficient"][i]) if i < len(state["sufficient"]) else False,
        "confidence": ev.confidence if ev else 0.0,
        "consistent": ctx.consistent.get(i),
        "conflicts": ctx.conflicts.get(i, []),
        "hits": [h.chunk.chunk_id for h in ctx.hits.get(i, [])[:5]],
    }


def _overall_evidence(ctx: RunContext, n: int, covered: list[int]) -> Evidence:
    """Per-sub-question evidence combined: confidence is the mean over all parts (a missing part costs)."""
    evs = [ctx.evidence[i] for i in range(n) if i in ctx.evidence]
    if not evs:
        return Evidence(0.0, False, 0.0, 0.0, 0.0, 0.0, 0, reasons=["nothing retrieved"])

    def mean(name: str) -> float:
        total: float = sum(getattr(e, name) for e in evs)
        return round(total / n, 3)

    reasons = [f"part {i + 1}: {r}" for i in range(n) if i in ctx.evidence for r in ctx.evidence[i].reasons]
    return Evidence(
        mean("confidence"),
        bool(covered),
        mean("coverage"),
        mean("key_coverage"),
        mean("similarity"),
        mean("agreement"),
        sum(e.supporting for e in evs),
        evs[0].threshold,
        reasons=reasons,
    )
