"""Fit the evidence model (P(the KB answers the question)) on the development sets; write its coefficients.

Positives: each dev set's own questions asked of its own KB (CMRC 2018 dev, DRCD dev, English QA).
Negatives: Chinese off-topic user queries and SciFact *train* claims asked of every KB, and each dev set's
questions asked of the other sets' KBs. The `cross` model (a question in another language than its top
passage) is fit on those pairings that cross languages, plus translations (`benchmarks/data/crosslang`:
DRCD questions in English and English QA questions in Chinese as positives, off-topic user queries in
English as negatives); `--cross-only` asks only those and replaces only the `cross` model. Every
question id falls in one split by hash (`dev_split`): `fit` (40%) fits the logistic model, `threshold`
(20%) chooses the refusal threshold, `eval` (40%) is left for `benchmarks/answers.py --split eval`.
The SciFact test claims are never used here. Employees' own-words questions (`enterprise_dev`: regulations
and handbooks, one KB of both languages, its unanswerable questions as negatives) join the positives, each
row weighing `ENTERPRISE_WEIGHT`: few as they are, they are the questions that do not copy their passage.
`--same-language` skips the cross-language pairings and keeps the file's `cross` model (moved onto the new
threshold).

    python benchmarks/fit_evidence.py [--features benchmarks/out/evidence_features.jsonl] [--refit]
    LORE_RERANK__PROVIDER=ltr python benchmarks/fit_evidence.py --rerank-only \
        --features benchmarks/out/evidence_features_ltr.jsonl
    python benchmarks/fit_evidence.py --cross-only --features benchmarks/out/cross_features.jsonl
    python benchmarks/fit_evidence.py --same-language --cap 200 \
        --features benchmarks/out/evidence_features.jsonl
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from evidence_rows import collect

from lore.answer.evidence import MODEL_PATH

# An enterprise_dev row counts as this many rows in the fit (29 Chinese and 20 English answerable questions
# in its `fit` split against ~1700 reading-comprehension ones), chosen on the `threshold` split.
ENTERPRISE_WEIGHT = 16.0
# The features the shipped model uses; interactions let Chinese and English weigh coverage differently.
BASE = [
    "coverage",
    "key_coverage",
    "similarity",
    "agreement",
    "supporting",
    "no_key_terms",
    "zh",
    "zh_coverage",
    "zh_similarity",
    "coverage_x_similarity",
]
# The cross-language model: what the multilingual embedder sees, and what little the terms share.
CROSS_FEATURES = ["similarity", "margin", "margin_2", "coverage", "translated", "zh"]


def fit_logistic(
    x: np.ndarray,
    y: np.ndarray,
    l2: float = 1e-2,
    iters: int = 50,
    balanced: bool = True,
    weight: np.ndarray | None = None,
) -> np.ndarray:
    """L2 logistic regression (class-balanced unless told, rows weighed by `weight`) by Newton's method;
    returns [bias, weights...]."""
    xb = np.hstack([np.ones((len(x), 1)), x])
    w = np.zeros(xb.shape[1])
    sample = np.ones(len(y)) if weight is None else weight
    if balanced:
        pos = float((sample * y).sum() / sample.sum())
        sample = sample * np.where(y == 1, 0.5 / max(pos, 1e-9), 0.5 / max(1 - pos, 1e-9))
    reg = l2 * np.eye(xb.shape[1])
    reg[0, 0] = 0.0
    for _ in range(iters):
        p = 1 / (1 + np.exp(-np.clip(xb @ w, -30, 30)))
        grad = xb.T @ (sample * (p - y)) / len(y) + reg @ w
        hess = (xb * (sample * p * (1 - p))[:, None]).T @ xb / len(y) + reg
        step = np.linalg.solve(hess, grad)
        w -= step
        if np.abs(step).max() < 1e-8:
            break
    return w


def choose_threshold(p: np.ndarray, y: np.ndarray, lang: np.ndarray) -> float:
    """The threshold minimising the worst of each language's false-refusal and off-topic-answered rates."""
    best, best_t = 2.0, 0.5
    for t in np.arange(0.05, 0.951, 0.01):
        worst = 0.0
        for g in np.unique(lang):
            m = lang == g
            fr = float(np.mean(p[m & (y == 1)] < t)) if (m & (y == 1)).any() else 0.0
            fa = float(np.mean(p[m & (y == 0)] >= t)) if (m & (y == 0)).any() else 0.0
            worst = max(worst, fr, fa)
        if worst < best - 1e-9:
            best, best_t = worst, float(t)
    return round(best_t, 2)


