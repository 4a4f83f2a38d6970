"""Store test fixtures: one PostgreSQL-with-pgvector server (pgserver) for the whole session."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.servers import PgVectorServer


@pytest.fixture(scope="session")
def pgvector_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PgVectorServer]:
    server = PgVectorServer(tmp_path_factory.mktemp("pgvector") / "pgdata")
    yield server
    server.stop()
