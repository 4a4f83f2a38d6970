"""Question types (who / when / where / how many / how much / why / yes-no, Chinese and English),
whether a sentence holds an answer of that type, and the parts of a question that asks several things."""

from __future__ import annotations

import re

from lore.lexical import is_chinese, tokenize

_EN_NUM = (
    r"\b(?:\d[\d,.]*|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|twenty|thirty|"
    r"forty|fifty|hundred|thousand|million|billion|dozen|several|many|few)\b"
)
_ZH_NUM = r"[\d０-９一二两三四五六七八九十百千万亿几数半]"

# English wh-words also open relative clauses ("What happened when ...", "the man who ..."): these count
# only where they ask (see `_asks`); the Chinese markers and fixed phrases always ask.
_TYPES: list[tuple[str, re.Pattern[str], str]] = [
    (
        "how_much",
        re.compile(
            r"多少钱|价格|价钱|费用|花费|售价|工资|薪|how much (?:does|do|did|is|was|money|it cost)|"
            r"\bcost\b|\bprice\b",
            re.IGNORECASE,
        ),
        "",
    ),
    (
        "how_many",
        re.compile(
            # 几乎 (almost), 几何, 几率, 茶几; 多大程度/影响 (to what extent) ask for no number
            r"多少|(?<!茶)几(?![乎何率])[个位名只条次年天月岁人家座部种届所层项次场]?|多久|多长|"
            r"多大(?!程度|作用|影响|意义|关系|区别|差别|变化)|多高|多远|多重|"
            r"how (?:many|much|long|old|far|big|large|tall|high|often)|what (?:number|percentage|"
            r"proportion|fraction)",
            re.IGNORECASE,
        ),
        "",
    ),
    (
        "when",
        re.compile(
            r"什么时候|何时|哪一?年|哪一?天|几月|几号|什么时间|哪个朝代|什么年代|何年|"
            r"what (?:year|date|day|month|time|century|decade)|which (?:year|century|decade)",
            re.IGNORECASE,
        ),
        "when",
    ),
    ("who", re.compile(r"谁|哪位|什么人|哪些人"), "who|whom|whose"),
    (
        "where",
        re.compile(
            r"哪里|哪儿|在哪|什么地方|何处|何地|哪个(?:国家|城市|省|地区)|"
            r"which (?:country|city|state|region|place|town)",
            re.IGNORECASE,
        ),
        "where",
    ),
    (
        "why",
        re.compile(r"为什么|为何|原因|为啥|what (?:caused|causes)|\breason\b", re.IGNORECASE),
        "why",
    ),
    (
        "yes_no",
        re.compile(
            # 么 ends 什么/怎么/那么/这么/多么 too: only a bare 吗/么 is the yes-no particle
            r"(?:吗|(?<![什怎那这多要])么)[？?]?$|是否|是不是|能不能|可不可以|有没有|"
            r"^(?:is|are|was|were|do|does|did|can|could|will|would|should|has|have|had)\b",
            re.IGNORECASE,
        ),
        "",
    ),
]

_AUX = r"(?:did|do|does|was|were|is|are|will|would|can|could|has|have|had|should|might|must)"
_PREP = r"(?:to|by|from|with|for|since|until|till|of|in|at|on|and|or|but|so|then)"
# A leading subordinate clause ("When Beyoncé left, who ...") does not ask: the clause after it does.
_LEAD_CLAUSE = re.compile(
    r"^(?:when|where|while|after|before|if|as|since|once|although|though|whenever)\b[^,?]*,\s*"
    r"(?=(?:who|whom|whose|what|which|where|when|how|why|is|are|was|were|do|does|did|can|in|on|at)\b)",
    re.IGNORECASE,
)

_RELATIVE = re.compile(  # "the man who", "two friends who" (not "the son of whom": that asks)
    r"\b(?:the|a|an|this|that|these|those|his|her|their|its|other|two|three|many|some)\s+"
    r"(?:(?!(?:of|to|with|for|from|by|in|on|at|about|after|during)\b)[\w'.-]+\s+){1,2}(?:who|whom|whose)\b"
    r"|^(?:those|people|anyone|someone|everyone)\s+who\b",
    re.IGNORECASE,
)


def _asks(words: str, text: str) -> bool:
    """Whether an English wh-word asks. `who` asks unless a noun phrase it qualifies stands before it
    ("the man who ..."); `when`/`where`/`why` ask at the start (after a preposition or conjunction at
    most), after a comma, at the end, or before an auxiliary verb or "according to" (echo questions:
    "was born when according to ..."), not before the subject of a clause ("What happened when he ...")."""
    w = rf"(?:{words})"
    if words == "who|whom|whose":
        return re.search(rf"\b{w}\b", text, re.IGNORECASE) is not None and not _RELATIVE.search(text)
    pattern = (
        rf"^(?:{_PREP}\s+)?{w}\b|[,;:]\s*(?:{_PREP}\s+)?{w}\b|\b{w}\s*[?？.]?\s*$"
        rf"|\b{w}\s+(?:{_AUX}|according|before|after|exactly)\b"
    )
    return re.search(pattern, text, re.IGNORECASE) is not None


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
    english = _LEAD_CLAUSE.sub("", text)
    for name, pattern, words in _TYPES:
        if pattern.search(text) or (words and _asks(words, english)):
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


