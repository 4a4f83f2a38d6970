"""Every option of the commands that run both ways (`kb`, `files`, `ingest`, `build`, `versions`,
`activate`, `rollback`, `ask`) in-process and against a live `lore serve` (`--server`) on the same home:
the same request gives the same effect and the same output, and an option one mode cannot take is refused
(exit code 2), never dropped. `search` has its own (tests/cli/test_search_paths.py)."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from click.testing import Result
from typer.testing import CliRunner

from lore.api import create_app
from lore.cli.main import app as cli
from lore.config import load_settings
from lore.engine import Lore
from tests.api.conftest import LiveServer
from tests.conftest import EXAMPLES
from tests.ingest.test_web import served_site

runner = CliRunner()
MODES = ("local", "remote")
PARKING = "# Parking\n\nVisitors park in bay 7 behind the north gate; staff use the east garage.\n"
BADGES = "# Badges\n\nA lost badge is replaced at reception within one working day for a fee of 20 yuan.\n"


@dataclass
class World:
    """One home served by a live server, with an admin key of tenant `default` and a sample KB `hb`."""

    home: Path
    server: LiveServer
    admin: str
    staff: str
    site: str  # the small web site of tests/ingest/test_web.py
    docs: Path  # two Markdown files and a broken PDF

    def run(self, mode: str, *args: str, input: str | None = None) -> Result:
        """`lore ARGS` in-process (`local`) or against the server (`remote`)."""
        if mode == "local":
            env = {"LORE_HOME": str(self.home), "LORE_SERVER": ""}
            return runner.invoke(cli, list(args), env=env, input=input)
        return runner.invoke(cli, ["--server", self.server.url, "--key", self.admin, *args], input=input)

    def ok(self, mode: str, *args: str, code: int = 0) -> str:
        result = self.run(mode, *args)
        assert result.exit_code == code, (mode, args, result.output)
        return result.output

    def json(self, mode: str, *args: str) -> Any:
        return json.loads(self.ok(mode, *args, "--json"))

    def both(self, *args: str, code: int = 0) -> dict[str, str]:
        """Outputs of `lore ARGS` in both modes, each with exit code `code`."""
        return {mode: self.ok(mode, *args, code=code) for mode in MODES}


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    home = tmp_path_factory.mktemp("both_home")
    docs = tmp_path_factory.mktemp("both_docs")
    (docs / "parking.md").write_text(PARKING, encoding="utf-8")
    (docs / "badges.md").write_text(BADGES, encoding="utf-8")
    (docs / "broken.pdf").write_bytes(b"%PDF-1.4 not really")
    root = tmp_path_factory.mktemp("both_site")
    with served_site(root) as site:
        (root / "sitemap.xml").write_text(
            '<?xml version="1.0" encoding="UTF-8"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
            f"<url><loc>{site}/docs/leave.html</loc></url><url><loc>{site}/other/outside.html</loc></url>"
            "</urlset>",
            encoding="utf-8",
        )
        lore = Lore(load_settings(home=home, api={"rate_limit_per_minute": 0, "web_sources": [f"{site}/"]}))
        lore.create_kb("hb", "sample handbook")
        assert lore.ingest("hb", [EXAMPLES]).count("ingested") == 5
        admin = lore.catalog.create_api_key("default", ["admin"])[1]
        staff = lore.catalog.create_api_key("default", ["staff"])[1]
        with LiveServer(create_app(lore)) as server:
            yield World(home, server, admin, staff, site, docs)
        lore.close()


def flat(text: str) -> str:
    """Output with the console's line wrapping undone."""
    return " ".join(text.split())


def _rows(listing: list[dict[str, Any]], *names: str) -> dict[str, dict[str, Any]]:
    return {row["name"]: row for row in listing if row["name"] in names}


# --- kb create / list / delete -------------------------------------------------------------------------


