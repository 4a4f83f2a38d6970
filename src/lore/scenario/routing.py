"""Deterministic routing before retrieval: greeting, thanks, hand-off, out of scope, or retrieval.

Keywords are matched on the normalised question (width, case, punctuation, whitespace folded):
CJK keywords as substrings, Latin ones on word boundaries. `re:` entries are regular expressions
searched in the normalised question. Scenario lists extend the built-in ones.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from lore.lexical import CJK_CHAR
from lore.scenario.config import RISK_CATEGORIES, Scenario
from lore.text.normalise import normalise

GREETING = [
    "你好",
    "您好",
    "hi",
    "hello",
    "hey",
    "哈喽",
    "嗨",
    "早上好",
    "上午好",
    "中午好",
    "下午好",
    "晚上好",
    "在吗",
    "在不在",
    "有人吗",
    "good morning",
    "good afternoon",
    "good evening",
    "greetings",
    "howdy",
    "hiya",
    "大家好",
    "你好呀",
]
THANKS = [
    "谢谢",
    "多谢",
    "感谢",
    "谢了",
    "谢谢你",
    "辛苦了",
    "thanks",
    "thank you",
    "thx",
    "ty",
    "thank u",
    "many thanks",
    "cheers",
    "much appreciated",
    "appreciate it",
]
# Words that may surround a greeting or a thank-you without making it a question.
FILLER = [
    "请问",
    "呀",
    "啊",
    "哈",
    "呢",
    "哦",
    "嗯",
    "好的",
    "ok",
    "okay",
    "非常",
    "十分",
    "了",
    "你",
    "您",
    "的",
    "帮助",
    "帮忙",
    "so much",
    "very much",
    "a lot",
    "for your help",
    "for the help",
    "there",
    "all",
    "everyone",
    "great",
    "again",
    "大家",
    "很",
    "哈哈",
    "好",
]
HANDOFF = [
    "转人工",
    "人工客服",
    "人工服务",
    "人工坐席",
    "找人工",
    "要人工",
    "接人工",
    "真人客服",
    "联系客服",
    "human agent",
    "live agent",
    "talk to a human",
    "speak to a human",
    "talk to a person",
    "speak to a person",
    "real person",
    "talk to someone",
    "speak to someone",
    "customer service agent",
    "re:^(?:人工|human|agent|operator)$",
]
OUT_OF_SCOPE = [
    "天气",
    "气温",
    "下雨",
    "下雪",
    "股票",
    "股价",
    "基金净值",
    "彩票",
    "星座",
    "算命",
    "讲个笑话",
    "讲笑话",
    "写一首诗",
    "写首诗",
    "菜谱",
    "怎么做菜",
    "球赛",
    "比分",
    "电影推荐",
    "推荐电影",
    "weather",
    "will it rain",
    "forecast",
    "stock price",
    "share price",
    "lottery",
    "horoscope",
    "joke",
    "write a poem",
    "recipe",
    "football score",
    "movie recommendation",
    "recommend a movie",
    "bitcoin",
]
RISK = {
    "pricing": [
        "报价",
        "折扣",
        "打折",
        "优惠价",
        "价格",
        "多少钱",
        "底价",
        "降价",
        "返点",
        "预算",
        "绕过审批",
        "跳过审批",
        "不走审批",
        "免审批",
        "discount",
        "price",
        "pricing",
        "quote",
        "rebate",
        "budget",
        "bypass approval",
        "skip approval",
        "skip the approval",
        "without approval",
    ],
    "contract": [
        "合同",
        "签约",
        "盖章",
        "用印",
        "违约",
        "协议条款",
        "竞业",
        "contract",
        "sign the agreement",
        "agreement terms",
        "penalty clause",
        "termination clause",
        "non compete",
        "nda",
    ],
    "privacy": [
        "身份证号",
        "工资条",
        "别人的工资",
        "他的工资",
        "她的工资",
        "同事的工资",
        "家庭住址",
        "手机号",
        "病历",
        "个人信息",
        "personal data",
        "home address",
        "phone number",
        "medical record",
        "social security number",
        "someone else's salary",
        "colleague's salary",
        "coworker's salary",
    ],
}


class Matcher:
    """Keywords and `re:` patterns compiled once; `find` returns the first match or None."""

    def __init__(self, entries: list[str]) -> None:
        # Longest first, so stripping "many thanks" is not pre-empted by "thanks".
        self.entries = sorted(dict.fromkeys(entries), key=lambda e: -len(normalise(e, match_key=True)))
        self._regex = []
        for e in self.entries:
            if e.startswith("re:"):
                self._regex.append((e, re.compile(e[3:], re.IGNORECASE)))
            else:
                key = normalise(e, match_key=True)
                if not key:
                    continue
                # Latin keywords match whole words; CJK ones anywhere (there are no word breaks).
                pattern = (
                    re.escape(key) if CJK_CHAR.search(key) else rf"(?<![a-z0-9]){re.escape(key)}(?![a-z0-9])"
                )
                self._regex.append((e, re.compile(pattern)))

    def find(self, text: str) -> str | None:
        return next((e for e, rx in self._regex if rx.search(text)), None)

    def strip(self, text: str) -> str:
        """`text` with every match removed."""
        for _, rx in self._regex:
            text = rx.sub(" ", text)
        return text


@dataclass
class Route:
    """Where a question goes, and the rule that sent it there."""

    name: str  # greeting | thanks | handoff | out_of_scope | retrieval
    matched: str | None = None
    risk: str | None = None
    risk_matched: str | None = None
    sources: list[str] = field(default_factory=list)  # scenario sources whose patterns match

    @property
    def direct(self) -> bool:
        return self.name != "retrieval"

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "matched": self.matched,
            "risk": self.risk,
            "risk_matched": self.risk_matched,
            "sources": self.sources,
        }


class Router:
    """The routing rules of one scenario (or the built-in ones alone)."""

    def __init__(self, scenario: Scenario | None = None) -> None:
        r = scenario.routing if scenario else None
        self.greeting = Matcher(GREETING + (r.greeting if r else []))
        self.thanks = Matcher(THANKS + (r.thanks if r else []))
        names = [scenario.assistant_name] if scenario else []
        self.filler = Matcher(FILLER + names)
        self.handoff = Matcher(HANDOFF + (r.handoff if r else []))
        self.out_of_scope = Matcher(OUT_OF_SCOPE + (r.out_of_scope if r else []))
        extra = scenario.risk if scenario else None
        self.risk = {c: Matcher(RISK[c] + (getattr(extra, c) if extra else [])) for c in RISK_CATEGORIES}
        self.sources = {
            s.id: Matcher(s.patterns) for s in (scenario.sources if scenario else []) if s.patterns
        }
        self._last: tuple[str, Route] | None = None  # (normalised question, its route)

    def route(self, question: str) -> Route:
        """Hand-off > greeting > thanks > out of scope (unless a source pattern claims it) > retrieval.

        The last question's route is kept: a request that looks at its route before answering routes once."""
        q = normalise(question, match_key=True)
        if self._last is None or self._last[0] != q:
            self._last = (q, self._route(q))
        return self._last[1]

    def _route(self, q: str) -> Route:
        sources = [sid for sid, m in self.sources.items() if m.find(q)]
        risk, risk_kw = self.find_risk(q)
        route = partial(Route, risk=risk, risk_matched=risk_kw, sources=sources)
        if kw := self.handoff.find(q):
            return route("handoff", kw)
        for name, matcher in (("greeting", self.greeting), ("thanks", self.thanks)):
            if (kw := matcher.find(q)) and not self.filler.strip(matcher.strip(q)).strip():
                return route(name, kw)
        if (kw := self.out_of_scope.find(q)) and not sources:
            return route("out_of_scope", kw)
        return route("retrieval", None)

    def find_risk(self, normalised_question: str) -> tuple[str | None, str | None]:
        """The first risk category (in `RISK_CATEGORIES` order) whose keywords occur, and the keyword."""
        for category, matcher in self.risk.items():
            if kw := matcher.find(normalised_question):
                return category, kw
        return None, None
