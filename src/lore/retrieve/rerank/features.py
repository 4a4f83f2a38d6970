"""Features of first-stage candidates for the learned reranker: dense/BM25 scores and ranks relative to
the candidate list, query-term coverage (chunk, title, parent), proximity, chunk position,
document-level aggregation and the chunk's kind (prose, table row, FAQ) with its column-name and cell
matches. The `doc_*` features aggregate a chunk's siblings in the same passage (`passage_key`: in the
training sets a passage is one parent; in a statute or handbook, one article or section of a parent
window). Everything is relative to the query's own list, so the model carries over between corpora,
languages and score scales."""

from __future__ import annotations

import itertools
import math
import re
import unicodedata
from collections.abc import Sequence
from functools import lru_cache

import numpy as np
import Stemmer

from lore.lexical import CJK, is_chinese
from lore.lexical.tokenize import STOP_WORDS
from lore.schema import Chunk, Hit
from lore.store.fusion import RRF_K

DEPTH = 50  # first-stage ranks beyond this count as "not in that list" (the default recall depth)

_LISTS = [
    "dense",
    "dense_gap",
    "dense_z",
    "dense_rank",
    "bm25_ratio",
    "bm25_z",
    "bm25_rank",
]
"""Features of a chunk's place in the dense and BM25 lists."""
FEATURES = [
    *_LISTS,
    "rrf",
    "fused_rank",
    "cover",
    "cover_idf",
    "title_cover",
    "parent_cover_idf",
    "bigram",
    "span",
    "chunk_index",
    "chunk_len",
    "doc_chunks",
    "doc_dense_max",
    "doc_bm25_max",
    "doc_rrf_sum",
    "doc_cover_idf",
    "q_len",
    "zh",
    "table_row",
    "faq",
    "field_cover",
    "cell_cover",
    "title_cover_idf",
]
COMPONENTS = [*_LISTS, "doc_dense_max", "doc_bm25_max"]
"""Features read from the dense and BM25 lists; a store that returns only a fused list (no component
scores) leaves them NaN and the model ranks from the fused score, the fused rank and the text features."""
_CELL = re.compile(r"(?:^|;\s*)([^:;]{1,80}):\s*([^;]*)")


_WH = re.compile(
    r"^\s*(what|which|who|whom|whose|when|where|why|how|is|are|was|were|do|does|did|can|could|should"
    r"|will|would|has|have|had)\b",
    re.IGNORECASE,
)
_ZH_ASK = re.compile(r"[吗呢]\s*$|什么|哪|谁|几|多少|怎么|怎样|为什么|为何|如何|是否|何时|多久|多长")


def passage_key(chunk: Chunk) -> str:
    """The passage a chunk belongs to: its parent window and its heading path.

    A parent window of a statute or handbook holds several articles or sections, each its own answer; in
    the training sets (one heading path per record) a passage is one parent.
    """
    return "\x1f".join([chunk.parent_id, *chunk.heading_path])


def is_question(query: str) -> bool:
    """A question (English or Chinese), as opposed to a statement or a list of key words."""
    q = query.strip()
    return q.endswith(("?", "？")) or bool(_WH.match(q)) or (is_chinese(q) and bool(_ZH_ASK.search(q)))


_RUNS = re.compile(rf"([{CJK}]+)|([^\W_{CJK}]+)")
_STEM = Stemmer.Stemmer("english")


@lru_cache(maxsize=8192)
def _tokens(text: str) -> tuple[str, ...]:
    """Matching terms, cheap enough for 50 candidates and their parents per query: CJK runs as character
    bigrams (no dictionary segmentation), other words lower-cased, stop words dropped, stemmed."""
    out: list[str] = []
    words: list[int] = []
    if not unicodedata.is_normalized("NFKC", text):
        text = unicodedata.normalize("NFKC", text)
    for cjk, word in _RUNS.findall(text.lower()):
        if cjk:
            out.extend(map(str.__add__, cjk[:-1], cjk[1:]) if len(cjk) > 1 else (cjk,))
        elif word not in STOP_WORDS:
            words.append(len(out))
            out.append(word)
    for i, stem in zip(words, _STEM.stemWords([out[i] for i in words]), strict=True):
        out[i] = stem
    return tuple(out)