def test_kb_create_list_delete_mean_the_same_in_both_modes(world: World) -> None:
    outs = {m: flat(world.ok(m, "kb", "create", f"kb-{m}", "--description", "both ways")) for m in MODES}
    assert "owned by tenant 'default'" in outs["local"] and "kb-local" in outs["local"]
    assert outs["remote"].startswith(outs["local"].replace("kb-local", "kb-remote").split(", owned")[0])
    assert f"owned by tenant 'default' on {world.server.url}" in outs["remote"]
    listed = {m: _rows(world.json(m, "kb", "list"), "kb-local", "kb-remote") for m in MODES}
    assert listed["local"] == listed["remote"] and len(listed["local"]) == 2
    local, remote = listed["local"]["kb-local"], listed["local"]["kb-remote"]
    assert {**local, "name": "", "created_at": ""} == {**remote, "name": "", "created_at": ""}
    assert local["owner"] == "default" and local["description"] == "both ways" and local["files"] == 0
    tables = world.both("kb", "list")
    assert tables["local"] == tables["remote"] and "kb-" in tables["local"]

    # --tenant: a local owner tenant; a server creates for its key's tenant, so it refuses the option
    assert "owned by tenant 'acme'" in flat(world.ok("local", "kb", "create", "kb-acme", "--tenant", "acme"))
    refused = world.run("remote", "kb", "create", "kb-x", "--tenant", "default")
    assert refused.exit_code == 2 and "--tenant: not available against a server" in flat(refused.output)
    assert _rows(world.json("local", "kb", "list"), "kb-acme")["kb-acme"]["owner"] == "acme"
    assert not _rows(world.json("remote", "kb", "list"), "kb-acme", "kb-x")  # not the key's tenant's

    # delete: each mode deletes the KB the other created; --yes in both, a refusal without it
    assert world.run("local", "kb", "delete", "kb-remote", input="n\n").exit_code == 1
    assert world.run("remote", "kb", "delete", "kb-local", input="n\n").exit_code == 1
    assert world.ok("local", "kb", "delete", "kb-remote", "--yes") == "deleted kb-remote\n"
    assert world.ok("remote", "kb", "delete", "kb-local", "--yes") == "deleted kb-local\n"
    assert world.ok("local", "kb", "delete", "kb-acme", "--yes") == "deleted kb-acme\n"
    for m in MODES:
        assert not _rows(world.json(m, "kb", "list"), "kb-local", "kb-remote", "kb-acme")
        gone = world.run(m, "kb", "delete", "kb-local", "--yes")
        assert gone.exit_code == 2 and "'kb-local' not found" in gone.output


def test_kb_share_and_owner_refuse_the_server(world: World) -> None:
    for sub in (["share", "hb", "acme"], ["unshare", "hb", "acme"], ["owner", "hb", "acme"]):
        refused = world.run("remote", "kb", *sub)
        assert refused.exit_code == 2 and "runs locally only" in flat(refused.output), refused.output


# --- ingest (files and web) and files list / delete ------------------------------------------------------


def _indexed(listing: dict[str, Any]) -> list[tuple[str, str, int]]:
    """(file name, status, chunks) of a listing's indexed files, by name (a local path or an upload)."""
    return sorted((Path(f["path"]).name, f["status"], f["chunks"]) for f in listing["indexed"])


