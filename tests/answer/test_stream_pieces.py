"""Clause-sized stream pieces of an answer known whole (extractive, refusals, direct replies)."""

from __future__ import annotations

import re

import pytest

from lore.answer.stream_pieces import stream_pieces

EN = (
    "Hardware can be returned for a full refund within 30 days of delivery, as long as it is in its "
    "original packaging with all accessories[1][2]. The refund is paid to the original payment method "
    "within 14 business days after we inspect the returned unit[1]. After 30 days, defects are handled "
    "under the warranty instead[1]."
)
ZH = "请在 OA 系统中提交休假申请，至少提前 3 个工作日提交，由直属经理审批[1]。LF-200 的保修期：24 个月[2]"
TABLE = "| 型号 | 载重 |\n|---|---|\n| LF-200 | 200 kg[1] |\n| LF-500 | 500 kg[2] |"


@pytest.mark.parametrize("text", [EN, ZH, TABLE, "Yes[1].", " a, b ", "x"])
def test_pieces_join_back_to_the_text(text: str) -> None:
    assert "".join(stream_pieces(text)) == text


def test_english_is_cut_after_clauses_and_between_words() -> None:
    pieces = stream_pieces(EN)
    assert len(pieces) >= 8
    assert "of delivery, " in pieces and "After 30 days, " in pieces  # clause ends
    for piece in pieces[:-1]:
        assert piece.endswith(" ")  # never inside a word, a number or a marker
    assert all(len(re.findall(r"\[\d+\]", p)) == p.count("[") for p in pieces)


def test_chinese_is_cut_after_its_punctuation_and_keeps_codes_whole() -> None:
    pieces = stream_pieces(ZH)
    assert pieces[:3] == ["请在 OA 系统中提交休假申请，", "至少提前 3 个工作日提交，", "由直属经理审批[1]。"]
    assert any(p.startswith("LF-200") for p in pieces)


def test_table_rows_are_pieces() -> None:
    assert stream_pieces(TABLE) == [line + "\n" for line in TABLE.split("\n")[:-1]] + [TABLE.split("\n")[-1]]


def test_a_short_clause_is_not_cut_and_nothing_is_lost() -> None:
    assert stream_pieces("Yes[1].") == ["Yes[1]."]
    assert stream_pieces("") == [""]
