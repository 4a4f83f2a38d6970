"""Two `lore serve` replicas (B with `--workers 2`) on PostgreSQL + Redis + a Milvus gRPC server
(`milvus-lite server`), each with its own LORE_HOME and one S3 bucket for files (on `moto_server`, a real
S3-protocol server; the shared-directory case is tests/api/test_shared_storage.py): what one replica
changes, the other serves at once;
the rate limit is global; a Milvus restart under load gives no 500 and every request works afterwards.

Builds are queued jobs run by the replicas themselves (`worker.in_process`); `lore worker` is not part of
this test."""

from __future__ import annotations

import json
import os
import subprocess
import threading
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from lore.config import load_settings
from lore.engine import Lore
from tests.conftest import EXAMPLES
from tests.servers import (
    BIN,
    REDIS_URL,
    MilvusServer,
    free_port,
    moto_server,
    postgres_database,
    redis_available,
    redis_prefix,
)

LIMIT = 60  # requests a minute per key


@dataclass
class Replica:
    url: str
    proc: subprocess.Popen[bytes]
    log: Path


@dataclass
class Cluster:
    a: Replica
    b: Replica
    milvus: MilvusServer
    admin: str
    staff: list[str]


def _start_replica(env: dict[str, str], home: Path, workers: int = 1) -> Replica:
    port = free_port()
    log = home.parent / f"{home.name}.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [
                str(BIN / "lore"),
                "serve",
                "--host",
                "127.0.0.1",
                "--port",
                str(port),
                "--workers",
                str(workers),
            ],
            env={**env, "LORE_HOME": str(home)},
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 300  # workers load the models first; this machine may be busy
    while True:
        try:
            if httpx.get(f"{url}/api/health", timeout=5).status_code == 200:
                return Replica(url, proc, log)
        except httpx.TransportError:
            pass
        if proc.poll() is not None or time.monotonic() > deadline:
            _stop(Replica(url, proc, log))
            raise AssertionError(log.read_text(errors="replace")[-3000:])
        time.sleep(0.5)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    if not redis_available():
        pytest.skip(f"no Redis server at {REDIS_URL} on this machine")
    tmp = tmp_path_factory.mktemp("replicas")
    with ExitStack() as stack:
        catalog = stack.enter_context(postgres_database())
        prefix = stack.enter_context(redis_prefix())
        milvus = MilvusServer(tmp / "milvus").start()
        stack.callback(milvus.stop)
        s3 = stack.enter_context(moto_server(tmp)).storage_settings("replicas")
        env = {k: v for k, v in os.environ.items() if not k.startswith("LORE_")}
        env |= {
            "LORE_CONFIG": str(tmp / "none.toml"),
            "LORE_CATALOG_URL": catalog,
            "LORE_STORE__BACKEND": "milvus",
            "LORE_STORE__URI": milvus.uri,
            "LORE_STORE__TIMEOUT_S": "20",
            "LORE_REDIS__URL": REDIS_URL,
            "LORE_REDIS__PREFIX": prefix,
            **{f"LORE_STORAGE__{k.upper()}": v for k, v in s3.items()},
            "LORE_API__RATE_LIMIT_PER_MINUTE": str(LIMIT),
        }
        # The migration job of the deployment: once, before any replica starts.
        subprocess.run(
            [str(BIN / "lore"), "db", "upgrade"],
            env={**env, "LORE_HOME": str(tmp / "migrate")},
            check=True,
            capture_output=True,
        )
        admin_lore = Lore(
            load_settings(
                home=tmp / "admin", store={"backend": "milvus", "uri": milvus.uri}, catalog_url=catalog
            )
        )
        admin_lore.create_kb("hb")
        admin = admin_lore.catalog.create_api_key("default", ["admin"])[1]
        staff = [admin_lore.catalog.create_api_key("default", ["staff"])[1] for _ in range(6)]
        admin_lore.close()
        a = _start_replica(env, tmp / "a")
        stack.callback(_stop, a)
        b = _start_replica(env, tmp / "b", workers=2)  # B is two worker processes behind one port
        stack.callback(_stop, b)
        yield Cluster(a, b, milvus, admin, staff)


def _stop(replica: Replica) -> None:
    replica.proc.terminate()
    try:
        replica.proc.wait(30)
    except subprocess.TimeoutExpired:
        replica.proc.kill()


def build_and_wait(client: httpx.Client, kb: str, body: dict, headers: dict[str, str]) -> dict:
    """Queue a build and poll its job once a second (the admin key is under the rate limit too)."""
    r = client.post(f"/api/kbs/{kb}/builds", json=body, headers=headers)
    assert r.status_code == 202, r.text
    job = r.json()["job"]
    deadline = time.monotonic() + 300
    while job["status"] not in ("succeeded", "failed"):
        assert time.monotonic() < deadline, job
        time.sleep(1.0)
        r = client.get(f"/api/kbs/{kb}/jobs/{job['id']}", headers=headers)
        assert r.status_code == 200, r.text
        job = r.json()
    return job


