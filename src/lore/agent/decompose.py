"""Rule-based question decomposition (no LLM): comparisons, enumerations and multi-part questions,
in Chinese and English, into a validated `Plan` of sub-questions."""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from lore.lexical import is_chinese
from lore.lexical.tokenize import _jieba

PlanKind = Literal["simple", "multi-hop", "comparison"]
MAX_SUB_QUESTIONS = 8


class Plan(BaseModel):
    """What a question needs: its kind and the sub-questions to retrieve for, in order."""

    model_config = ConfigDict(extra="forbid")

    kind: PlanKind
    sub_questions: list[str] = Field(min_length=1, max_length=MAX_SUB_QUESTIONS)
    reasoning: str = ""

    @field_validator("sub_questions")
    @classmethod
    def _clean(cls, value: list[str]) -> list[str]:
        seen: list[str] = []
        for q in value:
            q = q.strip()
            if not q:
                raise ValueError("a sub-question is empty")
            if len(q) > 500:
                raise ValueError(f"a sub-question is {len(q)} characters long (limit 500)")
            if q not in seen:
                seen.append(q)
        return seen


# --- Chinese -----------------------------------------------------------------------------------

_ZH_QWORD = re.compile(
    r"什么|多少|几|哪|谁|怎么|如何|吗|是否|为什么|为何|何时|多久|多长|多大|多高"
    r"|是不是|有没有|能否|可否|怎样|何种|何处|何地|何人|几时"
)
_ZH_CONJ = {"和", "与", "及", "跟", "以及", "、", "或", "还是"}
_ZH_COMPARE_CUE = re.compile(r"区别|差别|差异|不同|异同|相比|哪个更|冲突|矛盾|一致")
_SEP = "\x00"  # stands for a conjunction that jieba cut as a word of its own
_ZH_COMPARE_HEAD = re.compile(r"^(?:请|请你|帮我|麻烦)?(?:对比|比较|对照|区分)(?:一下)?")
_ZH_COMPARE_TAIL = re.compile(
    r"(?:之间)?(?:的|有)?(?:什么|哪些|何|啥)?(?:区别|差别|差异|不同|异同|优劣|对比)"
    r"(?:是什么|有哪些|在哪里|在哪儿|吗)?"
    r"|(?:相比|比较|对比)?(?:哪个|哪一个|谁)(?:更)?.*$|分别是?|各自|各是"
    r"|(?:之间)?(?:是否|有没有|有无)?(?:存在)?(?:冲突|矛盾|一致|相同)(?:吗)?"
)
_ZH_POST = (
    r"(?:的|在|分别|各自|各|有没有|有何|有什么|有哪些|有无|是否|是什么|是多少|是谁|是哪|哪|谁|相比|之间"
    r"|存在|，|,|$)"
)
_ZH_CLAUSE = re.compile(
    r"[？?；;]+|[，,]\s*(?:另外|还有|以及|并且|同时|而且|那么|那)?"
    r"|(?:另外|还有|以及|并且|同时)"
)


def _cut_marked(text: str) -> str:
    """The text with every stand-alone conjunction word replaced by `_SEP` (jieba decides words,
    so the 和 of 和平 or the 与 of 参与 are left alone)."""
    return "".join(_SEP if w in _ZH_CONJ else w for w in _jieba().lcut(text))


def _zh_plan(q: str) -> Plan | None:
    body = q.strip().rstrip("？?。！!")
    compare = bool(_ZH_COMPARE_HEAD.match(body) or _ZH_COMPARE_CUE.search(body))
    if not compare:
        asked = [p for p in re.split(r"[？?]+", body) if p.strip(" ，,；;")]
        parts = asked if len(asked) >= 2 else _zh_clauses(body)
        if len(parts) >= 2:
            return _plan(
                "multi-hop",
                [_zh_finish(p) for p in parts],
                "several questions in one (split at question marks and conjunctions)",
            )
    stripped = _ZH_COMPARE_HEAD.sub("", body)
    found = _zh_items(_cut_marked(stripped))
    if found is None and compare:
        # jieba glues a conjunction to unknown names ("显微镜学与命运派对" -> 学与): with an explicit
        # comparison cue, split at the conjunction characters themselves.
        found = _zh_items(re.sub(r"[和与跟及、]|以及", _SEP, stripped))
    if found is None:
        return None
    pre, items, post_raw = found
    if not compare and (not post_raw.startswith(("的", "分别", "各")) or max(map(len, items)) > 15):
        return None  # "需要发票和审批单吗" lists what one answer holds: not separate questions
    post = _ZH_COMPARE_TAIL.sub("", post_raw.replace(_SEP, "和")).strip(" ，,的")
    subs = [
        _zh_finish(f"{pre}{item}" + (f"的{post}" if post and not post.startswith(("在", "是")) else post))
        for item in items
    ]
    kind: PlanKind = "comparison" if compare else "multi-hop"
    why = "comparison of " if compare else "enumeration of "
    return _plan(kind, subs, why + ", ".join(items))


