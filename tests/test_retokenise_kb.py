"""A knowledge base ingested by the accent-keeping tokenizer, opened by the current code: its BM25 index
is re-tokenised from the stored chunks (no re-embedding), and "Beyonce" finds "Beyoncé"."""

from __future__ import annotations

import importlib
import sqlite3
from pathlib import Path

import pytest

from lore.config import load_settings
from lore.engine import Lore
from lore.retrieve.search import SearchOptions

# The module, not the `tokenize` function lore.lexical exports under the same name.
lexical_tokenize = importlib.import_module("lore.lexical.tokenize")

DOC = """# Singers

Beyoncé Giselle Knowles-Carter (born September 4, 1981) is an American singer and songwriter.

# Composers

Frédéric François Chopin was a Polish composer and virtuoso pianist of the Romantic period.

# Refunds

The refund window is thirty days from the date of purchase.
"""


def _bm25_top(lore: Lore, kb: str, query: str) -> str:
    hits = lore.search(kb, query, SearchOptions(mode="bm25", top_k=3))
    return hits[0].chunk.text if hits else ""


def test_an_old_kb_finds_unaccented_names_after_it_is_opened(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "people.md").write_text(DOC, encoding="utf-8")
    home = tmp_path / "home"
    with monkeypatch.context() as old:
        old.setattr(lexical_tokenize, "fold", lambda word: word)  # the tokenizer before accents folded
        lore = Lore(load_settings(home=home))
        lore.create_kb("kb")
        assert lore.ingest("kb", [docs]).count("ingested") == 1
        assert "Beyoncé" not in _bm25_top(lore, "kb", "Beyonce")  # old tokens: no match yet
        lore.close()
    (store,) = [p for p in home.rglob("*.sqlite") if "embedded" in p.parts]
    db = sqlite3.connect(store)
    with db:  # a store written before the tokenizer version was recorded
        db.execute("DELETE FROM store_meta WHERE key = 'tokenizer'")
        vectors = dict(db.execute("SELECT chunk_id, vector FROM chunks"))
    db.close()

    lore = Lore(load_settings(home=home))
    try:
        assert "Beyoncé" in _bm25_top(lore, "kb", "Beyonce")  # only the name: no other word matches
        assert "Frédéric" in _bm25_top(lore, "kb", "Frederic")
    finally:
        lore.close()
    db = sqlite3.connect(store)
    assert dict(db.execute("SELECT chunk_id, vector FROM chunks")) == vectors  # nothing re-embedded
    db.close()
