"""Question types (who / when / where / how many / how much / why / yes-no, Chinese and English) and
whether a sentence holds an answer of that type."""

from __future__ import annotations

import re

_EN_NUM = (
    r"\b(?:\d[\d,.]*|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|twenty|thirty|"
    r"forty|fifty|hundred|thousand|million|billion|dozen|several|many|few)\b"
)
_ZH_NUM = r"[\d０-９一二两三四五六七八九十百千万亿几数半]"

_TYPES: list[tuple[str, re.Pattern[str]]] = [
    (
        "how_much",
        re.compile(
            r"多少钱|价格|价钱|费用|花费|售价|工资|薪|how much (?:does|do|did|is|was|money|it cost)|"
            r"\bcost\b|\bprice\b",
            re.IGNORECASE,
        ),
    ),
    (
        "how_many",
        re.compile(
            r"多少|几[个位名只条次年天月岁人家座部种届所层项次场]?|多久|多长|多大|多高|多远|多重|"
            r"how (?:many|much|long|old|far|big|large|tall|high|often)|what (?:number|percentage|"
            r"proportion|fraction)",
            re.IGNORECASE,
        ),
    ),
    (
        "when",
        re.compile(
            r"什么时候|何时|哪一?年|哪一?天|几月|几号|什么时间|哪个朝代|什么年代|何年|"
            r"\bwhen\b|what (?:year|date|day|month|time|century|decade)|which (?:year|century|decade)",
            re.IGNORECASE,
        ),
    ),
    ("who", re.compile(r"谁|哪位|什么人|哪些人|\bwho\b|\bwhom\b|\bwhose\b", re.IGNORECASE)),
    (
        "where",
        re.compile(
            r"哪里|哪儿|在哪|什么地方|何处|何地|哪个(?:国家|城市|省|地区)|"
            r"\bwhere\b|which (?:country|city|state|region|place|town)",
            re.IGNORECASE,
        ),
    ),
    ("why", re.compile(r"为什么|为何|原因|为啥|\bwhy\b|what (?:caused|causes)|\breason\b", re.IGNORECASE)),
    (
        "yes_no",
        re.compile(
            r"[吗么][？?]?$|是否|是不是|能不能|可不可以|有没有|"
            r"^(?:is|are|was|were|do|does|did|can|could|will|would|should|has|have|had)\b",
            re.IGNORECASE,
        ),
    ),
]

_ANSWERS: dict[str, re.Pattern[str]] = {
    "how_much": re.compile(rf"{_ZH_NUM}|[$¥€£]|{_EN_NUM}", re.IGNORECASE),
    "how_many": re.compile(rf"{_ZH_NUM}|{_EN_NUM}", re.IGNORECASE),
    "when": re.compile(
        r"\d{1,4}\s*[年月日号]|[一二三四五六七八九十〇零]+[年月日]|世纪|年代|朝|时期|期间|以前|以后|"
        r"春|夏|秋|冬|\b1\d{3}\b|\b20\d{2}\b|\b(?:January|February|March|April|May|June|July|"
        r"August|September|October|November|December|century|decade|spring|summer|autumn|"
        r"winter|\d{1,2}(?:st|nd|rd|th))\b",
        re.IGNORECASE,
    ),
    "who": re.compile(
        r"(?<!^)\b[A-Z][a-z]+|[\u4e00-\u9fff]{2,4}(?:先生|女士|教授|博士)?|他|她|人|者|家|员|帝|王"
    ),
    "where": re.compile(
        r"省|市|县|区|州|国|岛|山|河|湖|海|城|镇|村|街|路|洲|地|馆|院|校|站|港|"
        r"\b(?:in|at|near|from|on)\s+(?:the\s+)?[A-Z]|(?<!^)\b[A-Z][a-z]+",
        re.IGNORECASE,
    ),
    "why": re.compile(
        r"因为|由于|原因|为了|因此|所以|导致|使得|以便|\bbecause\b|\bdue to\b|\bsince\b|"
        r"\bas a result\b|\bin order to\b|\bso that\b|\bto\s+\w+",
        re.IGNORECASE,
    ),
}


# "密码是多少" / "电话是多少" ask for a string, not a quantity.
_WHAT_IS = re.compile(
    r"(?:密码|电话|号码|账号|帐号|邮箱|地址|网址|名字|名称|编号|代码|型号|分机)(?:是|为)?多少"
)


def question_type(question: str) -> str | None:
    """The first matching type of `question`, or None (what / how / other)."""
    text = question.strip()
    if _WHAT_IS.search(text):
        return None
    for name, pattern in _TYPES:
        if pattern.search(text):
            return name
    return None


def has_answer_type(sentence: str, qtype: str | None, question: str = "") -> bool:
    """Whether `sentence` holds something of the asked type beyond what the question itself says
    (a number for how many/much, a date for when, ...); True for types with no test."""
    pattern = _ANSWERS.get(qtype or "")
    if pattern is None:
        return True
    asked = {m.group(0).lower() for m in pattern.finditer(question)}
    return any(m.group(0).lower() not in asked for m in pattern.finditer(sentence))
