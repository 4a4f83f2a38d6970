"""Run the built image as deploy/compose.yaml does, against this machine's servers, and time each step.

A migration job, two API containers (B with two worker processes) and one `lore worker` container, all
from the image, on host networking, with PostgreSQL (catalog), Redis, a `milvus-lite server` (Milvus's
gRPC protocol) and one shared files volume. Upload through A, build through the worker container,
activate through B, ask through A and B. Fails (exit 1) on the first step that does not hold.

    docker build -t lore:dev .
    python benchmarks/image_smoke.py --image lore:dev
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path

import httpx
from rich.console import Console
from rich.table import Table

sys.path.insert(0, str(Path(__file__).resolve().parent))
from procs import MilvusServer

from tests.servers import REDIS_URL, free_port, postgres_database

HANDBOOK = Path(__file__).resolve().parents[1] / "examples" / "handbook" / "employee_handbook.md"


def docker(*args: str, check: bool = True) -> str:
    """Run a docker command; its stdout."""
    done = subprocess.run(["docker", *args], capture_output=True, text=True)
    if check and done.returncode != 0:
        raise SystemExit(f"docker {' '.join(args[:3])} failed: {done.stderr.strip()[-800:]}")
    return done.stdout


def env_args(env: dict[str, str]) -> list[str]:
    return [x for k, v in env.items() for x in ("-e", f"{k}={v}")]


def wait_ready(url: str, timeout_s: float = 240) -> float:
    """Seconds until `/api/ready` answers 200."""
    started = time.monotonic()
    while time.monotonic() - started < timeout_s:
        try:
            if httpx.get(f"{url}/api/ready", timeout=5).status_code == 200:
                return time.monotonic() - started
        except httpx.HTTPError:
            pass
        time.sleep(1)
    raise SystemExit(f"{url}/api/ready not 200 after {timeout_s} s")


def ask(url: str, key: str, question: str) -> dict:
    """The `end` event's answer and the version it came from, from the SSE stream."""
    r = httpx.post(
        f"{url}/api/ask",
        headers={"Authorization": f"Bearer {key}"},
        json={"kb": "hb", "question": question},
        timeout=120,
    )
    assert r.status_code == 200, r.text
    events, kind = [], "message"
    for line in r.text.splitlines():
        if line.startswith("event: "):
            kind = line[7:]
        elif line.startswith("data: "):
            events.append((kind, json.loads(line[6:])))
    tokens = "".join(d.get("text", "") for k, d in events if k == "token")
    return {"version": events[0][1].get("kb_version"), "answer": tokens, "last": events[-1][0]}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--image", default="lore:dev")
    args = p.parse_args()
    rows: list[tuple[str, str, float]] = []

    def step(name: str, fn: Callable[[], str]) -> None:
        started = time.monotonic()
        result = fn()
        rows.append((name, result, time.monotonic() - started))

    tag = uuid.uuid4().hex[:8]
    volume = f"lore-smoke-{tag}"
    with ExitStack() as stack:
        catalog = stack.enter_context(postgres_database())
        milvus = MilvusServer(Path(f"/tmp/lore-smoke-{tag}/milvus")).start()
        stack.callback(milvus.stop)
        docker("volume", "create", volume)
        stack.callback(docker, "volume", "rm", "-f", volume, check=False)
        env = {
            "LORE_CATALOG_URL": catalog,
            "LORE_STORE__BACKEND": "milvus",
            "LORE_STORE__URI": milvus.uri,
            "LORE_STORE__TIMEOUT_S": "20",
            "LORE_REDIS__URL": REDIS_URL,
            "LORE_REDIS__PREFIX": f"smoke{tag}",
            "LORE_WORKER__IN_PROCESS": "false",
        }
        base = ["run", "--rm", "--network", "host", "-v", f"{volume}:/srv/lore-files", *env_args(env)]
        step(
            "migration job: lore db upgrade", lambda: docker(*base, args.image, "lore", "db", "upgrade")[-60:]
        )
        step("lore kb create hb", lambda: docker(*base, args.image, "lore", "kb", "create", "hb")[-60:])
        key = docker(*base, args.image, "lore", "keys", "create", "--tenant", "default", "--roles", "admin")
        key = key.strip().splitlines()[-1]
        urls = {}
        for name, workers in (("a", "1"), ("b", "2")):
            port = free_port()
            extra = ["-e", f"LORE_API__PORT={port}", "-e", f"LORE_API__WORKERS={workers}"]
            cid = docker("run", "-d", "--name", f"lore-smoke-{name}-{tag}", *base[2:], *extra, args.image)
            stack.callback(docker, "rm", "-f", cid.strip(), check=False)
            urls[name] = f"http://127.0.0.1:{port}"
        wid = docker(
            "run", "-d", "--name", f"lore-smoke-worker-{tag}", *base[2:], args.image, "lore", "worker"
        )
        stack.callback(docker, "rm", "-f", wid.strip(), check=False)
        for name, url in urls.items():
            step(f"api-{name} /api/ready 200", lambda url=url: f"after {wait_ready(url):.1f} s")
        step(
            "user in the API container",
            lambda: docker("exec", f"lore-smoke-a-{tag}", "id", "-u").strip() + " (non-root)",
        )
        auth = {"Authorization": f"Bearer {key}"}

        def upload() -> str:
            files = {"file": ("handbook.md", HANDBOOK.read_bytes(), "text/markdown")}
            r = httpx.post(f"{urls['a']}/api/kbs/hb/files", headers=auth, files=files, timeout=60)
            assert r.status_code == 201, r.text
            return "201 through api-a"

        def build() -> str:
            r = httpx.post(f"{urls['a']}/api/kbs/hb/builds", json={}, headers=auth, timeout=60)
            assert r.status_code == 202, r.text
            job = r.json()["job"]
            while job["status"] not in ("succeeded", "failed"):
                time.sleep(1)
                job = httpx.get(f"{urls['a']}/api/kbs/hb/jobs/{job['id']}", headers=auth, timeout=30).json()
            assert job["status"] == "succeeded", job
            return f"job {job['status']}, version {job['result']['version']['seq']}, by {job.get('worker')}"

        def activate() -> str:
            r = httpx.post(f"{urls['b']}/api/kbs/hb/versions/1/activate", headers=auth, timeout=60)
            assert r.status_code == 200, r.text
            return "200 through api-b"

        step("upload the handbook", upload)
        step("build (queued by api-a, run by the worker container)", build)
        step("activate version 1", activate)
        for name, q in (("a", "年假有几天？"), ("b", "How many days of annual leave do employees get?")):

            def asked(name: str = name, q: str = q) -> str:
                got = ask(urls[name], key, q)
                assert got["version"] == 1 and got["last"] == "end" and got["answer"], got
                return f"v{got['version']}: {got['answer'][:60]!r}"

            step(f"ask through api-{name}", asked)
        logs = docker("logs", f"lore-smoke-a-{tag}", check=False)
        step("api-a log lines are JSON", lambda: _json_lines(logs))
    table = Table(title=f"image {args.image}: compose topology on this machine's servers")
    for col in ("step", "result", "s"):
        table.add_column(col)
    for name, result, seconds in rows:
        table.add_row(name, result, f"{seconds:.1f}")
    Console().print(table)


def _json_lines(logs: str) -> str:
    """How many of the container's log lines are JSON objects, and the first that is not."""
    lines = [x for x in logs.splitlines() if x.strip()]
    other = [x for x in lines if not _is_json(x)]
    return f"{len(lines) - len(other)} of {len(lines)} lines JSON" + (
        f"; not: {other[0][:50]!r}" if other else ""
    )


def _is_json(line: str) -> bool:
    try:
        return isinstance(json.loads(line), dict)
    except ValueError:
        return False


if __name__ == "__main__":
    sys.exit(main())