@lru_cache(maxsize=4096)
def _term_set(text: str) -> frozenset[str]:
    return frozenset(_tokens(text))


def _z(values: np.ndarray) -> np.ndarray:
    ok = ~np.isnan(values)
    out = np.full_like(values, np.nan)
    if ok.sum() > 1:
        v = values[ok]
        out[ok] = (v - v.mean()) / (v.std() + 1e-6)
    elif ok.any():
        out[ok] = 0.0
    return out


def _span(positions: dict[str, list[int]]) -> float:
    """Shortest window (in tokens) holding one occurrence of every matched term, over matched terms."""
    if len(positions) < 2:
        return 1.0 if positions else math.nan
    events = sorted((p, t) for t, ps in positions.items() for p in ps)
    need, best, left = len(positions), math.inf, 0
    count: dict[str, int] = {}
    for pos, term in events:
        count[term] = count.get(term, 0) + 1
        while len(count) == need:
            best = min(best, pos - events[left][0] + 1)
            lt = events[left][1]
            count[lt] -= 1
            if not count[lt]:
                del count[lt]
            left += 1
    return best / need


def fields(text: str) -> list[tuple[str, str]]:
    """The (column name, cell value) pairs of a table-row chunk ("name: value; name: value")."""
    return [(m.group(1).strip(), m.group(2).strip()) for m in _CELL.finditer(text)]


def _kind_features(hit: Hit, q_set: set[str], idf: dict[str, float], idf_total: float) -> tuple[float, ...]:
    """(table_row, faq, field_cover, cell_cover): idf-weighted shares of the query's terms found in a
    table row's column names and in its cell values (NaN for other kinds)."""
    kind = hit.chunk.source_type
    if kind != "table_row":
        return (0.0, float(kind == "faq"), math.nan, math.nan)
    pairs = fields(hit.chunk.text)
    names = _term_set(" ".join(n for n, _ in pairs)) & q_set
    cells = _term_set(" ".join(v for _, v in pairs)) & q_set
    return (
        1.0,
        0.0,
        sum(idf[t] for t in names) / idf_total,
        sum(idf[t] for t in cells) / idf_total,
    )


def _fused_scores(hits: Sequence[Hit]) -> np.ndarray:
    """The store's own RRF scores when it reports no component ranks (Milvus hybrid fuses inside the
    server with the same k); a non-RRF scale falls back to 1 / (k + fused rank)."""
    scores = np.array([h.score for h in hits], dtype=np.float64)
    if len(scores) and np.all((scores >= 0) & (scores <= 2.0 / (RRF_K + 1) + 1e-9)):
        return scores
    return 1.0 / (RRF_K + np.arange(1, len(hits) + 1, dtype=np.float64))


def fused_only(rows: np.ndarray) -> np.ndarray:
    """The same candidates as a store without component ranks sees them (training augmentation)."""
    out = rows.copy()
    out[:, [FEATURES.index(f) for f in COMPONENTS]] = np.nan
    return out


