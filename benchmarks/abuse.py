"""Abuse benchmark: one tenant replays the resource attacks of issue 34 against a real `lore serve` while a
second tenant asks and searches; the bystander's latency beside its quiet baseline from the same run.

    OPENBLAS_NUM_THREADS=1 python benchmarks/abuse.py --seconds 40

Attacks (tenant `attacker`, admin key): 40 crawls of pages that drip one byte every 5 s; a sitemap index of
2,000 children crawled with `max_pages: 1`; a 30000×30000 PNG uploaded and ingested; 248 product codes
asked and searched; a diff whose eval-set question is 200,000 characters long; 15 job event streams left
open on a KB that is then deleted; 60 answer streams at once (in that order, the first four together).
The bystander's quiet baseline runs `--seconds`; then it runs for as long as the attacks do. Each
attacking request's time is checked against the budget that should end it (from the server's config).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import struct
import sys
import tempfile
import threading
import time
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
from rich.console import Console
from rich.table import Table

sys.path.insert(0, str(Path(__file__).resolve().parent))

from load import EXAMPLES, QUESTIONS, start_server, wait_up

from lore.config import load_settings
from lore.engine import Lore
from lore.eval.metrics import percentile

console = Console()
PAGE_TIMEOUT_S = 10.0  # the server's [ingest] web_page_timeout_s in this run
CRAWLS_PER_TENANT = 2  # [api] web_crawls_per_tenant (default): crawls of one KB run one after another
SLACK_S = 5.0  # scheduling slack on a loaded 2-core machine


class Site(BaseHTTPRequestHandler):
    """Slow pages (one byte every 5 s) and a sitemap index of 2,000 children; counts every request."""

    hits: dict[str, int] = {}
    lock = threading.Lock()

    def log_message(self, *args: object) -> None:
        pass

    def do_GET(self) -> None:
        kind = self.path.split("/")[1]
        with self.lock:
            self.hits[kind] = self.hits.get(kind, 0) + 1
        if kind == "slow":
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", "100000")
            self.end_headers()
            try:
                for _ in range(40):
                    self.wfile.write(b"a")
                    self.wfile.flush()
                    time.sleep(5)
            except OSError:
                return
        elif kind == "index.xml":
            body = "".join(f"<sitemap><loc>{self.base}/child/{i}.xml</loc></sitemap>" for i in range(2000))
            self._send(f'<?xml version="1.0"?><sitemapindex>{body}</sitemapindex>', "application/xml")
        elif kind == "child":
            body = "".join(f"<url><loc>{self.base}/page/{self.path}/{i}</loc></url>" for i in range(10))
            self._send(f'<?xml version="1.0"?><urlset>{body}</urlset>', "application/xml")
        else:
            self._send("<html><body><p>A short page about parking permits.</p></body></html>", "text/html")

    @property
    def base(self) -> str:
        return f"http://{self.headers['Host']}"

    def _send(self, text: str, ctype: str) -> None:
        data = text.encode()
        self.send_response(200)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


def huge_png(width: int = 30000, height: int = 30000) -> bytes:
    """A valid PNG header of the given size with a tiny IDAT: small on disk, huge when decoded."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    ihdr = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", ihdr)
        + chunk(b"IDAT", zlib.compress(b"\0" * 1024))
        + chunk(b"IEND", b"")
    )


@dataclass
class Attack:
    name: str
    budget_s: float
    times: list[float] = field(default_factory=list)
    statuses: dict[int, int] = field(default_factory=dict)
    note: str = ""

    def record(self, took: float, status: int) -> None:
        self.times.append(took)
        self.statuses[status] = self.statuses.get(status, 0) + 1


async def bystander(
    url: str, key: str, seconds: float, out: list[float], until: asyncio.Event | None = None
) -> None:
    """Tenant `bystander`: ask and search the handbook one request after another, for `seconds` or until
    `until` is set."""
    headers = {"Authorization": f"Bearer {key}"}
    rng = random.Random(7)
    async with httpx.AsyncClient(base_url=url, headers=headers, timeout=60) as c:
        end = time.monotonic() + seconds
        while (until.is_set() is False) if until is not None else time.monotonic() < end:
            q = rng.choice(QUESTIONS)
            t0 = time.perf_counter()
            try:
                if rng.random() < 0.5:
                    r = await c.post("/api/search", json={"kb": "handbook", "query": q, "top_k": 5})
                else:
                    async with c.stream("POST", "/api/ask", json={"kb": "handbook", "question": q}) as r:
                        await r.aread()
                ok = r.status_code == 200
            except httpx.TimeoutException:
                ok = True  # counted: a bystander that waited the whole timeout
            out.append((time.perf_counter() - t0) * 1000 if ok else float("inf"))


