"""The Milvus version gate: a server older than 2.5 (no sparse vectors, no BM25 function) is refused before
anything is written, by the store and by `lore kb create`; and a collection whose creation cannot be
finished is dropped, not left half-made. The old server is a gRPC stand-in speaking Milvus's protocol
(pymilvus's generated service), which answers the version and records every other call."""

from __future__ import annotations

import re
from collections.abc import Iterator
from concurrent import futures
from pathlib import Path
from typing import Any

import grpc
import pymilvus
import pytest
from pymilvus.grpc_gen import common_pb2, milvus_pb2, milvus_pb2_grpc
from typer.testing import CliRunner

from lore.cli.main import app
from lore.config import StoreSettings
from lore.store.base import open_store
from lore.store.milvus import MilvusStore
from lore.store.milvus_conn import acquire_lite, release_lite
from lore.store.milvus_gate import UnsupportedMilvusError, check_store, check_version, require_supported
from tests.store.shared import DIM

ANSWERED = {"Connect", "GetVersion"}  # what the stand-in answers; every other call fails
WRITES = {"CreateCollection", "CreateIndex", "Insert", "Upsert", "Delete", "DropCollection", "LoadCollection"}


class FakeMilvus:
    """A Milvus gRPC service on a free port reporting `version`; the names of all calls land in `calls`."""

    def __init__(self, version: str) -> None:
        self.version, self.calls = version, []
        servicer = _servicer(self)
        self.server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
        milvus_pb2_grpc.add_MilvusServiceServicer_to_server(servicer, self.server)
        self.port = self.server.add_insecure_port("127.0.0.1:0")
        self.uri = f"http://127.0.0.1:{self.port}"
        self.server.start()

    def stop(self) -> None:
        self.server.stop(grace=None)


def _servicer(fake: FakeMilvus) -> milvus_pb2_grpc.MilvusServiceServicer:
    ok = common_pb2.Status()

    def connect(self: Any, request: Any, context: Any) -> milvus_pb2.ConnectResponse:
        fake.calls.append("Connect")
        info = common_pb2.ServerInfo(build_tags=fake.version, deploy_mode="STANDALONE")
        return milvus_pb2.ConnectResponse(status=ok, server_info=info, identifier=1)

    def get_version(self: Any, request: Any, context: Any) -> milvus_pb2.GetVersionResponse:
        fake.calls.append("GetVersion")
        return milvus_pb2.GetVersionResponse(status=ok, version=fake.version)

    def refuse(name: str) -> Any:
        def call(self: Any, request: Any, context: Any) -> Any:
            fake.calls.append(name)
            context.abort(grpc.StatusCode.UNIMPLEMENTED, f"{name} is not served by this stand-in")

        return call

    methods: dict[str, Any] = {"Connect": connect, "GetVersion": get_version}
    for name in milvus_pb2.DESCRIPTOR.services_by_name["MilvusService"].methods_by_name:
        methods.setdefault(name, refuse(name))
    return type("FakeMilvusServicer", (milvus_pb2_grpc.MilvusServiceServicer,), methods)()


@pytest.fixture
def old_server() -> Iterator[FakeMilvus]:
    fake = FakeMilvus("v2.3.5")
    yield fake
    fake.stop()


def _refusal(message: str, port: int) -> None:
    assert "2.3.5" in message and "Milvus 2.5 or newer" in message and "BM25" in message, message
    for leak in ("127.0.0.1", str(port), "http", "code="):
        assert leak not in message, message


def test_an_old_server_is_refused_before_anything_is_written(old_server: FakeMilvus, tmp_path: Path) -> None:
    settings = StoreSettings(backend="milvus", uri=old_server.uri, timeout_s=5)
    with pytest.raises(UnsupportedMilvusError) as caught:
        open_store("milvus", "kb_old", tmp_path, DIM, old_server.uri, connection=settings)
    _refusal(str(caught.value), old_server.port)
    assert "GetVersion" in old_server.calls
    assert not WRITES & set(old_server.calls), old_server.calls
    assert set(old_server.calls) <= ANSWERED, old_server.calls  # not even a read came before the check


