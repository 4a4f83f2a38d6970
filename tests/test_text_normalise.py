"""The one normaliser keeps each caller's former semantics (search dedupe, ingest hashes, FAQ keys)."""

from __future__ import annotations

import re
import unicodedata

import pytest

from lore.text.normalise import normalise

SAMPLES = ["  Ａ  b\u3000C\tD\n", "Straße  ÉTÉ", "如何 申请 年假？", "a\u00a0b\x1cc", "x\u2003y", ""]


@pytest.mark.parametrize("text", SAMPLES)
def test_default_is_the_former_search_dedupe_key(text: str) -> None:
    assert normalise(text) == re.sub(r"\s+", " ", unicodedata.normalize("NFKC", text)).strip().lower()


@pytest.mark.parametrize("text", SAMPLES)
def test_without_width_is_the_former_ingest_hash_key(text: str) -> None:
    assert normalise(text, width=False) == " ".join(text.split()).lower()


def test_the_match_key_case_folds_and_drops_punctuation() -> None:
    assert normalise("Straße!", match_key=True) == "strasse"
    assert normalise("Straße!") == "straße!"
    assert normalise("如何 申请 年假？", match_key=True) == "如何申请年假"
