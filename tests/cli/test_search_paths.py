"""`lore search` takes the same options in-process and against a server (`--server`), through one path:
every option reaches the search in both modes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from lore.cli.main import app as cli
from tests.api.conftest import Keys, LiveServer
from tests.kb_homes import handbook_home

runner = CliRunner()
QUERY = "What is the refund window?"
OPTION_SETS = [
    [],
    ["--mode", "bm25"],
    ["--mode", "dense"],
    ["-k", "2"],
    ["--recall-k", "3", "-k", "2"],  # recalls max(recall_k, k): 3 candidates for the reranker
    ["--no-rerank"],
    ["--rerank", "--rerank-k", "4"],
    ["--version", "7"],  # no such version: the same refusal in both modes
    ["-k", "0"],  # out of range: the same refusal in both modes
]


def run(args: list[str], env: dict[str, str] | None = None) -> tuple[int, dict[str, Any] | str]:
    result = runner.invoke(cli, args, env=env)
    return result.exit_code, json.loads(result.output) if result.exit_code == 0 else result.output


@pytest.fixture(scope="module")
def api_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The handbook alone: the local operator and the admin key see the same chunks. (With another tenant's
    file in the KB the operator's candidates hold it too, and the reranker, whose features are relative to
    the candidate list, may order the shared hits differently.)"""
    return handbook_home(tmp_path_factory)


def hit_ids(payload: dict[str, Any]) -> list[str]:
    return [h["chunk_id"] for h in payload["hits"]]


@pytest.mark.parametrize("options", OPTION_SETS, ids=lambda o: " ".join(o) or "defaults")
def test_each_search_option_means_the_same_locally_and_through_the_server(
    options: list[str], live: LiveServer, keys: Keys, api_home: Path
) -> None:
    args = ["search", QUERY, "--kb", "hb", "--json", *options]
    local_code, local = run(args, env={"LORE_HOME": str(api_home), "LORE_SERVER": ""})
    remote_code, remote = run(["--server", live.url, "--key", keys.admin, *args])
    assert local_code == remote_code, (local, remote)
    if local_code != 0:
        return
    assert isinstance(local, dict) and isinstance(remote, dict)
    assert local["mode"] == remote["mode"] and local["version"] == remote["version"]
    assert hit_ids(local) == hit_ids(remote)
    assert (local["rerank"] is None) == (remote["rerank"] is None)
    if local["rerank"] is not None:
        assert local["rerank"]["provider"] == remote["rerank"]["provider"]
    if "--recall-k" in options:
        assert local["rerank"]["candidates"] == remote["rerank"]["candidates"] == 3
    if "-k" in options:
        assert len(local["hits"]) == len(remote["hits"]) == 2
    if "--mode" in options:
        assert local["mode"] == options[options.index("--mode") + 1]
    if "--no-rerank" in options:
        assert local["rerank"] is None
    if "--rerank-k" in options:
        assert local["rerank"]["candidates"] == remote["rerank"]["candidates"] == 4
