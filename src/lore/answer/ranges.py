"""Bands in a sentence ("已满10年不满20年的", "六个月以上不满一年的", "3 to 15 years") against the quantities
a question states ("我参加工作15年了", "3年零8个月", "5 years of federal service"): the clause whose band
holds the asked quantity answers it, not the one that merely repeats its figure ("已满20年的，年休假15天")."""

from __future__ import annotations

import math
import re

from lore.lexical import tokenize

_DIGITS = "零〇一二两三四五六七八九"
_CN_VALUES = {ch: n for n, ch in enumerate("零一二三四五六七八九")} | {"〇": 0, "两": 2}
_CN = rf"[{_DIGITS}十百]+"
_NUMBER = rf"(\d+(?:\.\d+)?|{_CN})"
# unit -> (dimension, size in that dimension's base unit)
_UNITS = {
    "年": ("year", 1),
    "个月": ("month", 1),
    "月": ("month", 1),
    "周": ("day", 7),
    "天": ("day", 1),
    "日": ("day", 1),
    "小时": ("hour", 1),
    "岁": ("age", 1),
    "级": ("grade", 1),
    "year": ("year", 1),
    "month": ("month", 1),
    "week": ("day", 7),
    "day": ("day", 1),
    "hour": ("hour", 1),
}
_UNIT = r"(个月|小时|年|月|周|天|日|岁|级|years?|months?|weeks?|days?|hours?)"
_QUANTITY = re.compile(rf"{_NUMBER}\s*{_UNIT}", re.IGNORECASE)
_Q = rf"{_NUMBER}\s*{_UNIT}?"
# (lower, upper) bands: "满A(年)?(以上)?不满B年", "A至B年", "A to B years", "between A and B years".
_BAND = re.compile(
    rf"{_Q}\s*(?:以上)?\s*(?:不满|不足|未满|至|到|~|～|-|–|to|and)\s*{_NUMBER}\s*{_UNIT}", re.IGNORECASE
)
_ABOVE = re.compile(
    rf"(?:(?<![不未])满|超过|at least|more than|over)\s*{_Q}|{_Q}\s*(?:以上|or more|\+)", re.IGNORECASE
)
_BELOW = re.compile(rf"(?:不满|不足|未满|少于|less than|under|fewer than)\s*{_Q}", re.IGNORECASE)


_INSIDE = 0.5  # in the dimension's base unit: half a month, half a day
_UPPER_BEFORE = re.compile(r"(?:不满|不足|未满|不到|少于|less than|under|fewer than|below)\s*$", re.I)
_LOWER_BEFORE = re.compile(r"(?:(?<![不未])满|超过|多于|more than|over|at least|above)\s*$", re.I)
_UPPER_AFTER = re.compile(r"\s*(?:以下|以内|or less|or fewer)", re.I)
_LOWER_AFTER = re.compile(r"\s*(?:以上|多|or more|\+)", re.I)


def _value(text: str) -> float | None:
    """A figure in digits or in Chinese numerals up to 999 ("十五" 15, "二十四" 24, "两" 2)."""
    if text[0].isdigit():
        return float(text)
    total, digit = 0, 0
    for ch in text:
        if ch in _DIGITS:
            digit = _CN_VALUES[ch]
        elif ch == "十":
            total += (digit or 1) * 10
            digit = 0
        elif ch == "百":
            total += (digit or 1) * 100
            digit = 0
    return float(total + digit) or None


def _measure(number: str, unit: str | None) -> tuple[str, float] | None:
    value = _value(number)
    if value is None or not unit:
        return None
    dim, size = _UNITS.get(unit.lower().rstrip("s") if unit.isascii() else unit, (None, 0))
    return (dim, value * size) if dim else None


def asked_quantities(question: str) -> list[tuple[str, float]]:
    """The quantities a question states ("15年" -> month 180); a bare 一 ("一年能休几天") is read as "per",
    not as a figure, several figures of one dimension add up ("3年零8个月" -> 44 months), and a bound
    moves the figure just inside its side ("under 5 years" just below 60 months, "满20年以上" just above)."""
    found: dict[str, float] = {}
    last: tuple[str, int] | None = None  # the previous figure's dimension and end
    for m in _QUANTITY.finditer(question):
        if m.group(1) == "一":
            continue
        measured = _measure(m.group(1), m.group(2))
        if measured:
            dim, value = measured
            before, after = question[max(0, m.start() - 10) : m.start()], question[m.end() : m.end() + 8]
            value += _side(before, after) * _INSIDE
            if last and last[0] == "year" and dim == "month" and m.start() - last[1] <= 2:
                value += 12 * found.pop("year")  # "3年零8个月" is one figure: 44 months
            # A later figure elsewhere (a follow-up's) replaces an earlier one of its dimension.
            found[dim] = value
            last = (dim, m.end())
    return list(found.items())


def asked_figures(question: str) -> set[str]:
    """The tokens of the figures of the quantities a question states ("15" of "工作15年")."""
    return {t for m in _QUANTITY.finditer(question) if m.group(1) != "一" for t in tokenize(m.group(1))}


def _side(before: str, after: str) -> int:
    """+1 when the figure is a lower bound ("more than 5", "满20年以上"), -1 an upper one, 0 a point."""
    if _LOWER_BEFORE.search(before) or _LOWER_AFTER.match(after):
        return 1
    if _UPPER_BEFORE.search(before) or _UPPER_AFTER.match(after):
        return -1
    return 0


def bands(sentence: str) -> list[tuple[str, float, float]]:
    """(dimension, lower, upper) of each band the sentence states; open ends are 0 and infinity."""
    out: list[tuple[str, float, float]] = []
    taken: list[tuple[int, int]] = []
    for m in _BAND.finditer(sentence):
        hi = _measure(m.group(3), m.group(4))
        lo = _measure(m.group(1), m.group(2) or m.group(4))
        if lo and hi and {lo[0], hi[0]} == {"year", "month"}:  # "六个月以上不满一年": in months
            lo, hi = (
                ("month", lo[1] * (12 if lo[0] == "year" else 1)),
                ("month", hi[1] * (12 if hi[0] == "year" else 1)),
            )
        if lo and hi and lo[0] == hi[0]:
            out.append((lo[0], lo[1], hi[1]))
            taken.append(m.span())
    for pattern, upper in ((_ABOVE, False), (_BELOW, True)):
        for m in pattern.finditer(sentence):
            if any(m.start() < b and a < m.end() for a, b in taken):
                continue
            number, unit = (m.group(1), m.group(2)) if m.group(1) else (m.group(3), m.group(4))
            measured = _measure(number, unit)
            if measured:
                out.append((measured[0], 0.0, measured[1]) if upper else (measured[0], measured[1], math.inf))
    return out


def band_fit(question: str, sentence: str) -> bool | None:
    """True when a band of the sentence holds a quantity the question states, False when the sentence
    states bands of that quantity's dimension but none holds it, None when the two do not meet."""
    asked = asked_quantities(question)
    if not asked:
        return None
    stated = bands(sentence)
    meet = [(dim, lo, hi) for dim, lo, hi in stated if any(dim == d for d, _ in asked)]
    if not meet:
        return None
    return any(lo <= value < hi for dim, lo, hi in meet for d, value in asked if d == dim)
