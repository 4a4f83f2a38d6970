"""Offline consistency grade: do passages from different documents state different figures for the
same sub-question ("每晚不超过 500 元" in one policy, "600 元" in another)?

Conservative by design: only a sentence that holds every key term of the sub-question (codes and
numbers included) and most of its terms speaks for its document, and two documents conflict only
when their sentences give the same unit and share no value for it. No figure, no verdict (None).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import PurePath

from lore.answer.generators.base import Passage
from lore.lexical import is_chinese, tokenize
from lore.text.sentences import coverage, key_coverage, split_sentences

STATEMENT_COVERAGE = 0.6  # share of the sub-question's (weighted) terms a sentence must hold
MAX_DOCUMENTS = 4  # the best passages of this many documents are compared

# Units a figure must carry to be compared; each maps to one canonical name.
_UNITS = {
    "%": "%",
    "％": "%",
    "percent": "%",
    "元": "元",
    "块": "元",
    "yuan": "元",
    "rmb": "元",
    "usd": "usd",
    "个工作日": "工作日",
    "工作日": "工作日",
    "working days": "工作日",
    "business days": "工作日",
    "天": "天",
    "日": "日",
    "days": "天",
    "day": "天",
    "周": "周",
    "weeks": "周",
    "week": "周",
    "个月": "月",
    "月": "月",
    "months": "月",
    "month": "月",
    "年": "年",
    "years": "年",
    "year": "年",
    "小时": "小时",
    "hours": "小时",
    "hour": "小时",
    "分钟": "分钟",
    "minutes": "分钟",
    "次": "次",
    "times": "次",
    "人": "人",
    "people": "人",
    "公斤": "kg",
    "千克": "kg",
    "kg": "kg",
    "米": "米",
    "km": "km",
    "公里": "km",
    "characters": "字符",
    "字符": "字符",
    "位": "位",
}
_UNIT_ALT = "|".join(sorted((re.escape(u) for u in _UNITS), key=len, reverse=True))
# A number not glued to a code ("LF-200", "ISO9001") and the unit right after it.
_NUMBER = r"\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?"
_FIGURE = re.compile(rf"(?<![A-Za-z0-9\-_.,])({_NUMBER})\s*({_UNIT_ALT})(?![A-Za-z])", re.IGNORECASE)
_MONEY = re.compile(rf"([$¥])\s*({_NUMBER})")  # after NFKC, ￥ is ¥


@dataclass
class Statement:
    """The sentence one document gives for the sub-question, and its figures by unit."""

    document: str  # a name a reader recognises: the title or the file name
    passage: int  # the passage number in the sub-question's grading
    sentence: str
    figures: dict[str, set[float]]


@dataclass
class Consistency:
    """None when fewer than two documents state a figure for the sub-question."""

    consistent: bool | None
    conflicts: list[str] = field(default_factory=list)  # "policy_2023.md: 500 元 vs policy_2024.md: 600 元"
    statements: list[Statement] = field(default_factory=list)


def figures(sentence: str) -> dict[str, set[float]]:
    """Numbers with a known unit, by canonical unit; four-digit years ("2024年") are dates, not figures."""
    text = unicodedata.normalize("NFKC", sentence)
    out: dict[str, set[float]] = {}
    for value, unit in _FIGURE.findall(text):
        canon = _UNITS.get(unit.lower(), unit)
        if canon == "年" and len(value) == 4:
            continue
        out.setdefault(canon, set()).add(float(value.replace(",", "")))
    for symbol, value in _MONEY.findall(text):
        out.setdefault("元" if symbol == "¥" else "usd", set()).add(float(value.replace(",", "")))
    return out


def check_consistency(sub_question: str, passages: Sequence[Passage]) -> Consistency:
    """Compare the figures the best-matching sentence of each document gives for `sub_question`."""
    tokens = tokenize(sub_question)
    asked = figures(sub_question)  # figures the question itself names are not answers
    statements: list[Statement] = []
    seen: set[str] = set()
    for p in passages:
        doc = p.hit.chunk.document_id
        if doc in seen or len(statements) >= MAX_DOCUMENTS:
            continue
        best = max(split_sentences(p.text), key=lambda s: coverage(tokens, s), default="")
        if not best or key_coverage(tokens, best) < 1.0 or coverage(tokens, best) < STATEMENT_COVERAGE:
            continue
        found = {u: v - asked.get(u, set()) for u, v in figures(best).items()}
        found = {u: v for u, v in found.items() if v}
        if found:
            seen.add(doc)
            statements.append(Statement(_name(p), p.n, best, found))
    if len(statements) < 2:
        return Consistency(None, statements=statements)
    conflicts = []
    for i, a in enumerate(statements):
        for b in statements[i + 1 :]:
            for unit in sorted(a.figures.keys() & b.figures.keys()):
                if not a.figures[unit] & b.figures[unit]:
                    conflicts.append(
                        f"{a.document}: {_fmt(a.figures[unit], unit)} vs "
                        f"{b.document}: {_fmt(b.figures[unit], unit)}"
                    )
    return Consistency(not conflicts, conflicts, statements)


def _name(p: Passage) -> str:
    c = p.hit.chunk
    return c.title or PurePath(c.file_path).name or c.document_id


def _fmt(values: set[float], unit: str) -> str:
    nums = "/".join(f"{v:g}" for v in sorted(values))
    return f"{nums}{unit}" if unit == "%" else f"{nums} {unit}"


def disagreement_note(question: str, parts: list[tuple[str, list[str]]]) -> str:
    """Which parts the documents disagree on (and the differing figures, when known)."""
    zh = is_chinese(question)
    notes = []
    for sub, conflicts in parts:
        what = "；".join(conflicts) if zh else "; ".join(conflicts)
        if zh:
            notes.append(f"资料对「{sub.rstrip('？?')}」的说法不一致" + (f"（{what}）" if what else ""))
        else:
            notes.append(f'the documents disagree on "{sub.rstrip("?")}"' + (f" ({what})" if what else ""))
    if zh:
        return "注意：" + "；".join(notes) + "，请核对哪份文件是现行的。"
    return "Note: " + "; ".join(notes) + "; check which document is current."
