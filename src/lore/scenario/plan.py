"""Per-question retrieval plan: FAQ/doc top-k, rerank, FAQ direct threshold and context size.

Decided from the question's length, intent, risk and table-ness, with the reasons recorded.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from lore.scenario.routing import Matcher
from lore.text.normalise import normalise
from lore.text.units import text_units

INTENTS = {
    "comparison": [
        "区别",
        "不同",
        "对比",
        "比较",
        "哪个好",
        "difference",
        "differ",
        "compare",
        "versus",
        "vs",
    ],
    "procedure": [
        "如何",
        "怎么",
        "怎样",
        "流程",
        "步骤",
        "手续",
        "申请",
        "办理",
        "how do",
        "how to",
        "how can",
        "how should",
        "steps",
        "process",
        "procedure",
        "apply",
    ],
    "lookup": [
        "多少",
        "几天",
        "几个",
        "几次",
        "多久",
        "多长",
        "上限",
        "标准是",
        "金额",
        "额度",
        "期限",
        "截止",
        "哪天",
        "how much",
        "how many",
        "how long",
        "limit",
        "amount",
        "rate",
        "deadline",
        "allowance",
        "maximum",
    ],
}
_TABLE = Matcher(["表格", "清单", "列表", "价目", "一览", "table", "list of", "sheet", "re:\\d"])
_INTENTS = {name: Matcher(words) for name, words in INTENTS.items()}


def detect_intent(question: str) -> str:
    """comparison > procedure > lookup > general, by keyword."""
    q = normalise(question, match_key=True)
    return next((name for name, m in _INTENTS.items() if m.find(q)), "general")


def is_table_question(question: str, intent: str) -> bool:
    """Asks for figures or rows: a lookup, a number in the question, or table words."""
    return intent == "lookup" or _TABLE.find(normalise(question, match_key=True)) is not None


@dataclass
class RetrievalPlan:
    """What retrieval does for one question."""

    faq_k: int
    doc_k: int
    recall_k: int
    rerank: bool  # re-score candidates with the configured reranker (none configured: nothing to skip)
    faq_direct_threshold: float
    max_passages: int
    context_budget: int
    table: bool = False
    reasons: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def make_plan(
    question: str,
    *,
    intent: str,
    risk: str | None,
    doc_k: int,
    recall_k: int,
    max_passages: int,
    context_budget: int,
    faq_threshold: float,
    rerank: bool = False,
) -> RetrievalPlan:
    """Start from the configured defaults (`rerank`: whether a configured reranker runs by default) and
    adjust them by the question's features."""
    units = text_units(question)
    table = is_table_question(question, intent)
    p = RetrievalPlan(5, doc_k, recall_k, rerank, faq_threshold, max_passages, context_budget, table)
    if units <= 12:
        p.doc_k, p.max_passages = min(doc_k, 6), min(max_passages, 4)
        p.reasons.append(f"short question ({units} units): FAQ first, small context")
    elif units > 60:
        p.faq_k, p.doc_k, p.recall_k = 3, doc_k + 5, recall_k * 2
        p.max_passages, p.rerank = max_passages + 2, True
        p.reasons.append(f"long question ({units} units): wider recall, larger context")
    if table:
        p.doc_k, p.max_passages = p.doc_k + 5, p.max_passages + 2
        p.reasons.append("asks for figures or rows: more table rows in the context")
    if intent == "comparison":
        p.doc_k, p.max_passages, p.rerank = p.doc_k + 5, p.max_passages + 2, True
        p.reasons.append("comparison: evidence for every option")
    if risk:
        # A standard answer to a risky question must match it very closely.
        p.faq_direct_threshold = min(1.0, faq_threshold + 0.02)
        p.rerank = True
        p.reasons.append(f"risk {risk}: stricter FAQ direct threshold")
    p.max_passages = min(p.max_passages, 12)
    return p
