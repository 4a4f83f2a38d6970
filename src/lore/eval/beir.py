"""Reading BEIR-format folders: corpus.jsonl, queries.jsonl, qrels.tsv."""

from __future__ import annotations

import csv
import json
from dataclasses import dataclass
from pathlib import Path

from lore.errors import LoreError


@dataclass
class BeirDataset:
    """Queries and relevance judgements of one split; the corpus stays on disk for ingestion."""

    root: Path
    queries: dict[str, str]
    qrels: dict[str, dict[str, int]]

    @property
    def corpus_path(self) -> Path:
        return self.root / "corpus.jsonl"


def load_beir(root: Path, split: str = "test") -> BeirDataset:
    """Load a BEIR folder; `split` "train" reads queries_train.jsonl / qrels_train.tsv if present."""
    suffix = "" if split == "test" else f"_{split}"
    queries_path, qrels_path = root / f"queries{suffix}.jsonl", root / f"qrels{suffix}.tsv"
    for p in (root / "corpus.jsonl", queries_path, qrels_path):
        if not p.exists():
            raise LoreError(f"{p}: missing (a BEIR folder needs corpus.jsonl, queries.jsonl, qrels.tsv)")
    qrels: dict[str, dict[str, int]] = {}
    with qrels_path.open(encoding="utf-8") as fh:
        for row in csv.reader(fh, delimiter="\t"):
            if not row or row[0] == "query-id":
                continue
            qid, did, score = row[0], row[1], int(row[2]) if len(row) > 2 else 1
            qrels.setdefault(qid, {})[did] = score
    queries = {}
    with queries_path.open(encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                q = json.loads(line)
                if q["_id"] in qrels:
                    queries[q["_id"]] = q["text"]
    return BeirDataset(root, queries, qrels)
