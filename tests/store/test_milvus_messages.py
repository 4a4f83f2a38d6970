"""What a caller reads when Milvus is down names the component and what to do: no address, no exception
text (those go to the log)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from lore.config import StoreSettings
from lore.errors import UnavailableError
from lore.schema import SearchFilter
from lore.store.base import StoreQuery, open_store
from tests.api.conftest import free_port
from tests.servers import MilvusServer

DIM = 4


def _clean(message: str, port: int) -> None:
    assert "vector store (Milvus)" in message and "try again" in message, message
    for leak in ("127.0.0.1", str(port), "http", "Exception", "code="):
        assert leak not in message, message


def test_a_server_down_mid_run_is_unavailable_without_its_address(tmp_path: Path) -> None:
    server = MilvusServer(tmp_path / "milvus").start()
    try:
        settings = StoreSettings(backend="milvus", uri=server.uri, timeout_s=1)
        store = open_store("milvus", "kb_msg", tmp_path, DIM, server.uri, connection=settings)
    finally:
        server.stop()
    try:
        query = StoreQuery("hybrid", 5, np.ones(DIM, dtype=np.float32), ["leave"], SearchFilter(), 60)
        with pytest.raises(UnavailableError) as caught:
            store.search(query)
        _clean(str(caught.value), server.port)
    finally:
        store.close()


def test_a_server_that_is_not_there_at_open_is_unavailable_without_its_address(tmp_path: Path) -> None:
    port = free_port()
    uri = f"http://127.0.0.1:{port}"
    with pytest.raises(UnavailableError) as caught:
        open_store("milvus", "kb_none", tmp_path, DIM, uri, connection=StoreSettings(uri=uri, timeout_s=1))
    _clean(str(caught.value), port)
