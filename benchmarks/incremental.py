"""Incremental builds: a full build of N files, a no-change rebuild, then 1% changed + 1% deleted + 1%
added, rebuilt incrementally and compared with a from-scratch build of the same files.

    python benchmarks/incremental.py --dataset ../shared/datasets/scifact --docs 1000 --files 500

The full build is the baseline (same process, fresh embedding cache); the other builds are printed
as a ratio of it. "embedded" counts texts the model embedded (cache misses), "written" counts
chunks written for the version. Equality: dense and BM25 top-10 (file, chunk index, text, score) for
training queries on the incremental KB's active version vs the scratch KB.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import time
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

from rich.console import Console
from rich.table import Table

from lore.config import load_settings
from lore.engine import Lore
from lore.retrieve.search import SearchOptions

console = Console()


def write_parts(docs: list[dict], folder: Path, files: int) -> list[Path]:
    """Split docs over `files` JSONL files, in order."""
    folder.mkdir(parents=True, exist_ok=True)
    per = max(1, len(docs) // files)
    paths = []
    for i in range(files):
        part = docs[i * per : (i + 1) * per] if i < files - 1 else docs[i * per :]
        path = folder / f"part_{i:04d}.jsonl"
        path.write_text("".join(json.dumps(d, ensure_ascii=False) + "\n" for d in part), encoding="utf-8")
        paths.append(path)
    return paths


def timed_build(lore: Lore, folder: Path, message: str) -> tuple[float, int, int]:
    """(seconds, texts the model embedded, chunks written) of one build + activation."""
    model = lore.embedder(lore.catalog.get_kb("kb")).model_id
    before = lore.cache.count(model)
    started = time.perf_counter()
    result = lore.build("kb", [folder], description=message, activate=True)
    seconds = time.perf_counter() - started
    failed = [f.error for f in result.report.files if f.status not in ("ingested", "skipped")]
    if failed:
        raise SystemExit(f"build failed: {failed[:3]}")
    return seconds, lore.cache.count(model) - before, result.version.counts["chunks_embedded"]


def ranked(lore: Lore, queries: list[str], mode: str) -> list[list[tuple]]:
    """Top-10 per query as (file, chunk index, text), canonical under ties: scores rounded to 4 places
    and equal scores ordered by passage, since chunk ids (and so row order) differ between the stores."""
    out = []
    for q in queries:
        hits = lore.search("kb", q, SearchOptions(mode, 50, 20))
        keyed = sorted(
            (-round(h.score, 4), h.chunk.file_path, h.chunk.chunk_index, h.chunk.text) for h in hits
        )
        out.append(keyed[:10])
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dataset", type=Path, default=Path("../shared/datasets/scifact"))
    ap.add_argument("--docs", type=int, default=1000)
    ap.add_argument("--files", type=int, default=500)
    ap.add_argument("--queries", type=int, default=100, help="training queries used for the equality check")
    ap.add_argument("--work", type=Path, default=Path("benchmarks/.cache/incremental"))
    ap.add_argument("--json-out", type=Path)
    args = ap.parse_args()

    lines = (args.dataset / "corpus.jsonl").read_text(encoding="utf-8").splitlines()
    n_change = max(1, args.files // 100)
    docs = [json.loads(x) for x in lines[: args.docs + n_change * max(1, args.docs // args.files)]]
    base, extra = docs[: args.docs], docs[args.docs :]
    queries = [
        json.loads(x)["text"]
        for x in (args.dataset / "queries_train.jsonl")
        .read_text(encoding="utf-8")
        .splitlines()[: args.queries]
    ]
    shutil.rmtree(args.work, ignore_errors=True)  # a fresh embedding cache: the full build is honest
    src = args.work / "src"
    paths = write_parts(base, src, args.files)

    lore = Lore(load_settings(home=args.work / "incremental"))
    lore.create_kb("kb")
    console.print(f"full build: {len(base)} docs in {args.files} files …", style="dim")
    full = timed_build(lore, src, "full")
    nochange = timed_build(lore, src, "no change")

    # 1% changed, 1% deleted, 1% added.
    for path in paths[:n_change]:
        rows = [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines()]
        rows[0]["text"] += " This abstract was revised after peer review."
        path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    for path in paths[-n_change:]:
        path.unlink()
    per = max(1, len(extra) // n_change)
    for i in range(n_change):
        (src / f"added_{i:04d}.jsonl").write_text(
            "".join(json.dumps(d, ensure_ascii=False) + "\n" for d in extra[i * per : (i + 1) * per]),
            encoding="utf-8",
        )
    onepct = timed_build(lore, src, "1% changed, deleted, added")

    scratch = Lore(load_settings(home=args.work / "scratch"))
    scratch.create_kb("kb")
    scratch.cache = (
        lore.cache
    )  # scratch is only for equality: share the embeddings (one live cache, no file copy)
    timed_build(scratch, src, "scratch")
    differing = {}
    for mode in ("dense", "bm25"):
        a, b = ranked(lore, queries, mode), ranked(scratch, queries, mode)
        differing[mode] = sum(x != y for x, y in zip(a, b, strict=True))
    equal = not any(differing.values())

    table = Table(
        title=f"Incremental builds — {len(base)} docs in {args.files} files; change = {n_change} files each "
        "changed / deleted / added"
    )
    for col in ("build", "seconds", "× full", "embedded", "chunks written"):
        table.add_column(col, justify="right" if col != "build" else "left")
    for label, (sec, emb, written) in (
        ("full (baseline)", full),
        ("no change", nochange),
        ("1% change", onepct),
    ):
        table.add_row(label, f"{sec:.2f}", f"{sec / full[0]:.3f}", str(emb), str(written))
    console.print(table)
    console.print(
        f"equal to a from-scratch build on {len(queries)} queries (dense and BM25 top-10, scores to 4 "
        f"places): {'yes' if equal else f'NO (queries that differ: {differing})'}"
    )
    out = {
        "docs": len(base),
        "files": args.files,
        "full_s": full[0],
        "nochange_s": nochange[0],
        "onepct_s": onepct[0],
        "nochange_embedded": nochange[1],
        "onepct_embedded": onepct[1],
        "onepct_written": onepct[2],
        "full_embedded": full[1],
        "equal_to_scratch": equal,
        "queries_compared": len(queries),
    }
    if args.json_out:
        args.json_out.write_text(json.dumps(out, indent=2), encoding="utf-8")
    lore.close()
    scratch.close()
    if not equal:
        sys.exit(1)


if __name__ == "__main__":
    main()
