"""Milvus failures are told apart by exception type and error code, not by the words of their message:
what a reconnect cures, what is missing, what is the caller's mistake; and the retry gives up in time."""

from __future__ import annotations

from pathlib import Path

import grpc
import pytest
from pymilvus import MilvusClient, MilvusException
from pymilvus.exceptions import CollectionNotExistException, ConnectError, ParamError

from lore.errors import UnavailableError
from lore.store.milvus_conn import ResilientClient, import_pymilvus, is_not_found, is_transient
from tests.servers import MilvusServer


class _Rpc(grpc.RpcError):
    """A gRPC failure as grpcio raises it: an RpcError with a status code."""

    def __init__(self, code: grpc.StatusCode) -> None:
        super().__init__(code.name)
        self._code = code

    def code(self) -> grpc.StatusCode:
        return self._code


def test_transient_failures_are_known_by_type_and_code() -> None:
    assert is_transient(MilvusException(101, "anything at all"))  # collection not loaded (released)
    assert is_transient(MilvusException(2, "no words that say so"))  # service unavailable / connect failed
    assert is_transient(ConnectError(message="x"))
    assert is_transient(_Rpc(grpc.StatusCode.UNAVAILABLE))
    assert is_transient(ConnectionResetError())
    # pymilvus's own retries ran out: the gRPC status is its code, the RpcError its cause
    out_of_retries = MilvusException(grpc.StatusCode.UNAVAILABLE, "[search] Retry run out of 75 retry times")
    assert is_transient(out_of_retries)
    wrapped = MilvusException(message="Unexpected error")
    wrapped.__cause__ = _Rpc(grpc.StatusCode.DEADLINE_EXCEEDED)
    assert is_transient(wrapped)
    assert is_transient(MilvusException(1, "a server-side retriable error", retriable=True))


def test_words_alone_do_not_make_a_failure_transient() -> None:
    # The old word list matched these messages; their types and codes say the caller must act.
    assert not is_transient(MilvusException(1100, "the connection parameter is invalid"))
    assert not is_transient(ParamError(message="timeout must be positive"))
    assert not is_transient(ValueError("channel closed"))
    assert not is_transient(_Rpc(grpc.StatusCode.INVALID_ARGUMENT))
    assert not is_transient(MilvusException(100, "collection not found"))


def test_not_found_is_known_by_type_and_code() -> None:
    assert is_not_found(MilvusException(100, "whatever the server words it as"))
    assert is_not_found(CollectionNotExistException(message="x"))
    assert not is_not_found(MilvusException(101, "collection not loaded"))


@pytest.fixture
def server(tmp_path: Path):  # type: ignore[no-untyped-def]
    srv = MilvusServer(tmp_path / "milvus").start()
    yield srv
    srv.stop()


def test_a_real_released_collection_is_reloaded_and_the_call_retried(server: MilvusServer) -> None:
    client = ResilientClient(import_pymilvus(), server.uri, "kb_rel", {"timeout": 10}, patience_s=10)
    client.create_collection("kb_rel", dimension=4)
    client.insert("kb_rel", [{"id": 1, "vector": [0.1, 0.2, 0.3, 0.4]}])
    client.release_collection("kb_rel")
    plain = MilvusClient(server.uri)
    try:
        with pytest.raises(MilvusException) as released:  # what the retry sees: the server's own error
            plain.query("kb_rel", filter="id >= 0")
        with pytest.raises(MilvusException) as missing:
            plain.query("kb_none", filter="id >= 0")
    finally:
        plain.close()
    assert is_transient(released.value) and not is_not_found(released.value), released.value
    assert is_not_found(missing.value) and not is_transient(missing.value), missing.value
    assert [r["id"] for r in client.query("kb_rel", filter="id >= 0")] == [1]  # reloaded and retried
    with pytest.raises(MilvusException) as refused:  # not transient: raised at once, no reconnect
        client.query("kb_none", filter="id >= 0")
    assert is_not_found(refused.value) and client._generation == 1
    client.close()


def test_the_retry_gives_up_as_unavailable_once_patience_runs_out(server: MilvusServer) -> None:
    client = ResilientClient(import_pymilvus(), server.uri, "kb_gone", {"timeout": 1}, patience_s=1)
    server.stop()
    with pytest.raises(UnavailableError, match="unavailable") as caught:
        client.has_collection("kb_gone")
    cause = caught.value.__cause__
    assert cause is not None and is_transient(cause), cause
    client.close()
