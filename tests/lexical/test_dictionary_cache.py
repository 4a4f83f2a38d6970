"""The derived CC-CEDICT dictionary is kept in the user's cache folder: what a later process reads from it
equals what is made from the dictionary, and an unreadable cache file is made again."""

from __future__ import annotations

from pathlib import Path

import pytest

from lore.lexical import bilingual


@pytest.fixture()
def cache_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    bilingual._dictionary.cache_clear()
    yield tmp_path
    bilingual._dictionary.cache_clear()


def test_the_cached_dictionary_equals_the_one_made_from_cccedict(cache_folder: Path) -> None:
    made = bilingual._dictionary()  # made, then written
    files = list(cache_folder.glob("lore/cedict-*.marshal"))
    assert len(files) == 1
    bilingual._dictionary.cache_clear()
    read = bilingual._dictionary()  # read back
    assert read == made and read is not made
    assert "年假" in read[1][bilingual._stemmed(["annual", "leave"])]


def test_a_broken_cache_file_is_made_again(cache_folder: Path) -> None:
    path = bilingual._dictionary_cache()
    path.parent.mkdir(parents=True)
    path.write_bytes(b"not marshal data")
    zh_en, _, _ = bilingual._dictionary()
    assert zh_en["报销"]  # made from the dictionary
    assert path.read_bytes() != b"not marshal data"  # and written whole again
