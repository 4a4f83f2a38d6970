"""Load benchmark: N concurrent clients (SSE and WebSocket) asking questions of a real `lore serve`.

The server is a separate uvicorn process (`lore serve`) over the sample handbook with the extractive
generator; clients run in this process with asyncio. Baselines in the same run: `Lore.ask` called
directly in-process (no HTTP), and one HTTP client at a time.

    OPENBLAS_NUM_THREADS=1 python benchmarks/load.py --clients 50 --seconds 60 \
        --json-out benchmarks/out/load.json

`--in-process-only --baseline-seconds 60`: only the in-process row, with this process's CPU ms per answer
(the per-request work; to compare trees, put each tree's `src` first on PYTHONPATH).

On real servers: `--replicas 2 --backend milvus --catalog postgresql` starts a `milvus-lite server`, makes a
PostgreSQL database (127.0.0.1:5432, dropped afterwards) and runs two `lore serve` processes with their own
homes, one shared storage dir and Redis (`--redis`); the clients are spread over the replicas. The same run
measures one replica alone on the same servers (the single-process row).
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import websockets
from rich.console import Console
from rich.table import Table

import lore as lore_module
from lore.config import load_settings
from lore.engine import Lore
from lore.eval.metrics import percentile

EXAMPLES = Path(__file__).resolve().parents[1] / "examples" / "handbook"
QUESTIONS = [
    "What is the refund window?",
    "报销需要什么材料？",
    "LF-200 的保修期多久？",
    "一线城市住宿上限是多少？",
    "How many days per week can I work remotely?",
    "年假有几天？怎么申请？",
    "如何重置 VPN 密码？",
    "Who won the 1998 World Cup?",  # refused: the pipeline's other path
]


@dataclass
class Stats:
    """Latencies and errors of one run."""

    first_ms: list[float] = field(default_factory=list)
    end_ms: list[float] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    seconds: float = 0.0
    cpu_ms: list[float] = field(default_factory=list)  # in-process only: this process's CPU per request

    def row(self) -> dict[str, float | int]:
        n = len(self.end_ms)
        return {
            "requests": n,
            "errors": len(self.errors),
            "rps": round(n / self.seconds, 2) if self.seconds else 0,
            "p50_first_ms": round(percentile(self.first_ms, 50), 1) if n else 0,
            "p95_first_ms": round(percentile(self.first_ms, 95), 1) if n else 0,
            "p50_end_ms": round(percentile(self.end_ms, 50), 1) if n else 0,
            "p95_end_ms": round(percentile(self.end_ms, 95), 1) if n else 0,
            **({"cpu_ms_mean": round(sum(self.cpu_ms) / n, 1)} if self.cpu_ms else {}),
            **({"cpu_ms_p50": round(percentile(self.cpu_ms, 50), 1)} if self.cpu_ms else {}),
        }


def question(counter: itertools.count) -> str:
    # A different text per request, so the query-embedding cache does not turn the load into cache hits.
    i = next(counter)
    return f"{QUESTIONS[i % len(QUESTIONS)]} (#{i})"


async def sse_client(url: str, key: str, stop: float, stats: Stats, counter: itertools.count) -> None:
    async with httpx.AsyncClient(
        base_url=url, headers={"Authorization": f"Bearer {key}"}, timeout=300
    ) as http:
        while time.perf_counter() < stop:
            t0, first, last = time.perf_counter(), None, None
            try:
                async with http.stream(
                    "POST", "/api/ask", json={"kb": "hb", "question": question(counter), "new_session": False}
                ) as r:
                    if r.status_code != 200:
                        stats.errors.append(f"sse HTTP {r.status_code}")
                        continue
                    async for line in r.aiter_lines():
                        if line.startswith("event: "):
                            first = first or time.perf_counter()
                            last = line[7:]
            except httpx.HTTPError as exc:
                stats.errors.append(f"sse {type(exc).__name__}: {exc}")
                continue
            _record(stats, t0, first, last, "sse")


async def ws_client(url: str, key: str, stop: float, stats: Stats, counter: itertools.count) -> None:
    try:
        async with websockets.connect(
            url.replace("http", "ws", 1) + "/api/stream",
            additional_headers={"Authorization": f"Bearer {key}"},
            open_timeout=60,
            max_size=None,
        ) as ws:
            while time.perf_counter() < stop:
                t0, first, last = time.perf_counter(), None, None
                await ws.send(json.dumps({"kb": "hb", "question": question(counter), "new_session": False}))
                while last not in ("end", "error"):
                    last = json.loads(await asyncio.wait_for(ws.recv(), 300))["event"]
                    first = first or time.perf_counter()
                _record(stats, t0, first, last, "websocket")
    except (OSError, websockets.WebSocketException, TimeoutError) as exc:
        stats.errors.append(f"websocket {type(exc).__name__}: {exc}")


def _record(stats: Stats, t0: float, first: float | None, last: str | None, transport: str) -> None:
    if last != "end" or first is None:
        stats.errors.append(f"{transport}: stream ended with {last!r}")
        return
    stats.first_ms.append((first - t0) * 1000)
    stats.end_ms.append((time.perf_counter() - t0) * 1000)


async def run_load(urls: list[str], key: str, clients: int, seconds: float, transports: list[str]) -> Stats:
    stats, counter = Stats(), itertools.count()
    stop = time.perf_counter() + seconds
    started = time.perf_counter()
    kinds = [transports[i % len(transports)] for i in range(clients)]
    await asyncio.gather(
        *[
            (sse_client if k == "sse" else ws_client)(urls[i % len(urls)], key, stop, stats, counter)
            for i, k in enumerate(kinds)
        ]
    )
    stats.seconds = time.perf_counter() - started
    return stats


def direct_baseline(lore: Lore, seconds: float) -> Stats:
    """`Lore.ask` in this process, one question at a time, no HTTP."""
    stats, counter = Stats(), itertools.count(10_000)
    started = time.perf_counter()
    while time.perf_counter() - started < seconds:
        t0, cpu0, first, last = time.perf_counter(), time.process_time(), None, None
        for event in lore.ask("hb", question(counter)):
            first = first or time.perf_counter()
            last = event.type
        _record(stats, t0, first, last, "direct")
        stats.cpu_ms.append((time.process_time() - cpu0) * 1000)
    stats.seconds = time.perf_counter() - started
    return stats


def start_server(home: Path, port: int, extra_env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("LORE_")},
        "LORE_HOME": str(home),
        "LORE_API__RATE_LIMIT_PER_MINUTE": "0",
        "LORE_CONFIG": str(home / "none.toml"),
        "OPENBLAS_NUM_THREADS": os.environ.get("OPENBLAS_NUM_THREADS", "1"),
        **(extra_env or {}),
    }
    lore_bin = Path(sys.executable).with_name("lore")
    return subprocess.Popen(
        [str(lore_bin), "serve", "--host", "127.0.0.1", "--port", str(port)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )


def servers(
    stack: ExitStack, work: Path, backend: str, catalog: str, redis_url: str, port: int
) -> dict[str, str]:
    """LORE_* settings for the chosen servers, starting a Milvus server / making a PostgreSQL database."""
    env = {"LORE_STORAGE__DIR": str(work / "files")}
    if backend == "milvus":
        milvus_port = port + 100
        log = (work / "milvus.log").open("wb")
        proc = subprocess.Popen(
            [
                str(Path(sys.executable).with_name("milvus-lite")),
                "server",
                "--data-dir",
                str(work / "milvus"),
                "--host",
                "127.0.0.1",
                "--port",
                str(milvus_port),
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        stack.callback(lambda: (proc.terminate(), proc.wait(30), log.close()))
        wait_port(milvus_port)
        env |= {"LORE_STORE__BACKEND": "milvus", "LORE_STORE__URI": f"http://127.0.0.1:{milvus_port}"}
    if catalog == "postgresql":
        from sqlalchemy import create_engine, text

        from lore.catalog.migrate import upgrade

        admin_url = "postgresql+psycopg://postgres@127.0.0.1:5432/postgres"
        name = f"lore_load_{uuid.uuid4().hex[:8]}"
        admin = create_engine(admin_url, isolation_level="AUTOCOMMIT")
        with admin.connect() as conn:
            conn.execute(text(f'CREATE DATABASE "{name}"'))

        def drop() -> None:
            with admin.connect() as conn:
                conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))

        stack.callback(drop)
        env["LORE_CATALOG_URL"] = admin_url.rsplit("/", 1)[0] + f"/{name}"
        migrated = create_engine(env["LORE_CATALOG_URL"])
        upgrade(migrated)  # the migration job's `lore db upgrade`: server catalogs refuse an old schema
        migrated.dispose()
    if redis_url:
        env |= {"LORE_REDIS__URL": redis_url, "LORE_REDIS__PREFIX": f"lore-load-{uuid.uuid4().hex[:8]}"}
    return env


def wait_port(port: int) -> None:
    import socket

    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.2)
    raise SystemExit(f"nothing listens on port {port} after 120 s")


def wait_up(proc: subprocess.Popen[str], url: str) -> None:
    deadline = time.monotonic() + 120
    while True:
        try:
            httpx.get(f"{url}/api/health", timeout=2)
            return
        except httpx.TransportError:
            if proc.poll() is not None:
                raise SystemExit(f"lore serve exited: {proc.stderr.read() if proc.stderr else ''}") from None
            if time.monotonic() > deadline:
                raise SystemExit("lore serve did not come up in 120 s") from None
            time.sleep(0.2)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--clients", type=int, default=50)
    p.add_argument("--seconds", type=float, default=60)
    p.add_argument("--transport", choices=["both", "sse", "websocket"], default="both")
    p.add_argument("--baseline-seconds", type=float, default=10)
    p.add_argument("--in-process-only", action="store_true", help="only the in-process single-client row")
    p.add_argument(
        "--warmup-seconds", type=float, default=10, help="unrecorded load first (warms every cache)"
    )
    p.add_argument("--port", type=int, default=8765)
    p.add_argument("--json-out", default="")
    p.add_argument("--replicas", type=int, default=1, help="lore serve processes (each its own home)")
    p.add_argument("--backend", choices=["embedded", "milvus"], default="embedded")
    p.add_argument("--catalog", choices=["sqlite", "postgresql"], default="sqlite")
    p.add_argument(
        "--redis", default="", help="Redis URL (default with --replicas > 1: redis://127.0.0.1:6379/0)"
    )
    args = p.parse_args()
    redis_url = args.redis or ("redis://127.0.0.1:6379/0" if args.replicas > 1 else "")

    work = Path(tempfile.mkdtemp(prefix="lore-load-"))
    with ExitStack() as stack:
        stack.callback(shutil.rmtree, work, True)
        env = servers(stack, work, args.backend, args.catalog, redis_url, args.port)
        overrides = {
            "catalog_url": env.get("LORE_CATALOG_URL", ""),
            "storage": {"dir": str(work / "files")},
            "store": {"backend": args.backend, "uri": env.get("LORE_STORE__URI", "")},
        }
        lore = Lore(load_settings(home=work / "home0", **overrides))  # type: ignore[arg-type]
        lore.create_kb("hb")
        lore.ingest("hb", [EXAMPLES])
        _, key = lore.catalog.create_api_key("default", ["staff"], name="load benchmark")
        if args.in_process_only:
            direct_baseline(lore, args.warmup_seconds)  # unrecorded: models loaded, caches warm
        direct = direct_baseline(lore, args.baseline_seconds)
        lore.close()
        if args.in_process_only:  # per-request work: run it with each tree's src first on PYTHONPATH
            print(json.dumps({"in_process": direct.row(), "lore": str(Path(lore_module.__file__).parent)}))
            return

        urls = []
        for i in range(args.replicas):
            url = f"http://127.0.0.1:{args.port + i}"
            proc = start_server(work / f"home{i}", args.port + i, env)
            stack.callback(lambda p=proc: (p.terminate(), p.wait(30)))
            wait_up(proc, url)
            urls.append(url)
        transports = ["sse", "websocket"] if args.transport == "both" else [args.transport]
        if args.warmup_seconds > 0:  # so neither measured run pays for cold caches the other one warmed
            asyncio.run(run_load(urls, key, 4 * len(urls), args.warmup_seconds, ["sse"]))
        one = asyncio.run(run_load(urls[:1], key, 1, args.baseline_seconds, ["sse"]))
        single = (
            asyncio.run(run_load(urls[:1], key, args.clients, args.seconds, transports))
            if args.replicas > 1
            else None
        )
        load = asyncio.run(run_load(urls, key, args.clients, args.seconds, transports))

    where = f"{args.backend} store, {args.catalog} catalog" + (", Redis" if redis_url else "")
    rows = [("Lore.ask in-process, 1 at a time (baseline)", 1, direct), ("HTTP SSE, 1 client", 1, one)]
    if single is not None:
        rows.append((f"HTTP {'+'.join(transports)}, {args.clients} clients, 1 replica", args.clients, single))
    rows.append(
        (
            f"HTTP {'+'.join(transports)}, {args.clients} clients, {args.replicas} replica(s)",
            args.clients,
            load,
        )
    )
    table = Table(
        "run",
        "clients",
        "requests",
        "errors",
        "req/s",
        "p50 first ms",
        "p95 first ms",
        "p50 end ms",
        "p95 end ms",
        "p50 end vs baseline",
        title=f"load: {args.seconds:g} s, extractive, {where}",
    )
    base = direct.row()["p50_end_ms"] or 1
    for name, clients, stats in rows:
        r = stats.row()
        table.add_row(
            name,
            str(clients),
            str(r["requests"]),
            str(r["errors"]),
            f"{r['rps']:.1f}",
            f"{r['p50_first_ms']:.0f}",
            f"{r['p95_first_ms']:.0f}",
            f"{r['p50_end_ms']:.0f}",
            f"{r['p95_end_ms']:.0f}",
            f"{r['p50_end_ms'] / base:.1f}x",
        )
    Console(width=200).print(table)
    print(
        "\n| run | clients | requests | errors | req/s | p50 first ms | p95 first ms | p50 end ms | p95 end "
        "ms |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for name, clients, stats in rows:
        r = stats.row()
        print(
            f"| {name} | {clients} | {r['requests']} | {r['errors']} | {r['rps']:.1f} | "
            f"{r['p50_first_ms']:.0f} | "
            f"{r['p95_first_ms']:.0f} | {r['p50_end_ms']:.0f} | {r['p95_end_ms']:.0f} |"
        )
    if load.errors:
        Console(stderr=True).print(f"errors (first 5): {load.errors[:5]}")
    if args.json_out:
        out = Path(args.json_out)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(
            json.dumps(
                {
                    **load.row(),
                    "clients": args.clients,
                    "seconds": args.seconds,
                    "replicas": args.replicas,
                    "backend": args.backend,
                    "catalog": args.catalog,
                    "single_replica": single.row() if single else None,
                    "transports": transports,
                    "baseline_direct": direct.row(),
                    "baseline_one_client": one.row(),
                },
                indent=2,
            )
        )


if __name__ == "__main__":
    main()