_COMPARES = re.compile(
    r"对比|比较|区别|差别|差异|异同|\b(?:compare|comparing|comparison|differences?|differ|versus|vs)\b",
    re.IGNORECASE,
)


def asks_comparison(question: str) -> bool:
    """Whether a question asks to compare things ("Compare LF-200 and LF-500", "LF-200和LF-500有什么区别")."""
    return _COMPARES.search(question) is not None


_PARTS = re.compile(r"[？?；;]")
_ASK_WORD = (
    r"(?:what|which|who|whom|whose|when|where|why|how|is|are|was|were|do|does|did|can|could|should|will"
    r"|would)"
)
# "What is the refund window, and how many days ...": an English question joined to another by "and" before a
# new question word; not "Tolimir was found guilty of genocide and what other charge?" (one question).
_AND_ASK = re.compile(rf",?\s+and\s+(?={_ASK_WORD}\s)(?!(?:what|which)\s+other\b)", re.IGNORECASE)
_ASKS_FIRST = re.compile(rf"^\s*{_ASK_WORD}\s", re.IGNORECASE)


MAX_QUESTION_PARTS = 8  # `answer.max_question_parts`' default


def question_parts(question: str, limit: int = MAX_QUESTION_PARTS) -> list[str]:
    """The parts of a question that asks several things in one message ("几天？怎么申请？"), each with
    words of its own; one part for a single question. Parts beyond `limit` are one part with the last one
    kept (each part costs an embedding and a judgement: 248 of them took 19 s)."""
    parts = [
        q.strip()
        for p in _PARTS.split(question)
        for q in (_AND_ASK.split(p) if _ASKS_FIRST.match(p) else [p])
    ]
    parts = [p for p in parts if tokenize(p)] or [question]
    return parts if len(parts) <= limit else [*parts[: limit - 1], " ".join(parts[limit - 1 :])]


# "How do I send a letter?" asks for a way to do something, not for what someone once did.
_HOW_TO = re.compile(
    r"^\s*(?:how\s+(?:do|can|could|should|would|may|might|must)\s+(?:i|you|we|one)\b|how\s+to\b|"
    r"what(?:'s|\s+is)\s+the\s+(?:best\s+)?way\s+to\b)",
    re.IGNORECASE,
)
# Simple-past forms that are no past participle ("became", not "sent": "it is sent" is a present).
_PAST_ONLY = (
    r"became|began|went|came|took|wrote|gave|knew|saw|grew|rose|fell|ran|chose|drew|ate|flew|spoke|stole|"
    r"swam|threw|wore|sang|rode|drove|broke|froze|forgot|hid|shook|woke|arose|was|were|did|had"
)
_SUBJECT = r"(?:i|he|she|we|they|it|who)"
_PAST_AFTER_SUBJECT = (
    r"[a-z]+ed|sent|made|found|left|led|told|said|met|built|bought|brought|taught|sold|held|spent|lost|"
    r"kept|paid|heard|felt|fought|thought|stood|understood|won"
)
# A past form after a subject pronoun, or after a name inside the sentence ("Beyoncé released").
_NARRATES = re.compile(
    rf"(?i:\b(?:{_PAST_ONLY})\b|\b{_SUBJECT}\s+(?:{_PAST_AFTER_SUBJECT})\b)"
    rf"|(?<=\w\s)[A-Z][\w'-]+\s+(?:{_PAST_AFTER_SUBJECT})\b"
)


def asks_how_to(question: str) -> bool:
    """An English question asking how the asker may do something ("How do I ...", "How to ...")."""
    return _HOW_TO.search(question) is not None


# In a dated sentence, an -ed form after a word that makes it no passive, perfect or adjective is a past
# ("In October 1810, ... the family moved to Warsaw").
_DATED = re.compile(r"\b(?:1\d{3}|20\d{2})\b")
_FINITE_ED = re.compile(
    r"\b(?!(?:is|are|be|been|being|am|has|have|get|gets|the|a|an|to)\b)[a-z]+\s+[a-z]+ed\b"
)


def narrates(sentence: str) -> bool:
    """An English sentence telling what was done (a simple past: "he sent a letter", "Movies became
    available"), which says how something happened, not how to do it."""
    if is_chinese(sentence):
        return False
    return _NARRATES.search(sentence) is not None or (
        _DATED.search(sentence) is not None and _FINITE_ED.search(sentence) is not None
    )
