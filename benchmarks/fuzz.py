"""Fuzz the service: a bounded schemathesis run against a real `lore serve` over the sample handbook.

Every operation in `/openapi.json` is called with generated valid and invalid input, authenticated
with an admin key; the check is that no response is a server error (5xx). Exit status 0 = none.

    python benchmarks/fuzz.py --max-examples 30          # `make fuzz`
"""

from __future__ import annotations

import argparse
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from lore.config import load_settings
from lore.engine import Lore

ROOT = Path(__file__).resolve().parents[1]
HANDBOOK = ROOT / "examples" / "handbook"
# Real names half of the time, so that generated requests reach past "not found" into the handlers.
CONFIG = """
[dictionaries.kbs]
values = ["hb"]
[dictionaries.files]
values = ["employee_handbook.md", "faq.csv", "travel_policy.docx"]
[dictionaries.seqs]
values = [1, 2]
[parameters]
kb = { dictionary = "kbs", probability = 0.6 }
name = { dictionary = "files", probability = 0.5 }
seq = { dictionary = "seqs", probability = 0.5 }
"""


def prepare(home: Path) -> str:
    """A home with the sample handbook KB; returns an admin key of tenant `default`."""
    lore = Lore(load_settings(home=home))
    try:
        lore.create_kb("hb", "sample handbook")
        uploads = home / "uploads" / "hb"  # as if uploaded: the originals are served too
        shutil.copytree(HANDBOOK, uploads)
        lore.ingest("hb", [uploads])
        return lore.catalog.create_api_key("default", ["admin"])[1]
    finally:
        lore.close()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_healthy(url: str, server: subprocess.Popen[bytes], timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise SystemExit(f"lore serve exited with {server.returncode}")
        try:
            with urllib.request.urlopen(url + "/api/health", timeout=2):
                return
        except OSError:
            time.sleep(0.5)
    raise SystemExit("lore serve did not become healthy")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max-examples", type=int, default=30, help="generated cases per operation")
    parser.add_argument("--max-time", type=int, default=0, help="seconds for the whole run (0: no budget)")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    home = Path(tempfile.mkdtemp(prefix="lore-fuzz-"))
    bin_dir = Path(sys.executable).parent
    try:
        key = prepare(home)
        port = free_port()
        url = f"http://127.0.0.1:{port}"
        env = {**os.environ, "LORE_HOME": str(home), "LORE_API__RATE_LIMIT_PER_MINUTE": "0"}
        log = (home / "serve.log").open("wb")
        server = subprocess.Popen(
            [str(bin_dir / "lore"), "serve", "--host", "127.0.0.1", "--port", str(port)],
            env=env,
            cwd=home,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        try:
            wait_healthy(url, server)
            (home / "schemathesis.toml").write_text(CONFIG, encoding="utf-8")
            command = [
                str(bin_dir / "st"),
                "--config-file",
                str(home / "schemathesis.toml"),
                "run",
                url + "/openapi.json",
                "-H",
                f"Authorization: Bearer {key}",
                "--checks",
                "not_a_server_error",
                "--max-examples",
                str(args.max_examples),
                "--seed",
                str(args.seed),
                "--workers",
                "1",
                "--generation-database",
                "none",
                "--suppress-health-check",
                "all",
                "--request-timeout",
                "60",
            ]
            if args.max_time:
                command += ["--max-time", str(args.max_time)]
            code = subprocess.call(command)
        finally:
            server.terminate()
            server.wait(30)
            log.close()
        errors = [
            line
            for line in (home / "serve.log").read_text(errors="replace").splitlines()
            if " 500 " in line or "Traceback" in line
        ]
        print(
            f"\n| run | schemathesis exit | server log lines with 500/Traceback |\n|---|---|---|\n"
            f"| max_examples={args.max_examples} seed={args.seed} | {code} | {len(errors)} |"
        )
        for line in errors[:20]:
            print("  " + line)
        return code or (1 if errors else 0)
    finally:
        shutil.rmtree(home, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
