"""The `http` reranker against a local server speaking the real rerank protocols (Cohere/Jina/vLLM
`/v1/rerank`, TEI `/rerank`), through the engine's search; timeouts, 5xx and malformed replies keep the
first-stage order with a note."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from lore.config import load_settings
from lore.engine import Lore
from lore.events import collecting
from lore.retrieve.rerank import RERANK
from lore.retrieve.rerank.http import HttpReranker, endpoint_url
from lore.retrieve.search import Retriever, SearchOptions
from tests.retrieve.rerank_server import RerankServer, overlap, serve

QUERY = "How many days of annual leave do employees get?"


@pytest.fixture(scope="module")
def server() -> Iterator[RerankServer]:
    with serve() as s:
        yield s


@pytest.fixture(scope="module")
def lore(hb_home: Path, server: RerankServer) -> Iterator[Lore]:
    lore = Lore(
        load_settings(
            home=hb_home,
            rerank={
                "provider": "http",
                "base_url": server.base + "/v1",
                "model": "bge-reranker-v2-m3",
                "timeout_s": 0.3,
                "max_retries": 1,
                "rerank_k": 8,
            },
        )
    )
    yield lore
    lore.close()


@pytest.fixture(autouse=True)
def _clean(server: RerankServer) -> None:
    server.faults.clear()
    server.requests.clear()
    server.logits = False


def first_stage(lore: Lore) -> list[str]:
    return [h.chunk.chunk_id for h in lore.search("hb", QUERY, SearchOptions(top_k=8, rerank=False))]


def test_endpoint_urls() -> None:
    assert endpoint_url("http://h:8080") == "http://h:8080/rerank"
    assert endpoint_url("http://h/v1/") == "http://h/v1/rerank"
    assert endpoint_url("http://h/v1/rerank") == "http://h/v1/rerank"


def test_cohere_shape_through_the_engine_reorders_by_the_servers_scores(
    lore: Lore, server: RerankServer
) -> None:
    with collecting(RERANK) as reported:
        hits = lore.search("hb", QUERY, lore.search_options(top_k=8))
    events = [e.data for e in reported]
    path, body = server.requests[-1]
    assert (
        path == "/v1/rerank"
        and body["model"] == "bge-reranker-v2-m3"
        and body["top_n"] == len(body["documents"])
    )
    expected = sorted(overlap(QUERY, d) for d in body["documents"])[::-1]
    assert [h.rerank_score for h in hits] == expected[: len(hits)]
    assert {h.chunk.chunk_id for h in hits} == set(first_stage(lore))
    assert events and events[0]["provider"] == "http" and events[0]["candidates"] == len(body["documents"])
    assert "note" not in events[0] and events[0]["ms"] > 0


def test_tei_shape_with_raw_logits_is_calibrated_to_unit_interval(lore: Lore, server: RerankServer) -> None:
    server.logits = True
    r = lore.retriever("hb")
    tei = Retriever(r.store, r.embedder, r.cache, HttpReranker(server.base, api="tei", timeout_s=2))
    hits = tei.search(QUERY, SearchOptions(top_k=8))
    path, body = server.requests[-1]
    assert path == "/rerank" and "texts" in body and "documents" not in body
    scores = [h.rerank_score for h in hits]
    assert all(s is not None and 0 <= s <= 1 for s in scores) and scores == sorted(scores, reverse=True)
    assert tei.last_rerank is not None and not tei.last_rerank.note


def test_one_5xx_is_retried(lore: Lore, server: RerankServer) -> None:
    server.faults.append("500")
    r = lore.retriever("hb")
    hits = r.search(QUERY, lore.search_options(top_k=8))
    assert len(server.requests) == 2 and r.last_rerank is not None and not r.last_rerank.note
    assert all(h.rerank_score is not None for h in hits)


@pytest.mark.parametrize(
    "faults, reason",
    [
        (["slow", "slow"], "timed out"),
        (["500", "500"], "HTTP 503"),
        (["not-json"], "not JSON"),
        (["short"], "scored"),
        (["bad-index"], "malformed"),
        (["nan"], "malformed"),
    ],
)
def test_failures_keep_the_first_stage_order_with_a_note(
    lore: Lore, server: RerankServer, faults: list[str], reason: str
) -> None:
    before = first_stage(lore)
    server.faults.extend(faults)
    r = lore.retriever("hb")
    hits = r.search(QUERY, lore.search_options(top_k=8))
    assert [h.chunk.chunk_id for h in hits] == before
    assert all(h.rerank_score is None for h in hits)
    assert r.last_rerank is not None and "first-stage order kept" in r.last_rerank.note
    assert reason in r.last_rerank.note


def test_cli_search_rerank_flags(
    hb_home: Path, server: RerankServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    from typer.testing import CliRunner

    from lore.cli.main import app

    runner = CliRunner()
    monkeypatch.setenv("LORE_HOME", str(hb_home))
    args = ["search", QUERY, "--kb", "hb", "--json", "-k", "3"]
    monkeypatch.setenv("LORE_RERANK__PROVIDER", "none")
    refused = runner.invoke(app, [*args, "--rerank"])
    assert refused.exit_code != 0 and "no reranker is configured" in refused.output
    monkeypatch.setenv("LORE_RERANK__PROVIDER", "http")
    monkeypatch.setenv("LORE_RERANK__BASE_URL", server.base + "/v1")
    on = json.loads(runner.invoke(app, [*args, "--rerank", "--rerank-k", "5"]).output)
    assert on["rerank"]["provider"] == "http" and on["rerank"]["candidates"] == 5
    assert all(h["rerank_score"] is not None for h in on["hits"])
    off = json.loads(runner.invoke(app, [*args, "--no-rerank"]).output)
    assert off["rerank"] is None and all(h["rerank_score"] is None for h in off["hits"])
