"""`lore eval`: retrieval (Recall@k, MRR, nDCG), answers (cited, contains, refusals) and latency of a KB
on an eval set, with thresholds a CI job fails on. Retrieval is scored by `compare.score`, the function
the quality gate and `lore diff --eval` use."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from lore.eval.compare import EvalQuestion, score
from lore.eval.metrics import percentile
from lore.schema import Hit

Ask = Callable[[str], dict[str, Any]]
"""question -> the `end` payload of an ask (answer, refused, citations)."""


@dataclass(frozen=True)
class Thresholds:
    """Lowest (or highest, for latency) figures a run may show; None leaves a figure unchecked."""

    min_recall: float | None = None
    min_mrr: float | None = None
    min_ndcg: float | None = None
    min_cited: float | None = None
    min_contains: float | None = None
    min_refusal: float | None = None
    max_p95_ms: float | None = None


def evaluate(
    search: Callable[[str], Sequence[Hit]], questions: Sequence[EvalQuestion], k: int, ask: Ask | None = None
) -> dict[str, Any]:
    """Retrieval figures for the questions naming their files/documents; answer figures when `ask` is
    given."""
    ranked = [q for q in questions if q.retrieval]
    s = score(search, ranked, k) if ranked else None
    out: dict[str, Any] = {"k": k, "questions": len(questions), "retrieval": None, "answers": None}
    if s is not None:
        out["retrieval"] = {
            "questions": len(ranked),
            "recall": s["recall"],
            "mrr": s["mrr"],
            "ndcg": s["ndcg"],
            "latency_ms": _latency(s["latency_ms"]),
            "missed": [q.question for q, hit in zip(ranked, s["found"], strict=True) if not hit],
        }
    if ask is not None:
        out["answers"] = _answers(ask, questions)
    return out


def _answers(ask: Ask, questions: Sequence[EvalQuestion]) -> dict[str, Any]:
    """Share of answerable questions answered with citations (and citing an expected file), holding their
    expected phrases, refused wrongly; share of off-topic questions refused."""
    answerable = [q for q in questions if not q.refuse]
    off_topic = [q for q in questions if q.refuse]
    cited = cites_expected = contains = with_contains = false_refusals = refused = 0
    latency: list[float] = []
    problems: list[dict[str, str]] = []
    for q in questions:
        started = time.perf_counter()
        end = ask(q.question)
        latency.append((time.perf_counter() - started) * 1000)
        if "message" in end:  # an error event
            problems.append({"question": q.question, "problem": f"error: {end['message']}"})
            continue
        answer, was_refused = str(end.get("answer", "")), bool(end.get("refused"))
        files = {c.get("file") for c in end.get("citations", [])}
        if q.refuse:
            refused += was_refused
            if not was_refused:
                problems.append({"question": q.question, "problem": "answered an off-topic question"})
            continue
        if was_refused:
            false_refusals += 1
            problems.append({"question": q.question, "problem": "refused"})
            continue
        cited += bool(files)
        cites_expected += bool(files & q.files)
        if q.contains:
            with_contains += 1
            missing = [c for c in q.contains if c.lower() not in answer.lower()]
            contains += not missing
            if missing:
                problems.append({"question": q.question, "problem": f"answer lacks {missing}"})
    n = max(len(answerable), 1)
    return {
        "answerable": len(answerable),
        "cited": cited / n,
        "cites_expected_file": cites_expected / max(sum(1 for q in answerable if q.files), 1),
        "contains": contains / with_contains if with_contains else None,
        "false_refusals": false_refusals / n,
        "off_topic": len(off_topic),
        "refusal": refused / len(off_topic) if off_topic else None,
        "latency_ms": _latency(latency),
        "problems": problems,
    }


def check(result: dict[str, Any], t: Thresholds) -> list[str]:
    """The thresholds the result misses, as sentences (empty: it passes)."""
    r, a = result.get("retrieval") or {}, result.get("answers") or {}
    k = result["k"]
    checks = [
        (f"Recall@{k}", r.get("recall"), t.min_recall),
        (f"MRR@{k}", r.get("mrr"), t.min_mrr),
        (f"nDCG@{k}", r.get("ndcg"), t.min_ndcg),
        ("cited answers", a.get("cited"), t.min_cited),
        ("answers holding their phrases", a.get("contains"), t.min_contains),
        ("off-topic questions refused", a.get("refusal"), t.min_refusal),
    ]
    failures = []
    for name, value, minimum in checks:
        if minimum is None:
            continue
        if value is None:
            failures.append(
                f"{name}: not measured (the eval set or options give no such figure); minimum {minimum}"
            )
        elif value < minimum:
            failures.append(f"{name} is {value:.3f}, below the minimum {minimum:.3f}")
    if t.max_p95_ms is not None:
        worst = max((x["latency_ms"]["p95"] for x in (r, a) if x), default=0.0)
        if worst > t.max_p95_ms:
            failures.append(f"p95 latency is {worst:.0f} ms, above the maximum {t.max_p95_ms:.0f} ms")
    return failures


def thresholds_json(t: Thresholds) -> dict[str, float]:
    """The thresholds that were set."""
    return {k: v for k, v in asdict(t).items() if v is not None}


def to_markdown(result: dict[str, Any]) -> str:
    """A Markdown report of an eval run (for CI logs and pull requests)."""
    k = result["k"]
    lines = [
        f"# Eval — {result.get('kb', '')} version {result.get('version') or 'active'}",
        "",
        f"{result['questions']} questions, k={k}",
        "",
        "| figure | value |",
        "|---|---|",
    ]
    r, a = result.get("retrieval"), result.get("answers")
    if r:
        lines += [
            f"| Recall@{k} | {r['recall']:.3f} |",
            f"| MRR@{k} | {r['mrr']:.3f} |",
            f"| nDCG@{k} | {r['ndcg']:.3f} |",
            f"| search latency p50 / p95 (ms) | {r['latency_ms']['p50']:.0f} / {r['latency_ms']['p95']:.0f} "
            "|",
        ]
    if a:
        lines += [
            f"| cited answers | {a['cited']:.3f} |",
            f"| cites an expected file | {a['cites_expected_file']:.3f} |",
            f"| answers holding their phrases | {_fmt(a['contains'])} |",
            f"| false refusals | {a['false_refusals']:.3f} |",
            f"| off-topic refused ({a['off_topic']}) | {_fmt(a['refusal'])} |",
            f"| answer latency p50 / p95 (ms) | {a['latency_ms']['p50']:.0f} / {a['latency_ms']['p95']:.0f} "
            "|",
        ]
    failed = result.get("thresholds", {}).get("failed", [])
    lines += ["", f"Thresholds: **{'FAILED' if failed else 'passed'}**", *[f"- {f}" for f in failed]]
    if r and r["missed"]:
        lines += ["", f"## not found in the top {k}", *[f"- {q}" for q in r["missed"]]]
    if a and a["problems"]:
        lines += ["", "## answer problems", *[f"- {p['question']}: {p['problem']}" for p in a["problems"]]]
    return "\n".join(lines) + "\n"


def _latency(values: list[float]) -> dict[str, float]:
    return {"p50": round(percentile(values, 50), 1), "p95": round(percentile(values, 95), 1)}


def _fmt(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3f}"
