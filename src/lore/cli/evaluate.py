"""`lore eval`: a KB's retrieval and answer figures on an eval set, failing the exit code on thresholds."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.markdown import Markdown

from lore.cli.render import fail
from lore.engine import Lore
from lore.errors import LoreError
from lore.eval.compare import load_eval_set
from lore.eval.run import Thresholds, check, evaluate, thresholds_json, to_markdown
from lore.retrieve.search import SearchOptions
from lore.schema import Hit

console = Console()
Min = Annotated[float | None, typer.Option(min=0.0, max=1.0)]
MODES = ("dense", "bm25", "hybrid")


def search_options(
    lore: Lore,
    top_k: int | None,
    mode: str | None,
    recall_k: int | None,
    rerank: bool | None,
    rerank_k: int | None,
) -> SearchOptions:
    """The configured search with `lore search`'s overrides (None: as configured)."""
    if mode is not None and mode not in MODES:
        raise LoreError(f"--mode: must be dense, bm25 or hybrid, not {mode!r}")
    if rerank and lore.settings.rerank.provider == "none":
        raise LoreError('--rerank: no reranker configured ([rerank] provider = "none")')
    changes: dict[str, Any] = {"mode": mode, "recall_k": recall_k, "rerank": rerank, "rerank_k": rerank_k}
    return replace(lore.search_options(top_k), **{k: v for k, v in changes.items() if v is not None})


def eval_command(
    kb: Annotated[str, typer.Option("--kb", help="Knowledge base name.")],
    eval_set: Annotated[
        Path,
        typer.Option(
            "--set", help="JSONL: {question, files|documents, contains?} or {question, refuse: true}."
        ),
    ],
    version: Annotated[
        int | None, typer.Option("--version", help="Version to evaluate (default: active).")
    ] = None,
    k: Annotated[
        int | None, typer.Option("-k", help="Cut-off for Recall/MRR/nDCG (default: gate.eval_k).")
    ] = None,
    answers: Annotated[
        bool, typer.Option("--answers", help="Also ask every question and score the answers.")
    ] = False,
    mode: Annotated[
        str | None, typer.Option(help="dense | bm25 | hybrid (default: \\[retrieve] mode).")
    ] = None,
    recall_k: Annotated[
        int | None, typer.Option(min=1, help="Candidates recalled before rerank/cut (default: configured).")
    ] = None,
    rerank: Annotated[
        bool | None,
        typer.Option(
            "--rerank/--no-rerank",
            help="Re-score candidates with \\[rerank] provider (default: as configured).",
        ),
    ] = None,
    rerank_k: Annotated[
        int | None, typer.Option(min=1, help="Candidates re-scored (default: \\[rerank] rerank_k).")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
    markdown: Annotated[bool, typer.Option("--markdown", help="Print a Markdown report.")] = False,
    min_recall: Min = None,
    min_mrr: Min = None,
    min_ndcg: Min = None,
    min_cited: Min = None,
    min_contains: Min = None,
    min_refusal: Min = None,
    max_p95_ms: Annotated[float | None, typer.Option(min=0.0, help="Highest p95 latency (ms).")] = None,
) -> None:
    """Evaluate a knowledge base; exit code 1 when a --min-*/--max-* threshold is missed (for CI). The search
    options (--mode, --rerank, --recall-k, --rerank-k) apply to the searches and to the answers' retrieval."""
    thresholds = Thresholds(min_recall, min_mrr, min_ndcg, min_cited, min_contains, min_refusal, max_p95_ms)
    lore = Lore()
    try:
        questions = load_eval_set(eval_set)
        cut = k or lore.settings.gate.eval_k
        if k is not None and k < 1:
            raise LoreError("-k: must be at least 1")
        options = search_options(lore, cut, mode, recall_k, rerank, rerank_k)
        retriever, scoped = lore.retriever(kb), lore.scoped(kb, options, version)
        asked = search_options(lore, None, mode, recall_k, rerank, rerank_k)  # the answers' own top_k

        def search(question: str) -> list[Hit]:
            return retriever.search(question, scoped)

        def ask(question: str) -> dict[str, Any]:
            events = lore.ask(kb, question, asked, version=version)
            return next(e.data for e in events if e.type in ("end", "error"))

        result = evaluate(search, questions, cut, ask if answers else None)
    except LoreError as exc:
        fail(exc)
    failed = check(result, thresholds)
    result = {
        "kb": kb,
        "version": version,
        "search": {name: getattr(options, name) for name in ("mode", "recall_k", "rerank", "rerank_k")},
        **result,
        "thresholds": {"set": thresholds_json(thresholds), "failed": failed},
    }
    if as_json:
        print(json.dumps(result, ensure_ascii=False, indent=2))
    elif markdown:
        print(to_markdown(result), end="")
    else:
        console.print(Markdown(to_markdown(result)))
    lore.close()
    if failed:
        raise typer.Exit(1)