async def timed(attack: Attack, call: Callable[[], object]) -> None:
    t0 = time.perf_counter()
    try:
        r = await call()  # type: ignore[misc]
        status = r.status_code if hasattr(r, "status_code") else 0
    except httpx.HTTPError:
        status = -1
    attack.record(time.perf_counter() - t0, status)


async def attacks(url: str, key: str, site: str) -> list[Attack]:
    headers = {"Authorization": f"Bearer {key}"}
    async with httpx.AsyncClient(base_url=url, headers=headers, timeout=900) as c:
        slow = Attack("40 crawls of 1-byte/5 s pages", CRAWLS_PER_TENANT * PAGE_TIMEOUT_S + SLACK_S)
        sitemap = Attack("sitemap index of 2,000, max_pages 1", 60)
        png = Attack("30000x30000 PNG upload + ingest", 60)
        codes = Attack("248 product codes, ask + search", 30)
        diff = Attack("diff with a 200,000-char question", 5)
        streams = Attack("15 job streams, KB deleted", 10 + SLACK_S)
        asks = Attack("60 answer streams at once", 60)
        body = {"url": f"{site}/slow/x", "max_pages": 1}
        phase1 = [timed(slow, lambda: c.post("/api/kbs/web/sources", json=body)) for _ in range(40)]

        async def png_attack() -> httpx.Response:
            r = await c.post("/api/kbs/attack/files", files={"file": ("huge.png", huge_png())})
            if r.status_code != 201:
                return r
            r = await c.post("/api/kbs/attack/ingest", json={"files": ["huge.png"]})
            png.note = "; ".join(f"{f['status']}: {f.get('error')}" for f in r.json().get("files", []))[:80]
            return r

        phase1.append(timed(png, png_attack))
        question = " ".join(f"PX-{i:04d}" for i in range(248))[:1990]
        for _ in range(2):
            phase1.append(
                timed(codes, lambda: c.post("/api/search", json={"kb": "attack", "query": question}))
            )
            phase1.append(
                timed(codes, lambda: c.post("/api/ask", json={"kb": "attack", "question": question}))
            )
        long_q = json.dumps({"question": "x" * 200_000, "files": ["a.md"]})
        diff_body = {"base": 1, "candidate": 1, "eval_jsonl": long_q}
        phase1.append(timed(diff, lambda: c.post("/api/kbs/attack/diff", json=diff_body)))
        await asyncio.gather(*phase1)  # the crawls hold the tenant's crawl slots until they end
        sitemap_body = {"url": f"{site}/index.xml", "sitemap": True, "max_pages": 1}
        await timed(sitemap, lambda: c.post("/api/kbs/web/sources", json=sitemap_body))
        await stream_attack(c, streams)
        ask = {"kb": "attack", "question": "What is LF-200?"}
        await asyncio.gather(*[timed(asks, lambda: c.post("/api/ask", json=ask)) for _ in range(60)])
    Site.lock.acquire()
    sitemap.note = f"{sum(v for k, v in Site.hits.items() if k in ('index.xml', 'child', 'page'))} fetches"
    slow.note = f"{Site.hits.get('slow', 0)} slow pages fetched"
    Site.lock.release()
    return [slow, sitemap, png, codes, diff, streams, asks]


async def stream_attack(c: httpx.AsyncClient, attack: Attack) -> None:
    """Open job event streams on a KB with a queued build, then delete the KB: every stream must end."""
    r = await c.post("/api/kbs", json={"name": "doomed"})
    await c.post("/api/kbs/doomed/files", files={"file": ("a.md", b"# A\n\nSome text to build.\n")})
    r = await c.post("/api/kbs/doomed/builds", json={})
    if r.status_code != 202:
        attack.note = f"build: {r.status_code}"
        return
    job = r.json()["job"]["id"]

    async def follow() -> None:
        t0 = time.perf_counter()
        try:
            async with c.stream("GET", f"/api/kbs/doomed/jobs/{job}/events") as s:
                async for _ in s.aiter_lines():
                    pass
            status = s.status_code
        except httpx.HTTPError:
            status = -1
        attack.record(time.perf_counter() - t0, status)

    followers = [asyncio.create_task(follow()) for _ in range(15)]  # under the tenant's cap of 20
    await asyncio.sleep(1)
    await c.delete("/api/kbs/doomed")
    await asyncio.gather(*followers)


