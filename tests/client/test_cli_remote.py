"""`lore --server URL --key KEY …` (and LORE_SERVER / LORE_API_KEY): the CLI through LoreClient against a live
`lore serve`."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from lore.cli.main import app
from tests.api.conftest import Keys, LiveServer

runner = CliRunner()


def lore(live: LiveServer, key: str, *args: str) -> tuple[int, str]:
    result = runner.invoke(app, ["--server", live.url, "--key", key, *args])
    return result.exit_code, result.output


def test_kb_list_search_and_ask_through_the_server(live: LiveServer, keys: Keys) -> None:
    code, out = lore(live, keys.staff, "kb", "list", "--json")
    assert code == 0 and "hb" in [k["name"] for k in json.loads(out)]
    env = {"LORE_SERVER": live.url, "LORE_API_KEY": keys.staff}
    result = runner.invoke(
        app, ["search", "What is the refund window?", "--kb", "hb", "-k", "3", "--json"], env=env
    )
    hits = json.loads(result.output)["hits"]
    assert result.exit_code == 0 and len(hits) == 3 and hits[0]["file"]
    code, out = lore(live, keys.staff, "ask", "What is the refund window?", "--kb", "hb", "--json")
    end = json.loads(out)
    assert code == 0 and end["citations"] and not end["refused"] and end["trace_id"]
    code, out = lore(live, keys.staff, "ask", "Who won the 1998 World Cup?", "--kb", "hb")
    assert code == 0 and "route=refused" in out
    # the key bounds the CLI as it bounds the API
    code, out = lore(live, keys.staff, "search", "launch code NG-7731", "--kb", "hb", "--json")
    assert code == 0 and not any("NG-7731" in h["text"] for h in json.loads(out)["hits"])
    code, out = lore(live, keys.tenant_b, "search", "launch code NG-7731", "--kb", "hb", "--json")
    assert code == 0 and "NG-7731" in json.loads(out)["hits"][0]["text"]


def test_errors_exit_2_with_the_servers_message(live: LiveServer, keys: Keys) -> None:
    code, out = lore(live, keys.staff, "kb", "create", "not-allowed")
    assert code == 2 and "HTTP 403" in out and "'admin' role" in out
    code, out = lore(live, keys.revoked, "kb", "list")
    assert code == 2 and "HTTP 401" in out and "revoked" in out
    code, out = lore(live, keys.staff, "ask", "x", "--kb", "hb", "--tenant", "acme")
    assert code == 2 and "not available against a server" in out
    code, out = lore(live, keys.admin, "gc", "--kb", "hb")
    assert code == 2 and "runs locally only" in out


def test_ingest_build_versions_activate_rollback(live: LiveServer, keys: Keys, tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "remote.md").write_text(
        "# Parking\n\nVisitors park in bay 7 behind the north gate.\n", encoding="utf-8"
    )
    (docs / "broken.pdf").write_bytes(b"%PDF-1.4 not really")
    assert lore(live, keys.admin, "kb", "create", "cli-remote")[0] == 0
    code, out = lore(live, keys.admin, "ingest", str(docs), "--kb", "cli-remote")
    assert code == 1 and "remote.md" in out and "ingested" in out and "broken.pdf" in out and "failed" in out
    code, out = lore(live, keys.admin, "search", "where do visitors park", "--kb", "cli-remote", "--json")
    assert "bay 7" in json.loads(out)["hits"][0]["text"]

    assert lore(live, keys.admin, "kb", "create", "cli-versions")[0] == 0
    (docs / "broken.pdf").unlink()
    code, out = lore(live, keys.admin, "build", "--kb", "cli-versions", "--source", str(docs), "--activate")
    assert code == 0 and "version 1 ACTIVE" in out
    (docs / "remote.md").write_text("# Parking\n\nVisitors now park in bay 9.\n", encoding="utf-8")
    code, out = lore(live, keys.admin, "build", "--kb", "cli-versions", "--source", str(docs))
    assert code == 0 and "version 2 STAGED" in out
    assert lore(live, keys.admin, "activate", "--kb", "cli-versions", "2") == (0, "version 2 is active\n")
    code, out = lore(live, keys.admin, "versions", "--kb", "cli-versions", "--json")
    rows = json.loads(out)
    assert [(r["seq"], r["status"], r["active"]) for r in rows] == [
        (1, "RETIRED", False),
        (2, "ACTIVE", True),
    ]
    code, out = lore(live, keys.admin, "rollback", "--kb", "cli-versions")
    assert code == 0 and "version 1 is active" in out
    code, out = lore(live, keys.admin, "search", "visitors park", "--kb", "cli-versions", "--json")
    assert "bay 7" in json.loads(out)["hits"][0]["text"]