def _zh_clauses(body: str) -> list[str]:
    """Clauses that each ask something; a clause without a question word ("钟惺亡故后") is context
    and stays with the clause after it."""
    pieces, last = [], 0
    for m in _ZH_CLAUSE.finditer(body):
        pieces.append(body[last : m.start()])
        last = m.end()
    pieces.append(body[last:])
    clauses: list[str] = []
    carry = ""
    for piece in (p.strip() for p in pieces):
        if not piece:
            continue
        if _ZH_QWORD.search(piece):
            clauses.append(carry + piece)
            carry = ""
        else:
            carry += piece + "，"
    if carry and clauses:
        clauses[-1] += "，" + carry.rstrip("，")
    return clauses


def _zh_items(marked: str) -> tuple[str, list[str], str] | None:
    """(text before, the joined items, text after) of "…A和B的X…" with conjunctions as `_SEP`."""
    item = rf"[^{_SEP}的]+"
    m = re.match(rf"^(?P<pre>[^{_SEP}]*?)(?P<items>{item}(?:{_SEP}{item}?)+?)(?P<post>{_ZH_POST}.*)$", marked)
    if not m:
        return None
    items = [i.strip(" ，,") for i in m.group("items").split(_SEP) if i.strip(" ，,")]
    return (m.group("pre"), items, m.group("post")) if len(items) >= 2 else None


def _zh_finish(part: str) -> str:
    part = re.sub(r"^(?:另外|还有|以及|并且|同时|而且|那么|那)", "", part.strip(" ，,；;"))
    return part + "？" if _ZH_QWORD.search(part) else part


# --- English -----------------------------------------------------------------------------------

_EN_QWORD = r"(?:what|who|whom|whose|which|when|where|why|how)"
_EN_AUX = r"(?:is|are|was|were|does|do|did|can|could|should|will|would|has|have)"
# An auxiliary opens a new question only when a subject follows it ("and is the VPN required"); "and is
# associated with" continues the same clause.
_EN_SUBJECT = (
    r"(?:(?i:the|a|an|this|that|these|those|it|there|they|he|she|we|i|you|my|our|your|their|its"
    r"|his|her|any|some|all|each|every)\b|[A-Z0-9])"
)
_EN_CLAUSE = re.compile(rf",?\s+(?i:and|also)\s+(?=(?i:{_EN_QWORD})\b|(?i:{_EN_AUX})\s+{_EN_SUBJECT})")
# Sentence ends: a question mark, a semicolon, or a full stop before a word that adds a question ("…. Also,
# …").
_EN_ADD = r"(?:also|and|additionally|moreover|furthermore|besides|plus|in addition)"
_EN_SENTENCE = re.compile(rf"\?\s+|;\s*|(?<=[.!])\s+(?={_EN_ADD}\b)", re.IGNORECASE)
_EN_LEAD = re.compile(rf"^{_EN_ADD}\b,?\s*", re.IGNORECASE)
# "…that A, and that B", "…about whether A and about whether B": the word(s) after "and" repeat an earlier
# opening, so each part is the text before that opening + its own clause.
_EN_REPEAT = re.compile(
    r",?\s+and\s+(?:also\s+)?(?P<m>(?:about|of|for|on|regarding|concerning)\s+(?:whether|if|how|what|why)\b"
    r"|(?:that|whether|about|regarding|concerning)\b)",
    re.IGNORECASE,
)
_EN_ATTR = r"(?:\s+(?:in terms of|regarding|for|in|on)\s+(?P<attr2>.+))?$"
_EN_COMPARE = [
    re.compile(p, re.IGNORECASE)
    for p in (
        r"^(?:please\s+)?compare\s+(?P<attr>.+?\s+(?:of|for|in|between)\s+)?(?P<items>.+?)" + _EN_ATTR,
        r"^(?:what(?:'s| is| "
        r"are)|how)\s+(?:is\s+|are\s+)?(?:the\s+)?(?:main\s+|key\s+)?differences?\s+between\s+"
        r"(?P<items>.+?)" + _EN_ATTR,
        r"^how\s+(?:does|do|is|are)\s+(?P<a>.+?)\s+(?:differ from|compare (?:to|with)|different from)\s+"
        r"(?P<b>.+?)" + _EN_ATTR,
        r"^(?P<items>.+?\s+(?:vs\.?|versus)\s+.+?)(?:(?:\s*[:,]\s*|\s+-\s+)(?P<attr2>.+))?$",
    )
]
_EN_SPLIT_ITEMS = re.compile(r"\s*,\s*(?:and\s+|or\s+)?|\s+(?:and|or|vs\.?|versus|with)\s+", re.IGNORECASE)
_EN_EACH = re.compile(
    r"^(?P<head>(?:what|who|which|when|where|how\s+\w+)\s+(?:is|are|was|were|do|does)\s+(?:the\s+)?)"
    r"(?P<attr>.+?)\s+(?:of|for|in)\s+(?P<items>.+?)(?:\s*,?\s*(?:respectively|each))?$",
    re.IGNORECASE,
)