def prepare(home: Path, site: str) -> tuple[str, str]:
    lore = Lore(load_settings(home=home))
    lore.create_kb("handbook", owner_tenant="bystander")
    lore.ingest("handbook", [EXAMPLES], chunk_metadata=lambda _s: {"tenant_id": "bystander"})
    for name in ("attack", "web"):
        lore.create_kb(name, owner_tenant="attacker")
    lore.ingest("attack", [EXAMPLES], chunk_metadata=lambda _s: {"tenant_id": "attacker"})
    attacker = lore.catalog.create_api_key("attacker", ["admin"])[1]
    reader = lore.catalog.create_api_key("bystander", ["staff"])[1]
    lore.close()
    return attacker, reader


def summary(times: list[float]) -> tuple[float, float]:
    return percentile(times, 50), percentile(times, 95)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--seconds", type=float, default=40.0, help="Bystander time per phase.")
    parser.add_argument("--port", type=int, default=8791)
    parser.add_argument("--json-out", type=Path)
    args = parser.parse_args()
    server = ThreadingHTTPServer(("127.0.0.1", 0), Site)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    site = f"http://127.0.0.1:{server.server_address[1]}"
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp)
        attacker, reader = prepare(home, site)
        env = {
            "LORE_API__WEB_SOURCES": json.dumps([site]),
            "LORE_INGEST__WEB_PAGE_TIMEOUT_S": str(PAGE_TIMEOUT_S),
        }
        proc = start_server(home, args.port, env)
        url = f"http://127.0.0.1:{args.port}"
        try:
            wait_up(proc, url)
            quiet: list[float] = []
            asyncio.run(bystander(url, reader, args.seconds, quiet))
            loaded: list[float] = []

            async def both() -> list[Attack]:
                over = asyncio.Event()
                watcher = asyncio.create_task(bystander(url, reader, args.seconds, loaded, over))
                done = await attacks(url, attacker, site)
                over.set()
                await watcher
                return done

            started = time.perf_counter()
            done = asyncio.run(both())
            took = time.perf_counter() - started
            status = Path(f"/proc/{proc.pid}/status").read_text(encoding="utf-8")
            peak = int(next(x for x in status.splitlines() if x.startswith("VmHWM:")).split()[1]) / 1024
        finally:
            proc.terminate()
            proc.wait(30)
            server.shutdown()
    report(quiet, loaded, done, peak, took, args.json_out)


def report(
    quiet: list[float], loaded: list[float], done: list[Attack], peak: float, took: float, out: Path | None
) -> None:
    q50, q95 = summary(quiet)
    l50, l95 = summary(loaded)
    table = Table(title=f"bystander (tenant 'bystander', search + ask), {os.cpu_count()} cores")
    for col in ("phase", "requests", "p50 ms", "p95 ms", "p95 / quiet p95"):
        table.add_column(col)
    table.add_row("quiet baseline", str(len(quiet)), f"{q50:.0f}", f"{q95:.0f}", "1.00")
    table.add_row("under attack", str(len(loaded)), f"{l50:.0f}", f"{l95:.0f}", f"{l95 / q95:.2f}")
    console.print(table)
    attacks = Table(title=f"attacks (ran {took:.0f} s); server peak RSS {peak:.0f} MB")
    for col in ("attack", "requests", "statuses", "max s", "budget s", "within", "note"):
        attacks.add_column(col)
    over = 0
    for a in done:
        worst = max(a.times, default=0.0)
        ok = worst <= a.budget_s
        over += not ok
        statuses = " ".join(f"{k}×{v}" for k, v in sorted(a.statuses.items()))
        attacks.add_row(
            a.name,
            str(len(a.times)),
            statuses,
            f"{worst:.1f}",
            f"{a.budget_s:.0f}",
            "yes" if ok else "NO",
            a.note,
        )
    console.print(attacks)
    verdict = {
        "p95_ratio": l95 / q95 if q95 else None,
        "p95_ratio_ok": bool(q95) and l95 <= 2 * q95,
        "peak_rss_mb": peak,
        "rss_ok": peak <= 1536,
        "attacks_over_budget": over,
    }
    console.print(verdict)
    if out:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps({"quiet": quiet, "loaded": loaded, **verdict}, indent=2), encoding="utf-8")
    sys.exit(0 if verdict["p95_ratio_ok"] and verdict["rss_ok"] and not over else 1)


if __name__ == "__main__":
    main()