def candidate_features(query: str, hits: Sequence[Hit]) -> np.ndarray:
    """A (len(hits), len(FEATURES)) float32 matrix; NaN where a feature does not apply."""
    n = len(hits)
    q_terms = list(dict.fromkeys(_tokens(query)))
    q_set = set(q_terms)
    dense = np.array(
        [
            h.dense_score if h.dense_score is not None and (h.dense_rank or 0) <= DEPTH else np.nan
            for h in hits
        ],
        dtype=np.float64,
    )
    bm25 = np.array(
        [h.bm25_score if h.bm25_score is not None and (h.bm25_rank or 0) <= DEPTH else np.nan for h in hits],
        dtype=np.float64,
    )
    d_rank = np.array(
        [h.dense_rank if not np.isnan(dense[i]) else np.nan for i, h in enumerate(hits)], dtype=np.float64
    )
    b_rank = np.array(
        [h.bm25_rank if not np.isnan(bm25[i]) else np.nan for i, h in enumerate(hits)], dtype=np.float64
    )
    rrf = np.nan_to_num(1 / (RRF_K + d_rank), nan=0.0) + np.nan_to_num(1 / (RRF_K + b_rank), nan=0.0)
    if all(h.dense_rank is None and h.bm25_rank is None for h in hits):
        rrf = _fused_scores(hits)
    body = [_tokens(h.chunk.text) for h in hits]
    body_sets = [set(b) for b in body]
    df: dict[str, int] = {t: sum(t in b for b in body_sets) for t in q_terms}
    idf = {t: math.log((n + 1) / (df[t] + 0.5)) for t in q_terms}
    idf_total = sum(idf.values()) or 1.0
    rows = np.full((n, len(FEATURES)), np.nan, dtype=np.float64)
    col = {name: i for i, name in enumerate(FEATURES)}
    bm_max = np.nanmax(bm25) if not np.all(np.isnan(bm25)) else np.nan
    rows[:, col["dense"]] = dense
    rows[:, col["dense_gap"]] = dense - (np.nanmax(dense) if not np.all(np.isnan(dense)) else np.nan)
    rows[:, col["dense_z"]] = _z(dense)
    rows[:, col["dense_rank"]] = d_rank
    rows[:, col["bm25_ratio"]] = bm25 / bm_max if bm_max and bm_max > 0 else np.nan
    rows[:, col["bm25_z"]] = _z(bm25)
    rows[:, col["bm25_rank"]] = b_rank
    rows[:, col["rrf"]] = rrf * RRF_K
    rows[:, col["fused_rank"]] = np.arange(1, n + 1)
    bigrams = set(itertools.pairwise(q_terms)) if len(q_terms) > 1 else set()
    docs = [passage_key(h.chunk) for h in hits]
    doc_terms: dict[str, set[str]] = {}
    for i, (h, toks) in enumerate(zip(hits, body, strict=True)):
        tset = body_sets[i] & q_set
        doc_terms.setdefault(docs[i], set()).update(tset)
        rows[i, col["cover"]] = len(tset) / len(q_set) if q_set else np.nan
        rows[i, col["cover_idf"]] = sum(idf[t] for t in tset) / idf_total
        head = " ".join([h.chunk.title or "", *h.chunk.heading_path])
        head_terms = _term_set(head) & q_set if head.strip() else None
        rows[i, col["title_cover"]] = (
            len(head_terms) / len(q_set) if q_set and head_terms is not None else np.nan
        )
        rows[i, col["title_cover_idf"]] = (
            sum(idf[t] for t in head_terms) / idf_total if head_terms is not None else np.nan
        )
        parent = _term_set(h.chunk.parent_text) & q_set if h.chunk.parent_text else tset
        rows[i, col["parent_cover_idf"]] = sum(idf[t] for t in parent) / idf_total
        if bigrams:
            rows[i, col["bigram"]] = len(bigrams & set(itertools.pairwise(toks))) / len(bigrams)
        positions: dict[str, list[int]] = {}
        for p, t in enumerate(toks):
            if t in q_set:
                positions.setdefault(t, []).append(p)
        rows[i, col["span"]] = _span(positions)
        rows[i, col["chunk_index"]] = h.chunk.chunk_index
        rows[i, col["chunk_len"]] = len(toks)
        rows[i, col["table_row"] : col["cell_cover"] + 1] = _kind_features(h, q_set, idf, idf_total)
    for doc in set(docs):
        idx = [i for i, d in enumerate(docs) if d == doc]
        rows[idx, col["doc_chunks"]] = len(idx)
        sub = dense[idx]
        rows[idx, col["doc_dense_max"]] = np.nanmax(sub) if not np.all(np.isnan(sub)) else np.nan
        sub = rows[idx, col["bm25_ratio"]]
        rows[idx, col["doc_bm25_max"]] = np.nanmax(sub) if not np.all(np.isnan(sub)) else np.nan
        rows[idx, col["doc_rrf_sum"]] = rrf[idx].sum() * RRF_K
        rows[idx, col["doc_cover_idf"]] = sum(idf[t] for t in doc_terms[doc]) / idf_total
    rows[:, col["q_len"]] = len(q_terms)
    rows[:, col["zh"]] = float(is_chinese(query))
    return rows.astype(np.float32)