def test_ingest_files_then_list_and_delete_them_in_both_modes(world: World) -> None:
    for m in MODES:
        world.ok(m, "kb", "create", f"ing-{m}")
    outs = {m: world.ok(m, "ingest", str(world.docs), "--kb", f"ing-{m}", code=1) for m in MODES}
    for out in outs.values():  # the broken PDF fails the command; the rest go in
        assert "3 files: 2 ingested, 1 failed" in out and "broken.pdf" in out
    # the same files in both KBs; each KB listed the same way in both modes
    listed = {
        (m, kb): world.json(m, "files", "list", "--kb", kb)
        for m in MODES
        for kb in ("ing-local", "ing-remote")
    }
    assert _indexed(listed["local", "ing-local"]) == _indexed(listed["local", "ing-remote"])
    assert [n for n, s, c in _indexed(listed["local", "ing-local"]) if s == "ingested" and c > 0] == [
        "badges.md",
        "parking.md",
    ]
    for kb in ("ing-local", "ing-remote"):
        assert listed["local", kb] == listed["remote", kb]
    assert {u["name"] for u in listed["local", "ing-remote"]["uploads"]} == {
        "parking.md",
        "badges.md",
        "broken.pdf",
    }
    assert listed["local", "ing-local"]["uploads"] == []  # a local ingest reads the files where they are
    tables = world.both("files", "list", "--kb", "ing-remote")
    assert tables["local"] == tables["remote"] and "parking.md" in tables["local"]

    # delete: one upload through each mode, the same report; then gone in both listings
    deleted = {
        m: world.ok(m, "files", "delete", "--kb", "ing-remote", f, "--yes")
        for m, f in zip(MODES, ("parking.md", "badges.md"), strict=True)
    }
    assert deleted["local"] == "ing-remote: deleted parking.md (upload and indexed file)\n"
    assert deleted["remote"] == "ing-remote: deleted badges.md (upload and indexed file)\n"
    for m in MODES:
        assert world.run(m, "files", "delete", "--kb", "ing-remote", "parking.md", input="n\n").exit_code == 1
        gone = world.run(m, "files", "delete", "--kb", "ing-remote", "parking.md", "--yes")
        assert gone.exit_code == 2 and "parking.md" in gone.output
        after = world.json(m, "files", "list", "--kb", "ing-remote")
        assert [u["name"] for u in after["uploads"]] == ["broken.pdf"]
        assert [n for n, _, _ in _indexed(after)] == ["broken.pdf"]
    assert world.run("local", "ingest", "--kb", "ing-local").exit_code == 2  # nothing to ingest
    assert world.run("remote", "ingest", "--kb", "ing-local").exit_code == 2


@pytest.mark.parametrize(
    "options",
    [
        ["{site}/docs/index.html"],  # a URL crawled within its folder
        ["{site}/docs/index.html", "--max-pages", "2"],
        ["{site}/docs/travel.html", "--prefix", "{site}/docs/"],
        ["--sitemap", "{site}/sitemap.xml", "--prefix", "{site}/other/"],
    ],
    ids=["url", "max-pages", "prefix", "sitemap"],
)
def test_web_ingest_options_mean_the_same_in_both_modes(world: World, options: list[str]) -> None:
    args = [o.format(site=world.site) for o in options]
    name = f"web-{options[-1].rsplit('/', 1)[-1].replace('.', '-')}-{len(options)}"
    outs: dict[str, str] = {}
    for m in MODES:
        world.ok(m, "kb", "create", f"{name}-{m}")
        outs[m] = world.ok(m, "ingest", *args, "--kb", f"{name}-{m}")
    indexed = {m: _indexed(world.json("local", "files", "list", "--kb", f"{name}-{m}")) for m in MODES}
    assert indexed["local"] == indexed["remote"] and indexed["local"]
    for m in MODES:
        summary = [
            line for line in outs[m].splitlines() if line.startswith(("web:", f"{len(indexed[m])} files"))
        ]
        assert len(summary) == 2, outs[m]
    assert [ln for ln in outs["local"].splitlines() if ln.startswith("web:")] == [
        ln for ln in outs["remote"].splitlines() if ln.startswith("web:")
    ]
    if "--max-pages" in options:
        assert len(indexed["local"]) == 2 and all("page limit of 2" in out for out in outs.values())
    if "--sitemap" in options:
        assert [n for n, _, _ in indexed["local"]] == ["outside.html"]


# --- build / versions / activate / rollback ---------------------------------------------------------------