def _en_plan(q: str) -> Plan | None:
    body = q.strip().rstrip("?.! ")
    for pattern in _EN_COMPARE:
        m = pattern.match(body)
        if not m:
            continue
        groups = m.groupdict()
        items = [groups["a"], groups["b"]] if groups.get("a") else _EN_SPLIT_ITEMS.split(groups["items"])
        items = [i.strip(" ,") for i in items if i and i.strip(" ,")]
        if len(items) < 2:
            continue
        items, tail = _shared_tail(items)
        attr = (groups.get("attr") or "").strip()
        attr2 = (groups.get("attr2") or tail).strip()
        subs = [f"{attr} {item}".strip() + (f" {attr2}" if attr2 else "") for item in items]
        return _plan("comparison", subs, "comparison of " + ", ".join(items))
    parts = _en_parts(body)
    if len(parts) >= 2 and all(len(p.split()) >= 2 for p in parts):
        return _plan(
            "multi-hop",
            [p.rstrip("?") + "?" for p in parts],
            "several questions in one (split at question marks and conjunctions)",
        )
    m = _EN_EACH.match(body)
    if m and re.search(r",|\band\b", m.group("items")):
        items = [i.strip() for i in _EN_SPLIT_ITEMS.split(m.group("items")) if i.strip()]
        if len(items) >= 2:
            subs = [f"{m.group('head')}{m.group('attr')} of {item}?" for item in items]
            return _plan("multi-hop", subs, "enumeration of " + ", ".join(items))
    return None


def _en_parts(body: str) -> list[str]:
    """The questions asked in `body`: split at sentence ends, at "and"/"also" before a new question, and
    at a repeated opening ("…that A, and that B"); additive words ("Also,", "And") are dropped."""
    parts = []
    for sentence in _EN_SENTENCE.split(body):
        for clause in _EN_CLAUSE.split(sentence):
            parts += _en_repeated(clause)
    cleaned = (_EN_LEAD.sub("", p.strip(" ,.")).strip(" ,") for p in parts)
    return [p for p in cleaned if p]


def _en_repeated(clause: str) -> list[str]:
    """ "Is it true that A, and that B" -> ["Is it true that A", "Is it true that B"]; the clause itself when
    the word after "and" does not open an earlier part of it."""
    for m in _EN_REPEAT.finditer(clause):
        marker = re.sub(r"\s+", " ", m.group("m").lower())
        opening = r"\s+".join(map(re.escape, marker.split()))
        first = re.search(rf"\b{opening}\b", clause[: m.start()], re.IGNORECASE)
        if first is None:
            continue
        head = clause[: first.start()]
        seps = [
            s
            for s in _EN_REPEAT.finditer(clause, first.end())
            if re.sub(r"\s+", " ", s.group("m").lower()) == marker
        ]
        bounds = [first.start(), *(s.start("m") for s in seps)]
        ends = [s.start() for s in seps] + [len(clause)]
        return [head + clause[b:e].strip(" ,") for b, e in zip(bounds, ends, strict=True)]
    return [clause]


def _shared_tail(items: list[str]) -> tuple[list[str], str]:
    """ "LF-200 vs LF-500 warranty": words after the last item's share of the first item's length
    belong to every item."""
    n = len(items[0].split())
    words = items[-1].split()
    if len(words) <= n:
        return items, ""
    return [*items[:-1], " ".join(words[:n])], " ".join(words[n:])


# --- both --------------------------------------------------------------------------------------


@lru_cache(maxsize=2048)
def decompose(question: str, max_sub_questions: int = 4) -> Plan:
    """The rule-based plan: comparison / multi-hop with sub-questions, or simple (the question itself)."""
    q = re.sub(r"\s+", " ", question).strip()
    plan = (_zh_plan(q) if is_chinese(q) else None) or _en_plan(q)
    if plan is None or len(plan.sub_questions) < 2:
        return _plan("simple", [q], "one question, no conjunction or comparison")
    subs = merge_parts(plan.sub_questions, max_sub_questions)
    return _plan(plan.kind, subs, plan.reasoning + _merged_note(plan.sub_questions, subs))


def merge_parts(parts: list[str], limit: int) -> list[str]:
    """At most `limit` parts: the parts beyond it are asked together with the last one kept, so every
    part is still searched (a question of twelve parts is never refused or cut short)."""
    if len(parts) <= limit:
        return list(parts)
    return [*parts[: limit - 1], " ".join(parts[limit - 1 :])]


def _merged_note(parts: list[str], kept: list[str]) -> str:
    if len(parts) == len(kept):
        return ""
    n, limit = len(parts), len(kept)
    return f" ({n} parts, over the limit of {limit}: parts {limit}-{n} searched together)"


def _plan(kind: PlanKind, subs: list[str], reasoning: str) -> Plan:
    """A rule plan, not checked as an LLM's reply is: the rules only cut the asked question, whose
    length `answer.max_question_chars` bounds, into parts `decompose` merges down to its limit."""
    subs = list(dict.fromkeys(s.strip() for s in subs if s.strip()))
    return Plan.model_construct(kind=kind, sub_questions=subs, reasoning=reasoning)


__all__ = ["Plan", "PlanKind", "decompose", "merge_parts"]
