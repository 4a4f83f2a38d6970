"""The Milvus store on a Milvus gRPC server (`milvus-lite server`, started here): connection settings,
and recovery when the server restarts (collections come back `released`)."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pytest
from pymilvus import MilvusException

from lore.config import StoreSettings
from lore.errors import UnavailableError
from lore.schema import Chunk, SearchFilter
from lore.store.base import StoreQuery, open_store
from lore.store.milvus_conn import connection_kwargs, is_transient
from tests.chunks import make_chunk
from tests.servers import MilvusServer

DIM = 4


def _chunk(i: int) -> Chunk:
    return make_chunk(chunk_id=f"c{i}", text=f"passage {i} about leave", chunk_index=i)


def _query() -> StoreQuery:
    return StoreQuery("hybrid", 5, np.ones(DIM, dtype=np.float32), ["leave"], SearchFilter(), 60)


@pytest.fixture
def server(tmp_path: Path):  # type: ignore[no-untyped-def]
    srv = MilvusServer(tmp_path / "milvus").start()
    yield srv
    srv.stop()


def test_search_works_again_after_the_server_restarts(server: MilvusServer, tmp_path: Path) -> None:
    settings = StoreSettings(backend="milvus", uri=server.uri, timeout_s=30)
    store = open_store("milvus", "kb_restart", tmp_path, DIM, server.uri, connection=settings)
    store.upsert([_chunk(i) for i in range(3)], np.ones((3, DIM), dtype=np.float32), [["leave"]] * 3)
    assert len(store.search(_query())) == 3
    server.restart()  # the collection comes back `released` and the old channel is gone
    assert len(store.search(_query())) == 3
    assert store.count() == 3
    server.restart(down_s=1.0)
    store.upsert([_chunk(9)], np.ones((1, DIM), dtype=np.float32), [["leave"]])  # a write after an outage
    assert store.count() == 4
    store.close()


def test_a_server_that_stays_down_is_unavailable_not_a_crash(server: MilvusServer, tmp_path: Path) -> None:
    settings = StoreSettings(backend="milvus", uri=server.uri, timeout_s=2)
    store = open_store("milvus", "kb_down", tmp_path, DIM, server.uri, connection=settings)
    server.stop()
    with pytest.raises(UnavailableError, match="unavailable"):
        store.search(_query())
    server.start()
    deadline = time.monotonic() + 60  # a loaded machine may take a while to bring the server up
    while True:  # the same store object recovers once the server is back: no reopen needed
        try:
            assert store.search(_query()) == []
            break
        except UnavailableError:
            assert time.monotonic() < deadline, "the store did not recover within 60 s of the server's return"
    store.close()


def test_connection_settings_reach_the_client() -> None:
    assert connection_kwargs(StoreSettings()) == {"timeout": 10.0}
    tls = StoreSettings(
        token="root:Milvus",
        db_name="kb",
        secure=True,
        server_pem_path="/certs/server.pem",
        server_name="milvus.internal",
        user="reader",
        password="pw",
    )
    assert connection_kwargs(tls) == {
        "timeout": 10.0,
        "token": "root:Milvus",
        "user": "reader",
        "password": "pw",
        "db_name": "kb",
        "secure": True,
        "server_pem_path": "/certs/server.pem",
        "server_name": "milvus.internal",
    }
    released = MilvusException(101, "Collection 'x' is in state 'released'; call load()")
    assert is_transient(released)
    assert not is_transient(MilvusException(1100, "field text is too long"))


def test_a_wrong_database_name_is_refused(server: MilvusServer, tmp_path: Path) -> None:
    settings = StoreSettings(backend="milvus", uri=server.uri, db_name="no_such_db", timeout_s=2)
    with pytest.raises(Exception, match="(?i)database"):
        open_store("milvus", "kb_db", tmp_path, DIM, server.uri, connection=settings)
