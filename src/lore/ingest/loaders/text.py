"""Plain text and Markdown loaders; Markdown is split into sections by ATX headings, without its
front-matter and HTML comments, and its HTML tables become `a | b` rows (header first)."""

from __future__ import annotations

import html
import re
from pathlib import Path

from lore.ingest.loaders.base import LoadOptions
from lore.ingest.loaders.encoding import read_text
from lore.ingest.loaders.page_pictures import with_pictures
from lore.ingest.structure import ARTICLE, CHAPTER, ITEM, TABLE
from lore.schema import LoadedDocument, Section

_ATX = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_FRONT_MATTER = re.compile(
    r"\A\ufeff?(?:---|\+\+\+)[ \t]*\r?\n.*?^(?:---|\+\+\+|\.\.\.)[ \t]*$\n?", re.S | re.M
)
_COMMENT = re.compile(r"<!--.*?-->", re.S)
_TABLE = re.compile(r"<table\b[^>]*>(.*?)</table\s*>", re.S | re.I)
_ROW = re.compile(r"<tr\b[^>]*>(.*?)</tr\s*>", re.S | re.I)
_CELL = re.compile(r"<t[dh]\b[^>]*>(.*?)</t[dh]\s*>", re.S | re.I)
_TAG = re.compile(r"<[^>]+>")
_HARD_BREAK = re.compile(r"(?:  |\\)$")
_CJK = re.compile(r"[\u3000-\u303f\u3400-\u9fff\uf900-\ufaff\uff00-\uffef]")


def load_txt(path: Path, options: LoadOptions) -> list[LoadedDocument]:
    """The whole file as one section; chunking splits it later."""
    text, encoding = read_text(path)
    sections = [Section(text=text.strip())] if text.strip() else []
    return [LoadedDocument(path=str(path), sections=sections, encoding=encoding)]


def load_markdown(path: Path, options: LoadOptions) -> list[LoadedDocument]:
    """One section per heading; `heading_path` holds the titles from the root heading down. A picture
    the page shows is replaced by its text when it is a file of the same ingest, else by its alt text."""
    text, encoding = read_text(path)
    sections = split_markdown(with_pictures(unwrap_soft_breaks(clean_markdown(text)), path, options))
    title = next((s.heading_path[0] for s in sections if s.heading_path), None)
    return [LoadedDocument(path=str(path), sections=sections, title=title, encoding=encoding)]


# Markdown is read without front-matter and comments, with HTML tables as rows and the text of its pictures:
# files read before are re-read.
load_markdown.version = "md3"  # type: ignore[attr-defined]


def clean_markdown(text: str) -> str:
    """`text` without its front-matter (YAML `---` or TOML `+++`) and HTML comments (which are never shown),
    HTML tables turned into one `cell | cell` line per row, so rows can be kept with their header."""
    text = _COMMENT.sub("", _FRONT_MATTER.sub("", text, count=1))
    return _TABLE.sub(_table_rows, text)


def unwrap_soft_breaks(text: str) -> str:
    """Join the lines of a hard-wrapped paragraph, as Markdown renders them: a line break inside a paragraph
    is a space (none between two CJK characters). Lines that start a block stay on their own: headings,
    list and clause items, articles, table rows, quotes, HTML, fences and what is inside a fence; a line
    ending in two spaces or a backslash keeps its (hard) break."""
    out: list[str] = []
    fence: str | None = None
    joinable = False  # the previous line is paragraph text that a continuation may join
    for line in text.split("\n"):
        fence_match = _FENCE.match(line)
        if fence_match or fence is not None:
            if fence_match:
                marker = fence_match.group(1)
                fence = marker if fence is None else (None if marker[0] == fence[0] else fence)
            out.append(line)
            joinable = False
            continue
        stripped = line.strip()
        if joinable and stripped and not _starts_block(line):
            prev = out[-1].rstrip()
            joint = "" if _CJK.match(prev[-1:]) and _CJK.match(stripped[:1]) else " "
            out[-1] = prev + joint + line.lstrip()
        else:
            out.append(line)
        joinable = bool(stripped) and not _ATX.match(line) and not _HARD_BREAK.search(line)
        joinable = joinable and not TABLE.match(line) and not line.lstrip().startswith("<")
    return "\n".join(out)


def _starts_block(line: str) -> bool:
    starts = (_ATX, ITEM, ARTICLE, CHAPTER, TABLE)
    return any(p.match(line) for p in starts) or line.lstrip().startswith((">", "<", "|", "    ", "\t"))


def _table_rows(match: re.Match[str]) -> str:
    rows = []
    for row in _ROW.findall(match.group(1)):
        cells = [" ".join(html.unescape(_TAG.sub(" ", c)).split()) for c in _CELL.findall(row)]
        if any(cells):
            rows.append("| " + " | ".join(cells) + " |")
    return "\n".join(rows)


def split_markdown(text: str) -> list[Section]:
    """Split Markdown at ATX headings outside fenced code blocks."""
    sections: list[Section] = []
    stack: list[tuple[int, str]] = []  # (level, title) of the open headings
    lines: list[str] = []
    fence: str | None = None

    def flush() -> None:
        body = "\n".join(lines).strip()
        if body:
            sections.append(Section(text=body, heading_path=[t for _, t in stack if t]))
        lines.clear()

    for line in text.splitlines():
        fence_match = _FENCE.match(line)
        if fence_match:
            marker = fence_match.group(1)
            if fence is None:
                fence = marker
            elif marker[0] == fence[0] and len(marker) >= len(fence):
                fence = None
        heading = None if fence is not None or fence_match else _ATX.match(line)
        if heading is None:
            lines.append(line)
            continue
        flush()
        level = len(heading.group(1))
        while stack and stack[-1][0] >= level:
            stack.pop()
        stack.append((level, (heading.group(2) or "").strip()))
    flush()
    return sections