def test_kb_create_on_an_old_server_fails_and_no_kb_is_made(
    old_server: FakeMilvus, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LORE_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("LORE_STORE__BACKEND", "milvus")
    monkeypatch.setenv("LORE_STORE__URI", old_server.uri)
    runner = CliRunner()
    result = runner.invoke(app, ["kb", "create", "hb"])
    assert result.exit_code == 2, result.output
    _refusal(" ".join(result.output.split()), old_server.port)
    assert not WRITES & set(old_server.calls), old_server.calls
    listed = runner.invoke(app, ["kb", "list", "--json"])
    assert listed.exit_code == 0 and '"hb"' not in listed.output, listed.output


def test_a_25_server_passes_the_gate() -> None:
    fake = FakeMilvus("v2.5.4")
    try:
        client = pymilvus.MilvusClient(fake.uri, dedicated=True, timeout=5)
        try:
            assert require_supported(client) == (2, 5, 4)
        finally:
            client.close()
        check_store(fake.uri, StoreSettings(uri=fake.uri, timeout_s=5))  # what `lore kb create` runs
        assert fake.calls.count("GetVersion") == 2
    finally:
        fake.stop()


@pytest.mark.parametrize(
    ("reported", "passes"),
    [
        ("v2.3.5", False),
        ("v2.3.5-lite", False),
        ("v2.4.17", False),
        ("2.5.0", True),
        ("v2.6.0-rc1", True),
        ("milvus_lite-2.4.11", False),
        ("milvus_lite-3.2.2", True),
        ("Zilliz Cloud Vector Database(Compatible with Milvus 2.4)", False),
        ("Zilliz Cloud Vector Database(Compatible with Milvus 2.5)", True),
    ],
)
def test_version_readings(reported: str, passes: bool) -> None:
    if passes:
        assert check_version(reported) is not None
    else:
        with pytest.raises(UnsupportedMilvusError, match=r"needs Milvus 2\.5 or newer"):
            check_version(reported)


def test_an_unreadable_version_passes_with_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    assert check_version("master-20261201-abcdef0") is None
    assert "cannot read a version" in caplog.text


def test_an_old_milvus_lite_is_told_how_to_upgrade() -> None:
    with pytest.raises(UnsupportedMilvusError, match=re.escape("pip install -U milvus-lite")) as caught:
        check_version("milvus_lite-2.4.11")
    assert str(caught.value).startswith("Milvus Lite runs version 2.4.11")
    # The `milvus` package's embedded server is a Milvus server, though it calls itself "-lite".
    with pytest.raises(UnsupportedMilvusError, match="upgrade the server") as caught:
        check_version("v2.3.5-lite")
    assert str(caught.value).startswith("the Milvus server runs version 2.3.5")


def test_the_installed_milvus_lite_passes(tmp_path: Path) -> None:
    path = str(tmp_path / "milvus.db")
    acquire_lite(path)
    try:
        client = pymilvus.MilvusClient(path, dedicated=True)
        reported = client.get_server_version()
        assert reported.startswith("milvus_lite-"), reported  # its own package version, not Milvus's
        assert require_supported(client) >= (2, 5)
        client.close()
    finally:
        release_lite(path)
    check_store("")  # `lore kb create` on a Milvus Lite file checks the installed package


class _RefusedIndex(MilvusStore):
    """A store whose sparse index the server refuses (as Milvus 2.3 refused any sparse index)."""

    def _index_params(self, fields: Any = ()) -> Any:
        params = pymilvus.MilvusClient.prepare_index_params()
        params.add_index("sparse", index_type="SPARSE_INVERTED_INDEX", metric_type="IP")  # not BM25
        return params


def _has_collection(path: str, name: str) -> bool:
    acquire_lite(path)
    try:
        client = pymilvus.MilvusClient(path, dedicated=True)
        found = bool(client.has_collection(name))
        client.close()
        return found
    finally:
        release_lite(path)


def test_a_collection_whose_index_is_refused_is_dropped(tmp_path: Path) -> None:
    with pytest.raises(pymilvus.MilvusException):
        _RefusedIndex("kb_half", tmp_path, DIM)
    assert not _has_collection(str(tmp_path / "milvus.db"), "kb_half")
    store = MilvusStore("kb_half", tmp_path, DIM)  # a later open makes it whole
    try:
        assert store.count() == 0
    finally:
        store.close()


class _NoIndexes(MilvusStore):
    """A creator that stopped between the collection and its indexes."""

    def _create(self) -> bool:
        schema = self._schema({"tokenizer": {"type": "jieba", "mode": "exact"}})
        self._client.create_collection(self.name, schema=schema, consistency_level="Strong")
        return True


def test_missing_indexes_of_an_existing_collection_are_created(tmp_path: Path) -> None:
    _NoIndexes("kb_bare", tmp_path, DIM).close()
    store = MilvusStore("kb_bare", tmp_path, DIM)
    try:
        indexes = set(store._client.list_indexes(store.name))
        assert {"dense", "sparse", "tenant_id", "dataset_id", "document_id"} <= indexes, indexes
    finally:
        store.close()
