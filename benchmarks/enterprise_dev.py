"""The `enterprise_dev` loader of `answers.py`: a folder of `docs/<lang>/*.md` and `questions.jsonl`.

All documents go into one KB (cross-language questions need both languages). A follow-up (`kind` =
`followup`, its `context` the previous question) is asked in a session after that question: it is made
standalone from the history the way the service does (`standalone_question`). Scoring: the gold quote
(normalised, without HTML tags) in the answer; cited = a cited passage holds the gold quote; file cited =
a cited passage comes from the gold file; unanswerable questions count as off-topic (refused or not).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from lore.agent.rewrite import standalone_question
from lore.answer.qtypes import question_type
from lore.engine import Lore

_MARKUP = re.compile(r"<[^>]+>|\|")


def is_enterprise(folder: Path) -> bool:
    """A folder laid out like enterprise_dev (docs/ and questions.jsonl), not a BEIR folder."""
    return (folder / "docs").is_dir() and (folder / "questions.jsonl").is_file()


def load_questions(folder: Path, langs: list[str] | None = None) -> list[dict[str, Any]]:
    """The questions in file order (a follow-up's context comes before it), optionally of some languages."""
    rows = [json.loads(x) for x in (folder / "questions.jsonl").open(encoding="utf-8") if x.strip()]
    return [r for r in rows if not langs or r["lang"] in langs]


def ask_row(lore: Lore, kb: str, source: str, q: dict[str, Any], ask, norm) -> dict[str, Any]:
    """One question's row: asked alone, or as a follow-up after its context in the same session."""
    question = q["question"]
    if q.get("context"):
        history = [{"role": "user", "content": q["context"]}]
        question = standalone_question(q["question"], history, lore.llm).query
    end = ask(lore, kb, question)
    answerable = q.get("gold_quote") is not None
    row: dict[str, Any] = {
        "source": source,
        "answerable": answerable,
        "lang": q["lang"],
        "kind": q["kind"],
        "type": question_type(q["question"]) or "other",
        "p": end["evidence_confidence"],
        "refused": end["refused"],
        "disagree": end.get("consistent") is False,
        "id": q["_id"],
        "question": q["question"],
        "asked": question,
        "answer": end["answer"],
        "cited_files": [c.get("file") for c in end["citations"]],
        "cited_texts": [c.get("text") for c in end["citations"]],
        "reasons": (end.get("evidence") or {}).get("reasons", []),
    }
    if answerable:
        row.update(gold=[q["gold_quote"]], gold_file=q["gold_file"])
    if answerable and not end["refused"]:
        quote = _key(q["gold_quote"], norm)
        row["contains"] = quote in _key(re.sub(r"\[\d+\]", "", end["answer"]), norm)
        row["cited"] = any(quote in _key(c.get("text") or "", norm) for c in end["citations"])
        row["file_cited"] = any(_same_file(c.get("file") or "", q["gold_file"]) for c in end["citations"])
    return row


def _key(text: str, norm) -> str:
    """`norm`ed text without HTML tags and table bars: a quote cut from an HTML table (`<td>` cells)
    matches the cell text however the chunker wrote the row."""
    return norm(_MARKUP.sub(" ", text))


def _same_file(cited: str, gold: str) -> bool:
    # Files are ingested from the dataset folder, so a name is `docs/<lang>/<file>`; gold is `<lang>/<file>`.
    return cited == gold or cited.endswith("/" + gold)
