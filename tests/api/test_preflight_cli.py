"""Start-up preflight (no degraded mode) and the service commands: serve, keys, badcases."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from fastapi.testclient import TestClient
from sqlalchemy import update
from typer.testing import CliRunner

from lore.api import create_app
from lore.api.preflight import PreflightError, preflight
from lore.catalog.models import KnowledgeBaseRow
from lore.catalog.service import hash_key
from lore.cli.main import app as cli
from lore.config import load_settings
from lore.engine import Lore
from lore.scenario.build import build_scenario
from lore.scenario.config import Scenarios
from tests.api.conftest import free_port, sse_events
from tests.conftest import EXAMPLES
from tests.scenario.conftest import copy_scenarios, scenario_lore

runner = CliRunner()


def test_preflight_passes_on_a_working_home(tmp_path: Path) -> None:
    lore = Lore(load_settings(home=tmp_path))
    lore.create_kb("hb")
    lore.build("hb", [EXAMPLES / "faq.csv"], activate=True)
    lines = preflight(lore)
    assert any("embedder" in line for line in lines) and any("'hb'" in line for line in lines)
    lore.close()


def _take_out_of_service(lore: Lore, kb: str) -> None:
    """Clear the active pointer of a KB that served before (as a broken or hand-edited catalog would)."""
    with lore.catalog.transaction() as s:
        s.execute(update(KnowledgeBaseRow).where(KnowledgeBaseRow.name == kb).values(active_seq=None))


def test_never_activated_kb_is_a_warning_and_answers_409(tmp_path: Path) -> None:
    lore = Lore(load_settings(home=tmp_path, api={"rate_limit_per_minute": 0}))
    lore.create_kb("hb")
    lore.build("hb", [EXAMPLES / "faq.csv"])  # staged, never activated: e.g. an admin's new KB
    lines = preflight(lore)
    assert any(
        line.startswith("warning: knowledge base 'hb'") and "none activated yet" in line for line in lines
    )
    _, secret = lore.catalog.create_api_key("default", ["staff"])
    with TestClient(create_app(lore), headers={"Authorization": f"Bearer {secret}"}) as client:
        r = client.post("/api/ask", json={"kb": "hb", "question": "refund?"})
        assert r.status_code == 409 and "no active version" in r.json()["detail"]
        r = client.post("/api/search", json={"kb": "hb", "query": "refund"})
        assert r.status_code == 409 and "no active version" in r.json()["detail"]
    lore.close()


def test_kb_that_served_before_without_active_version_refuses_to_start(tmp_path: Path) -> None:
    lore = Lore(load_settings(home=tmp_path))
    lore.create_kb("hb")
    lore.build("hb", [EXAMPLES / "faq.csv"], activate=True)
    _take_out_of_service(lore, "hb")
    with pytest.raises(PreflightError, match="'hb' has 1 version\\(s\\) but none is active"):
        preflight(lore)
    with pytest.raises(PreflightError), TestClient(create_app(lore)):
        pass  # the app's start-up runs the same checks
    lore.close()


def test_broken_embedder_refuses_to_start(tmp_path: Path) -> None:
    lore = Lore(
        load_settings(
            home=tmp_path,
            embed={
                "provider": "openai",
                "model": "m",
                "base_url": "http://127.0.0.1:9/v1",
                "dim": 384,
                "timeout_s": 1,
            },
        )
    )
    with pytest.raises(PreflightError, match="embedder openai/m does not load"):
        preflight(lore)
    lore.close()


def test_unreachable_catalog_refuses_to_start(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    lore = Lore(load_settings(home=tmp_path / "home", catalog_url=f"sqlite:///{blocker}/catalog.db"))
    with pytest.raises(PreflightError, match="catalog unreachable"):
        preflight(lore)


def test_scenarios_are_checked_at_start(tmp_path: Path) -> None:
    scenarios = copy_scenarios(tmp_path / "scenarios")
    lore = scenario_lore(tmp_path / "home", scenarios)
    with pytest.raises(PreflightError, match="scenario 'hr': its knowledge base 'hr' is not built"):
        preflight(lore)
    build_scenario(lore, Scenarios(scenarios).get("hr"), activate=True)
    assert "scenario 'hr': valid, answers from 'hr'" in preflight(lore)
    toml = scenarios / "hr" / "scenario.toml"
    toml.write_text(
        toml.read_text(encoding="utf-8").replace('support_contact = "', 'support_contact = 3 #"'),
        encoding="utf-8",
    )
    with pytest.raises(PreflightError, match="scenario.toml: support_contact"):
        preflight(lore)
    lore.close()


@pytest.fixture()
def home(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    monkeypatch.setenv("LORE_HOME", str(tmp_path / "home"))
    return tmp_path / "home"


def test_keys_create_prints_key_last_and_stores_only_its_hash(home: Path) -> None:
    result = runner.invoke(
        cli, ["keys", "create", "--tenant", "acme", "--roles", "admin,staff", "--datasets", "d1,d2"]
    )
    assert result.exit_code == 0, result.output
    secret = result.output.strip().splitlines()[-1]
    assert secret.startswith("lore_") and len(secret) > 40
    db = (home / "catalog.db").read_bytes() + b"".join(p.read_bytes() for p in home.glob("catalog.db-wal"))
    assert secret.encode() not in db and hash_key(secret).encode() in db
    lore = Lore()
    key = lore.catalog.authenticate(secret)
    assert key is not None and key.tenant_id == "acme" and key.roles == ["admin", "staff"]
    assert key.datasets == ["d1", "d2"]
    result = runner.invoke(cli, ["keys", "revoke", key.prefix])
    assert result.exit_code == 0 and lore.catalog.authenticate(secret) is None
    assert runner.invoke(cli, ["keys", "revoke", "nope"]).exit_code == 2
    assert runner.invoke(cli, ["keys", "create", "--tenant", " "]).exit_code == 2


def test_badcases_export_writes_thumbs_down_as_eval_set(home: Path, tmp_path: Path) -> None:
    lore = Lore()
    lore.create_kb("hb")
    lore.ingest("hb", [EXAMPLES / "faq.csv"])
    _, secret = lore.catalog.create_api_key("default", ["staff"])  # the tenant the chunks were ingested with
    with TestClient(create_app(lore), headers={"Authorization": f"Bearer {secret}"}) as client:
        traces = []
        for q in ("What is the refund window?", "如何重置 VPN 密码？"):
            r = client.post("/api/ask", json={"kb": "hb", "question": q})
            traces.append(sse_events(r.text)[-1][1]["trace_id"])
        assert client.post("/api/feedback", json={"trace_id": traces[0], "rating": 1}).status_code == 201
        r = client.post("/api/feedback", json={"trace_id": traces[1], "rating": -1, "note": "wrong steps"})
        assert r.status_code == 201
        assert client.post("/api/feedback", json={"trace_id": traces[1], "rating": 0}).status_code == 422
        assert client.post("/api/feedback", json={"trace_id": "nope", "rating": -1}).status_code == 404
    out = tmp_path / "bad.jsonl"
    result = runner.invoke(cli, ["badcases", "export", "--out", str(out)])
    assert result.exit_code == 0 and "1 bad case" in result.output
    rows = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert (
        len(rows) == 1 and rows[0]["question"] == "如何重置 VPN 密码？" and rows[0]["note"] == "wrong steps"
    )
    assert rows[0]["cited_files"] == ["faq.csv"] and "VPN" in rows[0]["bad_answer"]
    lore.close()


def test_lore_serve_runs_uvicorn_and_refuses_a_broken_home(tmp_path: Path) -> None:
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("LORE_")},
        "LORE_HOME": str(tmp_path / "home"),
        "LORE_CONFIG": str(tmp_path / "none.toml"),
    }
    lore_bin = str(Path(sys.executable).with_name("lore"))
    lore = Lore(load_settings(home=tmp_path / "home"))
    lore.create_kb("hb")
    lore.build("hb", [EXAMPLES / "faq.csv"], activate=True)
    _take_out_of_service(lore, "hb")  # served before, no active version now: serve must refuse
    done = subprocess.run(
        [lore_bin, "serve", "--port", str(free_port())],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 2 and "none is active" in " ".join(done.stderr.split())
    with lore.catalog.transaction() as s:
        s.execute(update(KnowledgeBaseRow).where(KnowledgeBaseRow.name == "hb").values(active_seq=1))
    _, secret = lore.catalog.create_api_key("default", ["staff"])
    lore.close()
    port = free_port()
    proc = subprocess.Popen(
        [lore_bin, "serve", "--host", "127.0.0.1", "--port", str(port)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        deadline = time.monotonic() + 90
        while True:
            try:
                r = httpx.get(
                    f"http://127.0.0.1:{port}/v1/models", headers={"Authorization": f"Bearer {secret}"}
                )
                break
            except httpx.TransportError:
                assert proc.poll() is None and time.monotonic() < deadline, "lore serve did not come up"
                time.sleep(0.2)
        assert r.status_code == 200 and r.json()["data"][0]["id"] == "hb"
    finally:
        proc.terminate()
        proc.wait(30)
