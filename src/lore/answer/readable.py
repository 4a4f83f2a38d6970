"""Quoted source text made readable: Markdown links as their text, no images or HTML comments, clause and
list markers kept as list lines, article headings (第X条) as a bold lead-in."""

from __future__ import annotations

import re

_COMMENT = re.compile(r"<!--.*?(?:-->|\Z)", re.S)
# A link target: anything but parentheses and line breaks, or one level of balanced parentheses
# (`(https://x/a_(b))`, `({% page "leave/" %})`).
_TARGET = r"\((?:[^()\n]|\([^()\n]*\))*\)"
_IMAGE = re.compile(rf"!\[[^\]\n]*\]{_TARGET}")
_LINK = re.compile(rf"\[([^\]\n]*)\]{_TARGET}")
# "[text][ref]" with a word in its text (not "[1][2]", footnote marks some sources keep).
_REF_LINK = re.compile(r"(?<!\])\[([^\]\n]*[^\W\d_][^\]\n]*)\]\[[^\]\n]*\]")
_REF_DEF = re.compile(r"^ {0,3}\[[^\]\n]+\]:[ \t]*\S+.*$", re.M)
_AUTOLINK = re.compile(r"<((?:https?://|mailto:)[^>\s]+)>")
_HTML_IMG = re.compile(r"<img\b[^>]*>", re.I)
# Inline HTML a web page's Markdown keeps (`<a href=…>text</a>`): the tags go, their text stays.
# Only well-formed tags: "x<b and c>d" in a formula stays.
_HTML_TAG = re.compile(
    r"</?(?:(?:b|i|em|strong|u|small|sup|sub|br|mark|kbd|code)\s*/?"
    r"|(?:a|span|font|abbr)(?:\s+[\w-]+(?:=(?:\"[^\"\n]*\"|'[^'\n]*'|[^\s>]+))?)*\s*/?)>",
    re.I,
)
_LIQUID = re.compile(r"\{%.*?%\}")  # a site generator's tags ("{% alert %}"): no words of the page

_CN_NUM = "一二三四五六七八九十百千零〇两"
# A marker that is already a Markdown list marker ("- x", "* x", "+ x", "1. x", "2) x").
_MD_ITEM = re.compile(r"^(?:[-*+]|\d{1,3}[.)])[ \t]+(?=\S)")
# A clause or list marker Markdown does not read as one: （一） (1) ① 一、 1、 a) • x.
_OTHER_ITEM = re.compile(
    rf"^(?:[（(](?:\d{{1,3}}|[{_CN_NUM}]{{1,4}}|[a-zA-Z])[)）]|[①-⑳]|[{_CN_NUM}]{{1,4}}、|\d{{1,3}}、"
    r"|[a-z][.)](?=[ \t])|[•·▪◦][ \t]*)[ \t]*(?=\S)"
)
# An article heading at a line's start: "第四十六条 有下列情形之一的…", "第十条之一　…".
_ARTICLE = re.compile(rf"^(第[{_CN_NUM}\d]+条(?:之[{_CN_NUM}]+)?)[ \t\u3000]+(?=\S)")
_BOLD_LEAD = re.compile(r"^\*\*(第[^*\n]+条[^*\n]*)\*\* ")
_BULLET = re.compile(r"^- (?=\S)")
_TABLE_ROW = re.compile(r"^\|.*\|$")


def clean_markup(text: str) -> str:
    """`text` as a reader sees it: links as their text, no images, no HTML comments, no link definitions."""
    if not any(ch in text for ch in "[<{"):
        return text
    text = _COMMENT.sub("", text)
    text = _HTML_IMG.sub("", _IMAGE.sub("", text))
    text = _HTML_TAG.sub("", text)
    text = _REF_DEF.sub("", text)
    text = _LINK.sub(lambda m: m.group(1), text)
    text = _REF_LINK.sub(lambda m: m.group(1), text)
    return _LIQUID.sub("", _AUTOLINK.sub(lambda m: m.group(1), text))


def list_item(line: str) -> str | None:
    """The Markdown list line for a line that starts with a clause or list marker, else None:
    "（一）劳动者…" -> "- （一）劳动者…", "• Tea" -> "- Tea", "1. Open" stays "1. Open"."""
    line = line.strip()
    if _MD_ITEM.match(line):
        return line if not line.startswith(("*", "+")) else "- " + line[1:].lstrip()
    m = _OTHER_ITEM.match(line)
    if m is None:
        return None
    return f"- {line[m.end() :]}" if line[0] in "•·▪◦" else f"- {line}"


def lead_in(line: str) -> str:
    """An article heading at the start of a line as a bold lead-in: "**第四十六条** 有下列情形之一的…"."""
    return _ARTICLE.sub(lambda m: f"**{m.group(1)}** ", line, count=1)


def table_row(line: str) -> str | None:
    """A Markdown table row quoted alone, as words: "| Cesar Chavez Day | March 31 |" -> "Cesar Chavez Day:
    March 31"; None for any other line (a separator row has no words)."""
    line = line.strip()
    if not _TABLE_ROW.match(line):
        return None
    cells = [c.strip() for c in line.strip("|").split("|") if c.strip()]
    if not cells or all(set(c) <= set("-: ") for c in cells):
        return None
    return cells[0] if len(cells) == 1 else f"{cells[0]}: {'; '.join(cells[1:])}"


def render_lines(sentence: str) -> list[tuple[bool, str]]:
    """(is a list line, text) for each line of a quoted sentence, markers and headings rendered."""
    out = []
    for line in sentence.split("\n"):
        if not line.strip():
            continue
        line = table_row(line) or line
        item = list_item(line)
        out.append((True, item) if item is not None else (False, lead_in(line.strip())))
    return out


def plain(line: str) -> str:
    """A rendered answer line back as the source wrote it (no list bullet, no bold lead-in)."""
    line = _BULLET.sub("", line.strip())
    return _BOLD_LEAD.sub(lambda m: m.group(1) + " ", line)
