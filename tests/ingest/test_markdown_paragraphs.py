"""A hard-wrapped Markdown paragraph is read as the one paragraph Markdown renders (a sentence never cut at
a line break: "please submit an / [IT ticket](…) / for a remote workers home kit."), while every line that
starts a block — headings, list and clause items, articles, table rows, quotes, HTML, fenced code — stays
its own."""

from __future__ import annotations

from pathlib import Path

from lore.ingest.loaders import load_file
from lore.ingest.loaders.text import unwrap_soft_breaks

HANDBOOK = Path(__file__).resolve().parents[3] / "shared" / "datasets" / "enterprise_dev" / "docs" / "en"


def test_a_wrapped_paragraph_is_one_line_and_blocks_keep_theirs() -> None:
    text = (
        "第十四条 职工有下列情形之一的：\n(一)在工作\n时间内；\n(二)患病的\n\n"
        "- a\n  continued\n- b\n\n```\ncode\nline\n```\n| a | b |\n| c | d |\n# H\n"
        "text one\ntext two  \nhard\\\nbreak\n> quote\n<div>x</div>\n1. first\n2. second"
    )
    assert unwrap_soft_breaks(text).split("\n") == [
        "第十四条 职工有下列情形之一的：",
        "(一)在工作时间内；",  # no space between two CJK characters
        "(二)患病的",
        "",
        "- a continued",
        "- b",
        "",
        "```",
        "code",
        "line",
        "```",
        "| a | b |",
        "| c | d |",
        "# H",
        "text one text two  ",
        "hard\\",
        "break",
        "> quote",
        "<div>x</div>",
        "1. first",
        "2. second",
    ]


def test_a_real_handbook_page_keeps_its_sentences_whole(tmp_path: Path) -> None:
    (doc,) = load_file(HANDBOOK / "18f-equipment.md")
    text = "\n".join(s.text for s in doc.sections)
    assert "please submit an [IT ticket](" in text
    assert (
        ") for a remote workers home kit. The kit typically includes: a monitor, keyboard, mouse, headset"
        in text
    )
