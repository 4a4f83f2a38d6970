"""Real servers for tests: a Milvus gRPC server (`milvus-lite server`) started by the test, Redis keys
under a prefix of their own, PostgreSQL databases created and dropped per test."""

from __future__ import annotations

import hashlib
import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

REDIS_URL = os.environ.get("LORE_TEST_REDIS_URL", "redis://127.0.0.1:6379/0")
POSTGRES_ADMIN = os.environ.get(
    "LORE_TEST_POSTGRES_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/postgres"
)
BIN = Path(sys.executable).parent


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_port(port: int, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.1)
    raise TimeoutError(f"nothing listens on port {port} after {timeout:.0f} s")


class ServerProcess:
    """A server the test starts in its own process group on `self.port`; `stop()` ends the whole group."""

    port: int
    log: Path
    proc: subprocess.Popen[bytes] | None = None
    start_timeout_s = 60.0
    stop_timeout_s = 20.0

    def _spawn(self, args: list[str]) -> None:
        with self.log.open("ab") as out:
            self.proc = subprocess.Popen(args, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
        wait_port(self.port, self.start_timeout_s)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(self.stop_timeout_s)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(10)
        self.proc = None


class MilvusServer(ServerProcess):
    """`milvus-lite server` on a free port over `data_dir`; `restart()` stops and starts it again."""

    def __init__(self, data_dir: Path, port: int | None = None) -> None:
        self.data_dir, self.port = data_dir, port or free_port()
        self.proc = None
        self.log = data_dir.parent / f"milvus-{self.port}.log"

    @property
    def uri(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> MilvusServer:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        args = ["server", "--data-dir", str(self.data_dir), "--host", "127.0.0.1", "--port", str(self.port)]
        self._spawn([str(BIN / "milvus-lite"), *args])
        return self

    def restart(self, down_s: float = 0.0) -> None:
        self.stop()
        time.sleep(down_s)
        self.start()


@contextmanager
def milvus_server(data_dir: Path) -> Iterator[MilvusServer]:
    server = MilvusServer(data_dir).start()
    try:
        yield server
    finally:
        server.stop()


def redis_available() -> bool:
    try:
        import redis

        return bool(redis.Redis.from_url(REDIS_URL, socket_timeout=2).ping())
    except Exception:  # noqa: BLE001 - absent server: the caller skips and says so
        return False


@contextmanager
def redis_prefix() -> Iterator[str]:
    """A key prefix of this test's own; every key under it is deleted afterwards."""
    import redis

    prefix = f"loretest-{uuid.uuid4().hex[:12]}"
    try:
        yield prefix
    finally:
        client = redis.Redis.from_url(REDIS_URL)
        keys = list(client.scan_iter(match=f"{prefix}:*", count=1000))
        if keys:
            client.delete(*keys)


@contextmanager
def postgres_database() -> Iterator[str]:
    """A fresh PostgreSQL database (its SQLAlchemy URL), dropped afterwards."""
    from sqlalchemy import create_engine, text

    name = f"lore_test_{uuid.uuid4().hex[:10]}"
    admin = create_engine(POSTGRES_ADMIN, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    try:
        yield POSTGRES_ADMIN.rsplit("/", 1)[0] + f"/{name}"
    finally:
        with admin.connect() as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


class MotoServer(ServerProcess):
    """`moto_server`: a local server speaking the S3 HTTP protocol, so real boto3 calls run against it."""

    def __init__(self, log_dir: Path) -> None:
        self.port = free_port()
        self.log = log_dir / f"moto-{self.port}.log"
        self.proc = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> MotoServer:
        self._spawn([str(BIN / "moto_server"), "-H", "127.0.0.1", "-p", str(self.port)])
        return self

    def storage_settings_for(self, bucket: str, prefix: str = "lore") -> dict[str, str]:
        """`[storage]` settings for `bucket` on this server."""
        return {
            "url": f"s3://{bucket}/{prefix}",
            "endpoint_url": self.url,
            "region": "us-east-1",
            "access_key_id": "test",
            "secret_access_key": "test",
        }

    def storage_settings(self, bucket: str, prefix: str = "lore") -> dict[str, str]:
        """`[storage]` settings for a new bucket on this server (created here)."""
        import boto3

        settings = self.storage_settings_for(bucket, prefix)
        boto3.client(
            "s3",
            endpoint_url=self.url,
            region_name="us-east-1",
            aws_access_key_id="test",
            aws_secret_access_key="test",
        ).create_bucket(Bucket=bucket)
        return settings


@contextmanager
def moto_server(log_dir: Path) -> Iterator[MotoServer]:
    server = MotoServer(log_dir).start()
    try:
        yield server
    finally:
        server.stop()


class PgVectorServer:
    """PostgreSQL 16 with pgvector from the `pgserver` package (no root needed), over `data_dir`."""

    def __init__(self, data_dir: Path) -> None:
        import pgserver

        self.server = pgserver.get_server(data_dir, cleanup_mode="stop")
        self.server.psql("CREATE EXTENSION IF NOT EXISTS vector;")

    def url(self, database: str = "postgres") -> str:
        """The libpq URL of `database` (over the server's unix socket)."""
        base, _, query = self.server.get_uri().partition("?")
        return f"{base.rsplit('/', 1)[0]}/{database}?{query}"

    def database(self, key: str) -> str:
        """A database of its own for `key` (created on first use, kept for the session): its URL."""
        import psycopg

        name = "t_" + hashlib.sha1(key.encode()).hexdigest()[:16]
        with psycopg.connect(self.url(), autocommit=True) as conn:
            if conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,)).fetchone() is None:
                conn.execute(f'CREATE DATABASE "{name}"')
        return self.url(name)

    def version(self) -> str:
        """The pgvector version the server ships."""
        import psycopg

        with psycopg.connect(self.url()) as conn:
            return conn.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'").fetchone()[0]

    def stop(self) -> None:
        self.server.cleanup()