def _auth(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


def _ask(url: str, key: str, question: str) -> tuple[int, list[tuple[str, dict]]]:
    with httpx.Client(timeout=120) as c:
        r = c.post(f"{url}/api/ask", headers=_auth(key), json={"kb": "hb", "question": question})
    events = []
    kind = "message"
    for line in r.text.splitlines():
        if line.startswith("event: "):
            kind = line[7:]
        elif line.startswith("data: "):
            events.append((kind, json.loads(line[6:])))
    return r.status_code, events


def test_a_change_through_one_replica_is_served_by_the_other(cluster: Cluster) -> None:
    a, b, admin = cluster.a.url, cluster.b.url, _auth(cluster.admin)
    with httpx.Client(timeout=300) as c:
        body = (EXAMPLES / "employee_handbook.md").read_bytes()
        up = c.post(
            f"{a}/api/kbs/hb/files", headers=admin, files={"file": ("handbook.md", body, "text/markdown")}
        )
        assert up.status_code == 201, up.text
        built = build_and_wait(httpx.Client(base_url=a, timeout=60), "hb", {}, admin)  # run by replica A
        assert built["status"] == "succeeded" and built["result"]["version"]["seq"] == 1, built
        assert c.post(f"{b}/api/kbs/hb/versions/1/activate", headers=admin).status_code == 200
        status, events = _ask(a, cluster.staff[0], "年假有几天？")
        assert status == 200 and events[0][1]["kb_version"] == 1 and events[-1][0] == "end"
        # Answered from the handbook on the Milvus server, as on the embedded store (not refused).
        assert events[-1][1]["route"] != "refused" and events[-1][1]["citations"], events[-1][1]
        # A second file through B, built through B, activated through A: B and A answer from version 2.
        new = b"# Zephyr-9\n\nThe Zephyr-9 calibration interval is 90 days.\n"
        assert (
            c.post(
                f"{b}/api/kbs/hb/files", headers=admin, files={"file": ("zephyr.md", new, "text/markdown")}
            ).status_code
            == 201
        )
        built = build_and_wait(httpx.Client(base_url=b, timeout=60), "hb", {}, admin)
        assert built["status"] == "succeeded" and built["result"]["version"]["seq"] == 2, built
        assert c.post(f"{a}/api/kbs/hb/versions/2/activate", headers=admin).status_code == 200
        for url in (b, a):
            status, events = _ask(url, cluster.staff[0], "What is the Zephyr-9 calibration interval?")
            assert events[0][1]["kb_version"] == 2 and "90" in events[-1][1]["answer"]
        report = c.get(f"{b}/api/kbs/hb/versions/1/report", headers=admin)  # written by A's build
        assert report.status_code == 200
        assert c.get(f"{b}/api/ready").json()["checks"] == {
            "catalog": "ok",
            "migrations": "ok",
            "store": "ok",
            "redis": "ok",
            "storage": "ok",
        }


def test_the_rate_limit_holds_across_replicas(cluster: Cluster) -> None:
    key = cluster.staff[1]
    codes: Counter[int] = Counter()
    started = time.monotonic()
    with httpx.Client(timeout=60) as c:
        for i in range(2 * LIMIT):
            url = (cluster.a if i % 2 else cluster.b).url
            codes[c.get(f"{url}/api/kbs", headers=_auth(key)).status_code] += 1
    refilled = (time.monotonic() - started) * LIMIT / 60  # on a busy machine the 120 requests take a while
    # One bucket for all three processes: LIMIT pass, plus what refills meanwhile. Per process, all would
    # pass.
    assert codes[200] >= LIMIT and codes[429] == 2 * LIMIT - codes[200], codes
    assert codes[200] <= LIMIT + refilled + 5, (codes, refilled)
    assert codes[429] > 0
    metrics = httpx.get(f"{cluster.b.url}/metrics").text  # the sum over B's worker processes
    assert 'lore_http_requests_total{method="GET",route="/api/kbs",status="429"}' in metrics


def test_milvus_restart_under_load_gives_no_500(cluster: Cluster) -> None:
    stop = threading.Event()
    results: list[tuple[float, int, str]] = []  # (time, HTTP status, last event or body kind)
    lock = threading.Lock()

    def client(key: str, url: str) -> None:
        with httpx.Client(timeout=120) as c:
            while not stop.is_set():
                r = c.post(f"{url}/api/search", headers=_auth(key), json={"kb": "hb", "query": "年假"})
                with lock:
                    results.append((time.monotonic(), r.status_code, "search"))
                time.sleep(0.5)

    threads = [
        threading.Thread(target=client, args=(key, (cluster.a if i % 2 else cluster.b).url))
        for i, key in enumerate(cluster.staff[2:6])
    ]
    for t in threads:
        t.start()
    time.sleep(3)
    cluster.milvus.restart(down_s=2.0)
    back = time.monotonic()
    time.sleep(15)
    stop.set()
    for t in threads:
        t.join(130)
    statuses = Counter(s for _, s, _ in results)
    assert 500 not in statuses, statuses
    after = [s for t, s, _ in results if t > back + 5]
    assert after and all(s == 200 for s in after), Counter(after)
    for url in (cluster.a.url, cluster.b.url):  # and answers stream to the end again on both replicas
        status, events = _ask(url, cluster.staff[0], "年假有几天？")
        assert status == 200 and events[-1][0] == "end"
