"""Citation markers: keep those that point at a passage, drop the rest, attach missing ones."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from lore.answer.generators.base import Passage
from lore.answer.quotes import cited_lines, quote_for
from lore.lexical import is_chinese, tokenize
from lore.text.sentences import coverage, split_sentences

MARKER = re.compile(r"\s?\[(\d{1,3})\]")
_ATTACH_MIN = 0.5  # share of a sentence's tokens a passage must hold to be attached as its source


@dataclass
class Citation:
    """One numbered source with everything needed to open the exact place."""

    n: int
    chunk_id: str
    document_id: str
    file: str
    page: int | None
    slide: int | None
    sheet: str | None
    row: int | None
    heading_path: list[str]
    text: str
    scores: dict[str, float | None] = field(default_factory=dict)
    # The cited sentence with a little of the passage around it; the sentence is quote[start:end].
    quote: str = ""
    quote_span: list[int] | None = None

    def to_json(self) -> dict[str, Any]:
        return dict(self.__dict__)


def clean_markers(answer: str, passages: Sequence[Passage]) -> str:
    """Remove `[n]` markers whose n is not a passage number."""
    valid = {p.n for p in passages}
    return MARKER.sub(lambda m: m.group(0) if int(m.group(1)) in valid else "", answer)


def attach_missing(answer: str, passages: Sequence[Passage]) -> str:
    """Give each uncited sentence the passage that best contains it (if one does); Markdown table
    lines stay as they are (their cells carry their own citations)."""
    if not passages:
        return answer
    if any(line.lstrip().startswith("|") for line in answer.splitlines()):
        blocks: list[tuple[bool, list[str]]] = []
        for line in answer.splitlines():
            table = line.lstrip().startswith("|")
            if blocks and blocks[-1][0] == table:
                blocks[-1][1].append(line)
            else:
                blocks.append((table, [line]))
        return "\n".join(
            "\n".join(lines) if table else _attach("\n".join(lines), passages) for table, lines in blocks
        )
    return _attach(answer, passages)


def _attach(answer: str, passages: Sequence[Passage]) -> str:
    """Line by line, so list lines and paragraphs stay as they are."""
    lines = []
    for line in answer.split("\n"):
        sentences = split_sentences(line) if line.strip() else []
        if not sentences:
            lines.append(line)
            continue
        out = []
        for sentence in sentences:
            if not MARKER.search(sentence):
                tokens = tokenize(sentence)
                best = max(passages, key=lambda p: coverage(tokens, p.text))
                if tokens and coverage(tokens, best.text) >= _ATTACH_MIN:
                    sentence = insert_marker(sentence, best.n)
            out.append(sentence)
        indent = line[: len(line) - len(line.lstrip())]
        lines.append(indent + join_sentences(out))
    return "\n".join(lines)


def cited_numbers(answer: str) -> list[int]:
    """Passage numbers in order of first citation."""
    seen: list[int] = []
    for m in MARKER.finditer(answer):
        n = int(m.group(1))
        if n not in seen:
            seen.append(n)
    return seen


def renumber(answer: str, passages: Sequence[Passage]) -> tuple[str, list[Passage]]:
    """Number the cited passages 1..k in order of first citation (the rest after them), so the
    markers match the sources shown."""
    order = [n for n in cited_numbers(answer) if any(p.n == n for p in passages)]
    order += [p.n for p in passages if p.n not in order]
    new = {old: i for i, old in enumerate(order, 1)}
    by_n = {p.n: p for p in passages}
    text = MARKER.sub(
        lambda m: m.group(0).replace(m.group(1), str(new.get(int(m.group(1)), m.group(1)))), answer
    )
    return text, [Passage(new[n], by_n[n].text, by_n[n].hits) for n in order]


def citations_for(answer: str, passages: Sequence[Passage]) -> list[Citation]:
    """Citation records for the passages the answer cites, in citation order."""
    by_n = {p.n: p for p in passages}
    said = cited_lines(answer)
    result = []
    for n in cited_numbers(answer):
        p = by_n[n]
        quote = quote_for(said.get(n, []), p.text)
        h = p.hit
        c = h.chunk
        result.append(
            Citation(
                n=n,
                chunk_id=c.chunk_id,
                document_id=c.document_id,
                file=c.file_path,
                page=c.page,
                slide=c.slide,
                sheet=c.sheet,
                row=c.row,
                heading_path=list(c.heading_path),
                text=p.text,
                scores={"score": h.score, "dense": h.dense_score, "bm25": h.bm25_score},
                quote=quote.text if quote else "",
                quote_span=[quote.start, quote.end] if quote else None,
            )
        )
    return result


def insert_marker(sentence: str, n: int) -> str:
    """Add `[n]` before the closing punctuation, like a footnote: "…30 days[1]."."""
    m = re.search(r"[。！？.!?；;]+$", sentence)
    if m:
        return f"{sentence[: m.start()]}[{n}]{m.group(0)}"
    return f"{sentence}[{n}]"


_CJK_EDGE = re.compile(r"[\u3000-\u9fff\uff00-\uffef]")
_ENDED = re.compile(r"(?:[。！？.!?；;：:…]|\n.*)(?:\[\d{1,3}\])*$")


def end_sentence(text: str) -> str:
    """`text` with a full stop after its markers when it ends without one ("住宿上限：600 元/晚[1]" is a
    table cell's answer): the next sentence must not run on from it."""
    if not text or _ENDED.search(text):
        return text
    return text + ("。" if is_chinese(text) else ".")


def close_clause(sentence: str) -> str:
    """A clause cut at a semicolon ends an answer's sentence with a full stop: "…400 元；" -> "…400 元。"."""
    if sentence.endswith("；"):
        return sentence[:-1] + "。"
    if sentence.endswith(";"):
        return sentence[:-1] + "."
    return sentence


def join_sentences(sentences: list[str]) -> str:
    """Join sentences: no space between Chinese sentences, one space otherwise, a line break after a list."""
    text, prev = "", ""
    for s in sentences:
        if text and "\n" in prev:  # the previous sentence ends with its list items
            text, prev = text + "\n" + s, s
            continue
        prev = s
        cjk_edge = text and (
            _CJK_EDGE.match(text.rstrip("]0123456789[")[-1:] or "") or _CJK_EDGE.match(s[:1])
        )
        text += s if not text or cjk_edge else " " + s
    return text