def _versions(world: World, mode: str, kb: str) -> list[dict[str, Any]]:
    return [
        {k: v for k, v in row.items() if k != "created"} for row in world.json(mode, "versions", "--kb", kb)
    ]


def test_builds_versions_activate_and_rollback_mean_the_same_in_both_modes(
    world: World, tmp_path: Path
) -> None:
    sources = tmp_path / "sources"
    sources.mkdir()
    for name in ("parking.md", "badges.md"):
        shutil.copy(world.docs / name, sources / name)
    steps: list[tuple[list[str], int]] = [
        (["--activate", "-m", "first"], 0),
        (["--new-version", "--force", "--incremental-from", "active", "-m", "forced"], 0),
    ]
    kbs = {m: f"rel-{m}" for m in MODES}
    for m in MODES:
        world.ok(m, "kb", "create", kbs[m])
    outs: dict[str, list[str]] = {m: [] for m in MODES}
    for options, code in steps:
        for m in MODES:
            outs[m].append(
                world.ok(m, "build", "--kb", kbs[m], "--source", str(sources), *options, code=code)
            )
    (sources / "badges.md").unlink()  # a file of the KB missing from the sources
    for options, code in [(["--quality-gate"], 1), (["--quality-gate", "--remove-missing", "--activate"], 0)]:
        for m in MODES:
            outs[m].append(
                world.ok(m, "build", "--kb", kbs[m], "--source", str(sources), *options, code=code)
            )
    for local, remote in zip(outs["local"], outs["remote"], strict=True):
        version = [ln for ln in local.splitlines() if ln.startswith("version ")]
        assert version and version == [ln for ln in remote.splitlines() if ln.startswith("version ")]
    assert "quality gate:" in outs["local"][2] and "quality report:" in outs["local"][0]

    rows = {(m, kb): _versions(world, m, kbs[kb]) for m in MODES for kb in MODES}
    assert (
        rows["local", "local"]
        == rows["remote", "local"]
        == rows["local", "remote"]
        == rows["remote", "remote"]
    )
    assert [(r["seq"], r["status"], r["description"]) for r in rows["local", "local"]] == [
        (1, "RETIRED", "first"),
        (2, "STAGED", "forced"),
        (3, "FAILED", ""),
        (4, "ACTIVE", ""),
    ]
    assert rows["local", "local"][3]["files_removed"] == 1 and rows["local", "local"][1]["base_seq"] == 1
    tables = {m: world.ok(m, "versions", "--kb", kbs["local"]) for m in MODES}
    assert tables["local"] == tables["remote"] and "ACTIVE" in tables["local"]

    # activate / rollback, each with --reason, on each mode's KB; the same answers and the same log
    for m in MODES:
        assert (
            world.ok(m, "activate", "--kb", kbs[m], "2", "--reason", f"try 2 {m}") == "version 2 is active\n"
        )
        out = world.ok(m, "rollback", "--kb", kbs[m], "--reason", f"back {m}")
        assert out == "rolled back: version 1 is active\n"  # the newest retired one older than 2
        refused = world.run(m, "activate", "--kb", kbs[m], "3")
        assert refused.exit_code == 2 and "FAILED" in refused.output.upper()
    lore = Lore(load_settings(home=world.home))
    try:
        for m in MODES:
            log = lore.catalog.activation_log(lore.catalog.get_kb(kbs[m]).id)
            assert {(a.to_seq, a.reason) for a in log} >= {(2, f"try 2 {m}"), (1, f"back {m}")}
    finally:
        lore.close()
    assert _versions(world, "local", kbs["local"]) == _versions(world, "remote", kbs["remote"])


# --- ask -----------------------------------------------------------------------------------------------

