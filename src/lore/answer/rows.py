"""Table rows and FAQ rows as answers: the answer cell of an FAQ row, the asked column of a table row
read as "column: value" in the question's language."""

from __future__ import annotations

import re
from functools import lru_cache

from lore.lexical import is_chinese, tokenize
from lore.lexical.bilingual import glossary, glossary_edition, glossary_names
from lore.text.sentences import coverage

_CELL = re.compile(r"^\s*([^:：;；\n]{1,60}?)\s*[:：]\s+(.+?)\s*$", re.DOTALL)
_QUESTION_COL = re.compile(r"^(?:question|questions|q|问题|问|标准问题|提问|faq)$", re.IGNORECASE)
_ANSWER_COL = re.compile(r"^(?:answer|answers|a|答案|答|回答|标准答案|答复|reply)$", re.IGNORECASE)
_UNIT = re.compile(r"\s*[（(]([^()（）]{1,12})[)）]\s*$")
# A unit written in a column name, said the question's way.
_UNITS_ZH = {
    "months": "个月",
    "month": "个月",
    "days": "天",
    "day": "天",
    "years": "年",
    "year": "年",
    "hours": "小时",
    "usd": "美元",
    "cny": "元",
    "rmb": "元",
    "yuan": "元",
    "kg": "kg",
    "%": "%",
}
_UNITS_EN = {
    "个月": "months",
    "月": "months",
    "天": "days",
    "日": "days",
    "年": "years",
    "小时": "hours",
    "元": "yuan",
    "美元": "USD",
    "usd": "USD",
}


def _translated(question: str) -> dict[str, str]:
    return _translated_in(question, glossary_edition())


@lru_cache(maxsize=256)  # asked once per table row of an answer's passages: once per question
def _translated_in(question: str, edition: int) -> dict[str, str]:
    """Every name, in both languages, of each attribute the question names, mapped to the attribute's
    name in the question's language ("LF-500多少钱" -> {"price": "价格", "cost": "价格", ...})."""
    low = question.lower()
    out: dict[str, str] = {}
    for zh, en in glossary():
        if any(t in question for t in zh) or any(
            re.search(rf"(?<![a-z]){re.escape(t)}(?![a-z])", low) for t in en
        ):
            said = zh[0] if is_chinese(question) else en[0].capitalize()
            out.update({t: said for t in (*zh, *en)})
    return out


def cells(text: str) -> list[tuple[str, str]]:
    """("column", "value") pairs of a row read as "a: 1; b: 2"; [] when the text is no such row."""
    pieces = re.split(r";\s+(?=[^:：;]{1,60}[:：]\s)", text.strip())
    out = []
    for piece in pieces:
        m = _CELL.match(piece)
        if not m:
            return []
        out.append((m.group(1).strip(), m.group(2).strip()))
    return out


def faq_cells(text: str) -> tuple[str, str] | None:
    """(question cell, answer cell) of an FAQ-shaped row (question and answer columns), else None."""
    row = cells(text)
    questions = [v for n, v in row if _QUESTION_COL.match(n)]
    answers = [v for n, v in row if _ANSWER_COL.match(n)]
    return (questions[0], answers[0]) if questions and answers else None


def read_row(text: str, question: str) -> str | None:
    """The asked column(s) of a table row as "column: value", led by the row's subject, in the
    question's language; None when no column name matches the question."""
    asked = asked_cells(text, question)
    if asked is None:
        return None
    subject, pairs = asked
    zh = is_chinese(question)
    # A question naming no item ("住宿标准是多少？") is told which row answers: "其他城市的住宿上限：350".
    subject = subject or (None if _codes(question) else _row_name(cells(text), {v for _, v in pairs}))
    parts = [f"{name}{'：' if zh else ': '}{value}" for name, value in pairs]
    body = "；".join(parts) if zh else "; ".join(parts)
    if subject:
        subject = _said_as(subject, question, _every_name(zh), exact=True)  # 二线城市: "Second-tier city"
        space = " " if subject[-1:].isascii() else ""
        return f"{subject}{space}的{body}" if zh else f"{subject} — {body}"
    return body