def matrix(rows: list[dict], names: list[str]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    x = np.array([[r.get(n, 0.0) for n in names] for r in rows], dtype=float)
    return x, np.array([r["label"] for r in rows], dtype=float), np.array([r["lang"] for r in rows])


def row_weights(rows: list[dict]) -> np.ndarray:
    """Each row's weight in the fit: `ENTERPRISE_WEIGHT` for enterprise_dev's, 1 for the others."""
    return np.array([ENTERPRISE_WEIGHT if r["kb"] == "enterprise_dev" else 1.0 for r in rows])


def prob(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    """P(answerable) of each row under weights [bias, ...]."""
    return 1 / (1 + np.exp(-(x @ w[1:] + w[0])))


def scaled_fit(rows: list[dict], names: list[str]) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Weights [bias, ...] fit on the `fit` split and Platt-scaled on the `threshold` split, with the
    threshold split's features, labels and languages. The balanced, regularised fit ranks well but is
    under-confident; the unweighted a*z + b keeps the order and makes P match the observed share."""
    fit_rows = [r for r in rows if r["split"] == "fit"]
    x, y, _ = matrix(fit_rows, names)
    w = fit_logistic(x, y, weight=row_weights(fit_rows))
    xt, yt, lt = matrix([r for r in rows if r["split"] == "threshold"], names)
    a, b = fit_logistic((xt @ w[1:] + w[0])[:, None], yt, l2=0.0, balanced=False)[[1, 0]]
    return np.concatenate([[a * w[0] + b], a * w[1:]]), xt, yt, lt


def named(w: np.ndarray, names: list[str]) -> dict[str, float]:
    """A model's weights as stored in the model file."""
    return {
        "bias": round(float(w[0]), 5),
        **{n: round(float(v), 5) for n, v in zip(names, w[1:], strict=True)},
    }


def report_enterprise(rows: list[dict], names: list[str], w: np.ndarray, threshold: float) -> None:
    """enterprise_dev's `threshold` split at the threshold, per language: its own questions' false refusals
    and unanswerable answered, and the off-topic questions asked of its KB answered."""
    rows = [r for r in rows if r["kb"] == "enterprise_dev" and r["split"] == "threshold"]
    for g in ("en", "zh"):
        own = [r for r in rows if r["lang"] == g and r["source"] == "own"]
        off = [r for r in rows if r["lang"] == g and r["source"] != "own"]
        rates = []
        for label, group, refused in (("false refusals", own, True), ("unanswerable answered", own, False)):
            group = [r for r in group if r["label"] == int(refused)]
            if group:
                p = prob(matrix(group, names)[0], w)
                rates.append(f"{label} {np.mean((p < threshold) == refused):.3f} of {len(group)}")
        if off:
            rates.append(f"off-topic answered {np.mean(prob(matrix(off, names)[0], w) >= threshold):.3f}")
        print(f"enterprise_dev threshold split {g}: " + ", ".join(rates))


def report(name: str, p: np.ndarray, y: np.ndarray, lang: np.ndarray, threshold: float) -> None:
    """Each language's false-refusal and off-topic-answered rates on the threshold split."""
    for g in np.unique(lang):
        m = lang == g
        counts = f"{int((m & (y == 1)).sum())} answerable, {int((m & (y == 0)).sum())} not"
        print(
            f"{name}threshold split {g} ({counts}): "
            f"false refusals {np.mean(p[m & (y == 1)] < threshold):.3f}, "
            f"off-topic answered {np.mean(p[m & (y == 0)] >= threshold):.3f}"
        )


def fit(path: Path, out: Path) -> dict:
    rows = [r for r in map(json.loads, path.open(encoding="utf-8")) if "empty" not in r]
    rows = [r for r in rows if not r.get("cross")]  # the `cross` model's (fit_cross)
    fit_rows = [r for r in rows if r["split"] == "fit"]
    thr_rows = [r for r in rows if r["split"] == "threshold"]
    w, xt, yt, lt = scaled_fit(rows, BASE)
    weights, pt = named(w, BASE), prob(xt, w)
    threshold = choose_threshold(pt, yt, lt)
    # A language whose own best threshold is higher than the shared one keeps its own: never lower, so no
    # language answers more of its off-topic questions than the shared threshold would.
    own = {g: choose_threshold(pt[lt == g], yt[lt == g], lt[lt == g]) for g in np.unique(lt)}
    thresholds = {str(g): t for g, t in own.items() if t > threshold}
    models = {"base": weights}
    reranked = [r for r in fit_rows if "rerank" in r]
    if len(reranked) > 200:  # hits carried a reranker's score: a second model that uses it
        xr, yr, _ = matrix(reranked, [*BASE, "rerank"])
        models["rerank"] = named(fit_logistic(xr, yr), [*BASE, "rerank"])
    model = {
        "models": models,
        "threshold": threshold,
        "thresholds": thresholds,
        "trained_on": {
            "fit": len(fit_rows),
            "threshold": len(thr_rows),
            "sources": sorted({f"{r['kb']}<-{r['source']}" for r in rows}),
            "script": "benchmarks/fit_evidence.py",
            "enterprise_weight": ENTERPRISE_WEIGHT,
        },
    }
    out.write_text(json.dumps(model, indent=1) + "\n", encoding="utf-8")
    report("", pt, yt, lt, threshold)
    report_enterprise(rows, BASE, w, threshold)
    print(f"threshold {threshold}, per language {thresholds}; weights {weights}")
    return model


def fit_rerank(path: Path, out: Path) -> dict:
    """Fit the `rerank` model (the base features plus the reranker's calibrated score) on the rows asked
    with a reranker, Platt-scaled on the `threshold` split like the base model, and add it to the model
    file at `out`; its base model and threshold stay."""
    rows = [r for r in map(json.loads, path.open(encoding="utf-8")) if "rerank" in r and not r.get("cross")]
    names = [*BASE, "rerank"]
    w, xt, yt, lt = scaled_fit(rows, names)
    pt = prob(xt, w)
    model = json.loads(out.read_text(encoding="utf-8"))
    model["models"]["rerank"] = named(w, names)
    model["trained_on"]["rerank"] = {
        "fit": sum(r["split"] == "fit" for r in rows),
        "threshold": sum(r["split"] == "threshold" for r in rows),
        "sources": sorted({f"{r['kb']}<-{r['source']}" for r in rows}),
        "reranker": "ltr (the shipped model)",
    }
    out.write_text(json.dumps(model, indent=1) + "\n", encoding="utf-8")
    report("rerank, ", pt, yt, lt, float(model["threshold"]))
    report_enterprise(rows, names, w, float(model["threshold"]))
    print(f"rerank weights {model['models']['rerank']}")
    return model


OFFTOPIC_BUDGET = 0.03  # the 5% target less ~1.5 standard errors of a rate measured on ~250 questions


def lowest_safe_cut(p: np.ndarray, y: np.ndarray, lang: np.ndarray) -> float:
    """The lowest threshold at which no language answers more than OFFTOPIC_BUDGET of its off-topic."""
    cut = 1e-4
    for g in np.unique(lang):
        negatives = np.sort(p[(lang == g) & (y == 0)])[::-1]
        if len(negatives):  # just above the (k+1)-th highest off-topic P: k = the budget's count
            cut = max(cut, float(negatives[int(OFFTOPIC_BUDGET * len(negatives))]) + 1e-4)
    return round(min(cut, 0.95), 4)


def fit_cross(path: Path, out: Path) -> dict:
    """Fit the `cross` model on the cross-language rows and add it to the model file at `out`.

    Platt-scaled on the `threshold` split; then, per question language, the cut chosen there is moved
    onto the file's threshold: one refusal threshold (and a KB's calibration of it) serves every model.
    The cut is the lowest that answers at most `OFFTOPIC_BUDGET` of that language's off-topic questions:
    across languages the classes overlap too much for the balanced rule of `choose_threshold`."""
    rows = [r for r in map(json.loads, path.open(encoding="utf-8")) if r.get("cross")]
    if not rows:  # features recorded before the cross features existed: keep the file's cross model
        print("no cross-language rows: the cross model is left as it is")
        return json.loads(out.read_text(encoding="utf-8"))
    w, xt, yt, lt = scaled_fit(rows, CROSS_FEATURES)
    pt = prob(xt, w)
    model = json.loads(out.read_text(encoding="utf-8"))
    shared = float(model["threshold"])
    # Each question language's cut falls on the shared threshold: the bias moves English's, `zh` Chinese's.
    cuts = {g: lowest_safe_cut(pt[lt == g], yt[lt == g], lt[lt == g]) for g in ("en", "zh")}
    logit = lambda v: math.log(v / (1 - v))  # noqa: E731
    w[0] += logit(shared) - logit(cuts["en"])
    w[1 + CROSS_FEATURES.index("zh")] += logit(cuts["en"]) - logit(cuts["zh"])
    pt = prob(xt, w)
    model["models"]["cross"] = named(w, CROSS_FEATURES)
    model["trained_on"]["cross"] = {
        "fit": sum(r["split"] == "fit" for r in rows),
        "threshold": sum(r["split"] == "threshold" for r in rows),
        "positives": sum(r["split"] == "fit" and r["label"] == 1 for r in rows),
        "sources": sorted({f"{r['kb']}<-{r['source']}" for r in rows}),
        "cuts_on_threshold_split": cuts,
    }
    out.write_text(json.dumps(model, indent=1) + "\n", encoding="utf-8")
    report("cross, ", pt, yt, lt, shared)
    print(f"cross cuts {cuts} -> {shared}; weights {model['models']['cross']}")
    return model


def keep_cross(old: dict, out: Path) -> dict:
    """Put `old`'s `cross` model back into the model file at `out`, its bias (and `zh` weight) moved so
    that each question language's cut falls on its new threshold as it fell on the old one."""
    model = json.loads(out.read_text(encoding="utf-8"))
    cross = dict(old["models"]["cross"])
    logit = lambda v: math.log(v / (1 - v))  # noqa: E731
    zh_new = float(model.get("thresholds", {}).get("zh", model["threshold"]))
    zh_old = float(old.get("thresholds", {}).get("zh", old["threshold"]))
    shift = logit(zh_new) - logit(float(model["threshold"])) - logit(zh_old) + logit(float(old["threshold"]))
    cross["zh"] = round(cross["zh"] + shift, 5)
    cross["bias"] = round(
        cross["bias"] + logit(float(model["threshold"])) - logit(float(old["threshold"])), 5
    )
    model["models"]["cross"] = cross
    model["trained_on"]["cross"] = old["trained_on"]["cross"]
    out.write_text(json.dumps(model, indent=1) + "\n", encoding="utf-8")
    return model


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--features", default="benchmarks/out/evidence_features.jsonl")
    p.add_argument("--home", default="benchmarks/.cache")
    p.add_argument("--out", default=str(MODEL_PATH))
    p.add_argument("--refit", action="store_true", help="fit from the stored features without asking again")
    p.add_argument("--cap", type=int, default=0, help="at most this many questions per pairing (0: all)")
    p.add_argument(
        "--rerank-only",
        action="store_true",
        help="ask with the reranker configured (LORE_RERANK__PROVIDER=ltr); fit only the `rerank` model",
    )
    p.add_argument(
        "--cross-only", action="store_true", help="ask only the cross-language pairings; refit only `cross`"
    )
    p.add_argument(
        "--same-language",
        action="store_true",
        help="ask only the same-language pairings; refit `base` (and `rerank` when the hits carry its "
        "score), keep `cross`",
    )
    args = p.parse_args()
    features_path = Path(args.features)
    features_path.parent.mkdir(parents=True, exist_ok=True)
    if not args.refit:
        same = args.rerank_only or args.same_language
        collect(features_path, Path(args.home), args.cap, args.cross_only, same_language=same)
    if args.same_language:
        old = json.loads(Path(args.out).read_text(encoding="utf-8"))
        fit(features_path, Path(args.out))
        if any("rerank" in r for r in map(json.loads, features_path.open(encoding="utf-8"))):
            fit_rerank(features_path, Path(args.out))
        keep_cross(old, Path(args.out))
    elif args.rerank_only:
        fit_rerank(features_path, Path(args.out))
    elif args.cross_only:
        fit_cross(features_path, Path(args.out))
    else:
        fit(features_path, Path(args.out))
        fit_cross(features_path, Path(args.out))


if __name__ == "__main__":
    main()
