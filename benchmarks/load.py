"""Load benchmark: N concurrent clients (SSE and WebSocket) asking questions of a real `lore serve`.

The server is a separate uvicorn process (`lore serve`) over the sample handbook with the extractive
generator; clients run in this process with asyncio. Baselines in the same run: `Lore.ask` called
directly in-process (no HTTP), and one HTTP client at a time.

    OPENBLAS_NUM_THREADS=1 python benchmarks/load.py --clients 50 --seconds 60 --json-out benchmarks/out/load.json
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
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import websockets
from rich.console import Console
from rich.table import Table

from lore.config import load_settings
from lore.engine import Lore
from lore.eval.metrics import percentile

EXAMPLES = Path(__file__).resolve().parents[1] / "examples" / "handbook"
QUESTIONS = [
    "What is the refund window?", "报销需要什么材料？", "LF-200 的保修期多久？", "一线城市住宿上限是多少？",
    "How many days per week can I work remotely?", "年假有几天？怎么申请？", "如何重置 VPN 密码？",
    "Who won the 1998 World Cup?",  # refused: the pipeline's other path
]


@dataclass
class Stats:
    """Latencies and errors of one run."""

    first_ms: list[float] = field(default_factory=list)
    end_ms: list[float] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    seconds: float = 0.0

    def row(self) -> dict[str, float | int]:
        n = len(self.end_ms)
        return {"requests": n, "errors": len(self.errors), "rps": round(n / self.seconds, 2) if self.seconds else 0,
                "p50_first_ms": round(percentile(self.first_ms, 50), 1) if n else 0,
                "p95_first_ms": round(percentile(self.first_ms, 95), 1) if n else 0,
                "p50_end_ms": round(percentile(self.end_ms, 50), 1) if n else 0,
                "p95_end_ms": round(percentile(self.end_ms, 95), 1) if n else 0}


def question(counter: itertools.count) -> str:
    # A different text per request, so the query-embedding cache does not turn the load into cache hits.
    i = next(counter)
    return f"{QUESTIONS[i % len(QUESTIONS)]} (#{i})"


async def sse_client(url: str, key: str, stop: float, stats: Stats, counter: itertools.count) -> None:
    async with httpx.AsyncClient(base_url=url, headers={"Authorization": f"Bearer {key}"}, timeout=300) as http:
        while time.perf_counter() < stop:
            t0, first, last = time.perf_counter(), None, None
            try:
                async with http.stream("POST", "/api/ask", json={"kb": "hb", "question": question(counter),
                                                                 "new_session": False}) as r:
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
        async with websockets.connect(url.replace("http", "ws", 1) + "/api/stream",
                                      additional_headers={"Authorization": f"Bearer {key}"},
                                      open_timeout=60, max_size=None) as ws:
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


async def run_load(url: str, key: str, clients: int, seconds: float, transports: list[str]) -> Stats:
    stats, counter = Stats(), itertools.count()
    stop = time.perf_counter() + seconds
    started = time.perf_counter()
    kinds = [transports[i % len(transports)] for i in range(clients)]
    await asyncio.gather(*[(sse_client if k == "sse" else ws_client)(url, key, stop, stats, counter) for k in kinds])
    stats.seconds = time.perf_counter() - started
    return stats


def direct_baseline(lore: Lore, seconds: float) -> Stats:
    """`Lore.ask` in this process, one question at a time, no HTTP."""
    stats, counter = Stats(), itertools.count(10_000)
    started = time.perf_counter()
    while time.perf_counter() - started < seconds:
        t0, first, last = time.perf_counter(), None, None
        for event in lore.ask("hb", question(counter)):
            first = first or time.perf_counter()
            last = event.type
        _record(stats, t0, first, last, "direct")
    stats.seconds = time.perf_counter() - started
    return stats


def start_server(home: Path, port: int) -> subprocess.Popen[str]:
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("LORE_")}, "LORE_HOME": str(home),
           "LORE_API__RATE_LIMIT_PER_MINUTE": "0", "LORE_CONFIG": str(home / "none.toml"),
           "OPENBLAS_NUM_THREADS": os.environ.get("OPENBLAS_NUM_THREADS", "1")}
    lore_bin = Path(sys.executable).with_name("lore")
    return subprocess.Popen([str(lore_bin), "serve", "--host", "127.0.0.1", "--port", str(port)], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)


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
    p.add_argument("--port", type=int, default=8765)
    p.add_argument("--json-out", default="")
    args = p.parse_args()

    home = Path(tempfile.mkdtemp(prefix="lore-load-"))
    lore = Lore(load_settings(home=home))
    lore.create_kb("hb")
    lore.ingest("hb", [EXAMPLES])
    _, key = lore.catalog.create_api_key("default", ["staff"], name="load benchmark")
    direct = direct_baseline(lore, args.baseline_seconds)
    lore.close()

    url = f"http://127.0.0.1:{args.port}"
    proc = start_server(home, args.port)
    try:
        wait_up(proc, url)
        transports = ["sse", "websocket"] if args.transport == "both" else [args.transport]
        one = asyncio.run(run_load(url, key, 1, args.baseline_seconds, ["sse"]))
        load = asyncio.run(run_load(url, key, args.clients, args.seconds, transports))
    finally:
        proc.terminate()
        proc.wait(30)
        shutil.rmtree(home, ignore_errors=True)

    rows = [("Lore.ask in-process, 1 at a time (baseline)", 1, direct), ("HTTP SSE, 1 client", 1, one),
            (f"HTTP {'+'.join(transports)}, {args.clients} clients", args.clients, load)]
    table = Table("run", "clients", "requests", "errors", "req/s", "p50 first ms", "p95 first ms",
                  "p50 end ms", "p95 end ms", "p50 end vs baseline", title=f"load: {args.seconds:g} s, extractive")
    base = direct.row()["p50_end_ms"] or 1
    for name, clients, stats in rows:
        r = stats.row()
        table.add_row(name, str(clients), str(r["requests"]), str(r["errors"]), f"{r['rps']:.1f}",
                      f"{r['p50_first_ms']:.0f}", f"{r['p95_first_ms']:.0f}", f"{r['p50_end_ms']:.0f}",
                      f"{r['p95_end_ms']:.0f}", f"{r['p50_end_ms'] / base:.1f}x")
    Console(width=200).print(table)
    print("\n| run | clients | requests | errors | req/s | p50 first ms | p95 first ms | p50 end ms | p95 end ms |")
    print("|---|---|---|---|---|---|---|---|---|")
    for name, clients, stats in rows:
        r = stats.row()
        print(f"| {name} | {clients} | {r['requests']} | {r['errors']} | {r['rps']:.1f} | {r['p50_first_ms']:.0f} | "
              f"{r['p95_first_ms']:.0f} | {r['p50_end_ms']:.0f} | {r['p95_end_ms']:.0f} |")
    if load.errors:
        Console(stderr=True).print(f"errors (first 5): {load.errors[:5]}")
    if args.json_out:
        out = Path(args.json_out)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps({**load.row(), "clients": args.clients, "seconds": args.seconds,
                                   "transports": transports, "baseline_direct": direct.row(),
                                   "baseline_one_client": one.row()}, indent=2))


if __name__ == "__main__":
    main()