def asked_cells(text: str, question: str) -> tuple[str | None, list[tuple[str, str]]] | None:
    """(the row's subject, [(column, value with unit)]) for the column(s) the question asks about, in
    the question's language; None when the text is no row or no column name matches."""
    row = cells(text)
    if len(row) < 2:
        return None
    # A column named in the other language matches through the shipped attribute names.
    translated = _translated(question)
    asked_as = question + " " + " ".join(translated)
    q_tokens = tokenize(asked_as)
    # Columns whose name the question names, not whose value it already states (the row's subject).
    scored = [
        (coverage(tokenize(name), asked_as) + coverage(q_tokens, name), i)
        for i, (name, value) in enumerate(row)
        if not _stated(value, question)
    ]
    scored = [(s, i) for s, i in scored if s > 0]
    if not scored:
        return None
    best = max(s for s, _ in scored)
    asked = [i for s, i in scored if s >= 0.8 * best][:2]
    subject = next((v for n, v in row if _stated(v, question) or _names_code(v, question)), None)
    zh = is_chinese(question)
    pairs = [_render(_said_as(row[i][0], question, translated), row[i][1], zh) for i in asked]
    if subject is not None and any(subject == row[i][1] for i in asked):
        subject = None
    return subject, pairs


def compared_cells(text: str, question: str) -> tuple[str | None, list[tuple[str, str]]] | None:
    """A row's cells for a comparison: the asked column(s) (`asked_cells`), else every one (`every_cell`)."""
    return asked_cells(text, question) or every_cell(text, question)


def every_cell(text: str, question: str) -> tuple[str | None, list[tuple[str, str]]] | None:
    """(the item the question names, [(column, value)]) of every other column of a row, each column in the
    question's language where the glossary has its exact name ("Compare LF-200 and LF-500"); None: no row."""
    row = cells(text)
    if len(row) < 2:
        return None
    named = [v for _, v in row if _stated(v, question) or _names_code(v, question)]
    zh = is_chinese(question)
    every = _every_name(zh)
    pairs = [_render(_said_as(n, question, every, exact=True), v, zh) for n, v in row if v not in named]
    return (named[0] if named else None), pairs


def _every_name(zh: bool) -> dict[str, str]:
    return _every_name_in(zh, glossary_edition())


@lru_cache(maxsize=4)
def _every_name_in(zh: bool, edition: int) -> dict[str, str]:
    """Every glossary name, in both languages, mapped to its entry's usual name in one language."""
    return {t.lower(): (z[0] if zh else e[0].capitalize()) for z, e in glossary() for t in (*z, *e)}


def names_its_row(text: str, question: str) -> bool:
    """Whether the question names the row's item (states one of its cells, or its item code)."""
    return any(_stated(v, question) or _names_code(v, question) for _, v in cells(text))


def _row_name(row: list[tuple[str, str]], said: set[str]) -> str | None:
    """The cell that names a row: the first one that is text, not a number or a code (RB-500-STD)."""
    for _, value in row:
        if value in said or _CODE_OR_NUMBER.fullmatch(value):
            continue
        return value
    return None


_CODE_OR_NUMBER = re.compile(r"[\d.,%+\-\s]+|[A-Z0-9]+(?:-[A-Z0-9]+)*")


def _stated(value: str, question: str) -> bool:
    """Whether the question states this cell's value as a whole word ("LF-500 Mover"; not "500"), or by a
    glossary name in its own language ("second-tier cities" for 二线城市)."""
    # Chinese runs on without spaces ("一线城市住宿上限"): only Latin letters and digits bound a value.
    if re.search(rf"(?<![A-Za-z0-9-]){re.escape(value)}(?![A-Za-z0-9-])", question, re.IGNORECASE):
        return True
    across = glossary_names(value)
    if not across:
        return False
    asked = set(tokenize(question))
    return any(name in question if is_chinese(name) else set(tokenize(name)) <= asked for name in across)


