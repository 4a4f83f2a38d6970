"""Issue 34 finding 6: a 1,990-character question of 248 product codes cost 28 s (an embedding and a
judgement per part, BM25 over ~750 query tokens, a search per unknown word). Its work is now capped by
settings (`answer.max_question_parts`, `retrieve.max_query_terms`) and the word check's probe budget; the
test counts the work units the real pipeline does on the real KB, not wall time."""

from __future__ import annotations

import random
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
import pytest

from lore.answer.evidence import MAX_WORD_PROBES
from lore.answer.pipeline import AskPipeline
from lore.config import load_settings
from lore.engine import Lore
from lore.retrieve.search import Retriever
from lore.store.base import StoreQuery
from tests.conftest import EXAMPLES

rng = random.Random(34)
CODES = " ".join(f"LF-{rng.randint(100, 999)}?" for _ in range(248))[:1990]


class RecordingStore:
    """The KB's real store; every search it is asked is kept."""

    def __init__(self, store: Any) -> None:
        self.store, self.queries = store, []

    def search(self, query: StoreQuery) -> list:
        self.queries.append(query)
        return self.store.search(query)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.store, name)


class CountingEmbedder:
    """The KB's real embedder; every text it embeds is kept."""

    def __init__(self, embedder: Any) -> None:
        self.inner, self.texts = embedder, []

    def embed_batch(self, texts: Sequence[str], kind: str) -> np.ndarray:
        self.texts.extend(texts)
        return self.inner.embed_batch(texts, kind)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


@pytest.fixture(scope="module")
def lore(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lore]:
    home = tmp_path_factory.mktemp("budget_home")
    lore = Lore(load_settings(home=home))
    lore.create_kb("hb")
    assert lore.ingest("hb", [EXAMPLES]).count("ingested") == 5
    yield lore
    lore.close()


def ask(lore: Lore, **answer: Any) -> tuple[dict, RecordingStore, CountingEmbedder]:
    real = lore.retriever("hb")
    store, embedder = RecordingStore(real.store), CountingEmbedder(real.embedder)
    retriever = Retriever(store, embedder, None, real.reranker)  # type: ignore[arg-type]
    settings = lore.settings.answer.model_copy(update=answer)
    events = list(
        AskPipeline(retriever, lore.generator("hb"), settings).run(
            CODES, lore.scoped("hb", lore.search_options())
        )
    )
    return {"type": events[-1].type, **events[-1].data}, store, embedder


def test_a_question_of_248_codes_judges_at_most_the_part_limit(lore: Lore) -> None:
    assert len(CODES) > 1900 and CODES.count("?") > 200
    end, store, embedder = ask(lore)
    assert end["type"] == "end" and end["refused"]  # no such codes in the handbook
    parts = lore.settings.answer.max_question_parts
    assert parts == 8 and len(embedder.texts) <= 1 + parts  # the question, then each part judged
    terms = lore.settings.retrieve.max_query_terms
    assert store.queries and all(len(set(q.tokens)) <= terms for q in store.queries)


def test_the_word_check_searches_at_most_its_probe_budget(lore: Lore) -> None:
    _, store, _ = ask(lore, evidence_threshold=0.0)  # evidence "sufficient": the unknown-word check runs
    probes = [q for q in store.queries if q.mode == "bm25"]  # one BM25 search per word looked up
    assert 0 < len(probes) <= MAX_WORD_PROBES
    assert len(store.queries) <= 2 + MAX_WORD_PROBES
