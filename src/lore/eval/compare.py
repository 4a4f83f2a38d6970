"""Base-vs-candidate comparison: file changes between version manifests and retrieval on an eval set."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lore.catalog import ManifestEntry
from lore.errors import LoreError
from lore.eval.metrics import mrr_at_k, ndcg_at_k, recall_at_k
from lore.schema import Hit


@dataclass(frozen=True)
class EvalQuestion:
    """One eval question and what counts as finding it: any of its files or document ids; for answers,
    phrases the answer must contain, or `refuse` for an off-topic question the KB must refuse."""

    question: str
    files: frozenset[str]
    documents: frozenset[str]
    contains: tuple[str, ...] = ()
    refuse: bool = False

    @property
    def retrieval(self) -> bool:
        """Whether the question names what answers it (off-topic ones do not)."""
        return bool(self.files or self.documents)

    def relevant(self, hit: Hit) -> str | None:
        """The relevance key a hit satisfies, if any."""
        if hit.chunk.file_path in self.files:
            return "f:" + hit.chunk.file_path
        if hit.chunk.document_id in self.documents:
            return "d:" + hit.chunk.document_id
        return None


def question_rows(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, object) of each non-blank JSONL line holding a non-empty "question"; else LoreError."""
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise LoreError(f"{path}:{n}: not JSON ({exc.msg})") from None
        if not isinstance(row, dict) or not str(row.get("question", "")).strip():
            raise LoreError(f'{path}:{n}: needs a non-empty "question"')
        yield n, row


def load_eval_set(path: Path) -> list[EvalQuestion]:
    """Read a JSONL eval set of {"question", "files": [...]} / {"documents": [...]} lines, optionally with
    "contains": [...] (phrases the answer holds), or {"question", "refuse": true} for off-topic ones."""
    if not path.is_file():
        raise LoreError(f"{path}: eval set not found")
    questions = []
    for n, row in question_rows(path):
        files, docs, contains = row.get("files", []), row.get("documents", []), row.get("contains", [])
        refuse = row.get("refuse", False) is True
        if not isinstance(files, list) or not isinstance(docs, list) or not (files or docs or refuse):
            raise LoreError(
                f'{path}:{n}: needs a list "files" or "documents" naming what answers it, '
                'or "refuse": true for a question the KB must refuse'
            )
        if not isinstance(contains, list) or not all(isinstance(c, str) and c.strip() for c in contains):
            raise LoreError(f'{path}:{n}: "contains" must be a list of non-empty strings')
        questions.append(
            EvalQuestion(
                row["question"].strip(),
                frozenset(map(str, files)),
                frozenset(map(str, docs)),
                tuple(c.strip() for c in contains),
                refuse,
            )
        )
    if not questions:
        raise LoreError(f"{path}: eval set has no questions")
    return questions


def score(
    search: Callable[[str], Sequence[Hit]], questions: Sequence[EvalQuestion], k: int
) -> dict[str, Any]:
    """Recall@k (share of each question's files/documents found), MRR@k and nDCG@k averaged over the
    questions that name what answers them, with each search's latency in ms."""
    recalls, rrs, ndcgs, found, latency = [], [], [], [], []
    for q in questions:
        if not q.retrieval:
            continue
        started = time.perf_counter()
        hits = search(q.question)
        latency.append((time.perf_counter() - started) * 1000)
        # Each hit ranked by what it satisfies (a file or document key), or by itself when nothing.
        ranked = [q.relevant(h) or "c:" + h.chunk.chunk_id for h in hits]
        relevant = dict.fromkeys([*("f:" + f for f in q.files), *("d:" + d for d in q.documents)], 1)
        recalls.append(recall_at_k(ranked, relevant, k))
        rrs.append(mrr_at_k(ranked, relevant, k))
        # A file found again further down gains nothing the second time.
        ndcgs.append(
            ndcg_at_k(
                [key if key not in ranked[:i] else f"again:{i}" for i, key in enumerate(ranked)], relevant, k
            )
        )
        found.append(rrs[-1] > 0)
    n = max(len(found), 1)
    return {
        "recall": sum(recalls) / n,
        "mrr": sum(rrs) / n,
        "ndcg": sum(ndcgs) / n,
        "found": found,
        "latency_ms": latency,
    }


def compare_scores(
    base: dict[str, Any] | None, cand: dict[str, Any], questions: Sequence[EvalQuestion], k: int
) -> dict[str, Any]:
    """Side-by-side figures plus the questions one version finds and the other does not."""
    questions = [q for q in questions if q.retrieval]
    out: dict[str, Any] = {
        "k": k,
        "questions": len(questions),
        "candidate": {"recall": cand["recall"], "mrr": cand["mrr"], "ndcg": cand["ndcg"]},
        "base": None,
    }
    if base is not None:
        out["base"] = {"recall": base["recall"], "mrr": base["mrr"], "ndcg": base["ndcg"]}
        out["lost"] = [
            q.question for q, b, c in zip(questions, base["found"], cand["found"], strict=True) if b and not c
        ]
        out["gained"] = [
            q.question for q, b, c in zip(questions, base["found"], cand["found"], strict=True) if c and not b
        ]
    return out


def diff_manifests(base: Mapping[str, ManifestEntry], cand: Mapping[str, ManifestEntry]) -> dict[str, Any]:
    """Files added, changed (content, chunk schema, reader or embedding model) and removed from base to
    candidate."""
    changed = []
    for path in sorted(set(base) & set(cand)):
        b, c = base[path], cand[path]
        why = [
            w
            for w, differs in (
                ("content", b.sha256 != c.sha256),
                ("chunk schema", _chunking(b.chunk_schema) != _chunking(c.chunk_schema)),
                ("reader", _reader(b.chunk_schema) != _reader(c.chunk_schema)),
                ("embedding model", b.embedding_model != c.embedding_model),
            )
            if differs
        ]
        if why:
            changed.append({"file": path, "why": why, "chunks": [b.chunk_count, c.chunk_count]})
    return {
        "added": sorted(set(cand) - set(base)),
        "changed": changed,
        "removed": sorted(set(base) - set(cand)),
        "unchanged": len(set(base) & set(cand)) - len(changed),
    }


def _chunking(schema: str | None) -> str:
    # A file's schema is the chunker's, then "+" and its reader's version when the reader declares one.
    return (schema or "").partition("+")[0]


def _reader(schema: str | None) -> str:
    return (schema or "").partition("+")[2]