QUESTION = "What is the refund window?"
ASK_OPTIONS = [
    [],
    ["-k", "3"],
    ["--mode", "deep"],
    ["--rewrite", "on"],
    ["--source", "nowhere"],  # no such business source: nothing to cite
    ["--version", "7"],  # an unversioned KB: the same refusal in both modes
    ["--scenario", "no-such-scenario"],  # the same refusal in both modes
    ["--mode", "slow"],  # the same refusal in both modes
    ["-k", "0"],
]


def _answer(end: dict[str, Any]) -> tuple[Any, ...]:
    return (end["answer"], end["refused"], end["route"], [c["file"] for c in end["citations"]])


@pytest.mark.parametrize("options", ASK_OPTIONS, ids=lambda o: " ".join(o) or "defaults")
def test_each_ask_option_means_the_same_in_both_modes(world: World, options: list[str]) -> None:
    results = {m: world.run(m, "ask", QUESTION, "--kb", "hb", "--json", *options) for m in MODES}
    codes = {m: r.exit_code for m, r in results.items()}
    assert codes["local"] == codes["remote"], {m: r.output for m, r in results.items()}
    if codes["local"] != 0:
        assert codes["local"] == 2
        return
    ends = {m: json.loads(r.output) for m, r in results.items()}
    assert _answer(ends["local"]) == _answer(ends["remote"])
    assert all(e["trace_id"] and e["session_id"] for e in ends.values())
    if "-k" in options or not options:
        assert ends["local"]["citations"] and not ends["local"]["refused"]


def test_ask_sessions_streaming_and_the_local_only_scope(world: World) -> None:
    first = json.loads(world.ok("local", "ask", QUESTION, "--kb", "hb", "--json"))
    # the session a local question opened goes on through the server, and back
    follow = json.loads(
        world.ok(
            "remote", "ask", "And for sale items?", "--kb", "hb", "--json", "--session", first["session_id"]
        )
    )
    assert follow["session_id"] == first["session_id"]
    again = json.loads(
        world.ok(
            "local", "ask", "And for gift cards?", "--kb", "hb", "--json", "--session", first["session_id"]
        )
    )
    assert again["session_id"] == first["session_id"]
    for m in MODES:
        unknown = world.run(m, "ask", QUESTION, "--kb", "hb", "--session", "no-such-session")
        assert unknown.exit_code == 2, unknown.output
        missing = world.run(m, "ask", QUESTION)
        assert missing.exit_code == 2 and "--kb: required unless --scenario is given" in flat(missing.output)
    streamed = world.both("ask", QUESTION, "--kb", "hb")
    for out in streamed.values():
        assert "route=" in out and "trace=" in out and "session=" in out
    # the operator narrows a question to a tenant, roles and datasets; a key sets them on a server
    narrowed = json.loads(world.ok("local", "ask", QUESTION, "--kb", "hb", "--json", "--tenant", "nobody"))
    assert narrowed["refused"] and not narrowed["citations"]
    assert world.ok(
        "local",
        "ask",
        QUESTION,
        "--kb",
        "hb",
        "--json",
        "--tenant",
        "default",
        "--roles",
        "staff",
        "--datasets",
        "handbook",
    )
    for option in (["--tenant", "default"], ["--roles", "staff"], ["--datasets", "handbook"]):
        refused = world.run("remote", "ask", QUESTION, "--kb", "hb", *option)
        assert refused.exit_code == 2 and "not available against a server" in flat(refused.output)
    assert world.run("local", "ask", QUESTION, "--kb", "hb", "--roles", "staff").exit_code == 2


def test_the_server_path_loads_no_engine() -> None:
    """`lore --server URL build/versions/…` runs where only the client is installed: no engine behind it."""
    from tests.cli.test_cli_imports import _heavy, _modules_after

    loaded = _modules_after("import lore.cli.releases, lore.cli.files, lore.cli.ask, lore.cli.backend_http")
    assert _heavy(loaded) == set() and "lore.cli.backend_local" not in loaded
    assert not {m for m in loaded if m.split(".")[0] == "pydantic"}