def _said_as(name: str, question: str, translated: dict[str, str], exact: bool = False) -> str:
    """A column named in the other language than the question's, in the question's language
    ("Payload (kg)" asked in Chinese as 载重 -> "载重 (kg)", the unit kept); `exact`: only a column whose
    whole name is a known one (a header merely holding the word "order" is not 订单)."""
    bare = _UNIT.sub("", name).strip()
    if is_chinese(bare) == is_chinese(question) or " / " in bare:
        return name
    low = bare.lower()
    said = (
        translated.get(low)
        if exact
        else next((w for t, w in translated.items() if t in (low, *low.split())), None)
    )
    return name if said is None else name.replace(bare, said)


def _names_code(value: str, question: str) -> bool:
    """Whether a cell holds one of the question's item codes as a whole word (LF-200, not LF-200C)."""
    # ASCII bounds: a code runs straight into Chinese text ("MP5冲锋枪").
    return any(names_code(value, c) for c in _codes(question))


def names_other_item(text: str, question: str) -> bool:
    """A passage about another item of the kind the question names by code: it names codes with the
    same prefix (LF-1000's row, the LF-200 page, for an LF-500 question), not the question's. A row of
    another table (a service code SV-EXT-12) or a text naming both items is not."""
    asked = _codes(question)
    if not asked:
        return False
    kinds = {_kind(c) for c in asked}
    if not any(_kind(c) in kinds for c in _codes(text)):
        return False
    row = cells(text)
    if row:
        return not any(_stated(v, question) or _names_code(v, question) for _, v in row)
    return not _names_code(text, question)


def _kind(code: str) -> str:
    """A code's letters before its number: LF-500 and LF-1000 are of one kind, SV-EXT-12 another."""
    return re.sub(r"[^a-z].*", "", code)


def item_codes(question: str) -> list[str]:
    """The item codes a question names, lower-cased, in its order (LF-200, LF-500)."""
    return list(dict.fromkeys(_codes(question)))


def names_code(text: str, code: str) -> bool:
    """Whether a text names this item code as a whole word (LF-200, not LF-200C)."""
    return re.search(rf"(?<![a-z0-9-]){re.escape(code)}(?![a-z0-9-])", text.lower()) is not None


def _codes(question: str) -> list[str]:
    return [c.lower() for c in re.findall(r"[A-Za-z]+-?[A-Za-z]*\d+[A-Za-z]*", question)]


def _render(name: str, value: str, zh: bool) -> tuple[str, str]:
    unit = ""
    m = _UNIT.search(name)
    if m:
        raw = m.group(1).strip()
        table = _UNITS_ZH if zh else _UNITS_EN
        unit = table.get(raw.lower(), table.get(raw, raw))
        name = name[: m.start()].strip()
    if zh and " / " in name:  # bilingual headers ("Warranty / 保修期"): the Chinese half
        name = next((p for p in name.split(" / ") if is_chinese(p)), name)
    space = "" if unit in ("%",) else " "
    return name, f"{value}{space + unit if unit else ''}"


def comparison_table(rows: list[tuple[str, list[tuple[str, str]], int]], zh: bool) -> str:
    """A Markdown table: one line per compared item, one column per attribute, each cell cited
    `[n]`; `rows` are (item, [(attribute, value)], passage number)."""
    attributes = list(dict.fromkeys(a for _, pairs, _ in rows for a, _ in pairs))
    head = "项目" if zh else "Item"
    lines = [f"| {head} | " + " | ".join(attributes) + " |", "|" + "---|" * (len(attributes) + 1)]
    for item, pairs, n in rows:
        values = dict(pairs)
        cells_ = [f"{values[a]}[{n}]" if a in values else "–" for a in attributes]
        lines.append(f"| {item} | " + " | ".join(cells_) + " |")
    return "\n".join(lines)
