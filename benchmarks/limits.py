"""What a ZIP bomb costs a real `lore serve`: `/preview` of a DOCX that inflates to N MB, with the
decompression limits on (default settings) and off (the baseline: how the service behaved before).

    python benchmarks/limits.py --inflate-mb 300

Prints the status, the time and the server's peak resident memory (VmHWM) after a warm-up preview of a
normal DOCX and after the bomb.
"""

from __future__ import annotations

import argparse
import io
import os
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

import httpx
from fuzz import free_port, wait_healthy

from lore.config import load_settings
from lore.engine import Lore

ROOT = Path(__file__).resolve().parents[1]
DOCX = ROOT / "examples" / "handbook" / "travel_policy.docx"


def zip_bomb(inflated_mb: int) -> bytes:
    """The sample DOCX with its document part padded by `inflated_mb` MB of XML whitespace."""
    out = io.BytesIO()
    with (
        zipfile.ZipFile(DOCX) as src,
        zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as dst,
    ):
        for item in src.infolist():
            data = src.read(item)
            if (
                item.filename == "word/document.xml"
            ):  # whitespace between two elements: valid XML, parsed whole
                head, sep, tail = data.partition(b"<w:body>")
                with dst.open(item.filename, "w", force_zip64=True) as part:
                    part.write(head + sep)
                    block = b" " * (1 << 20)
                    for _ in range(inflated_mb):
                        part.write(block)
                    part.write(tail)
            else:
                dst.writestr(item, data)
    return out.getvalue()


def memory_kb(pid: int, field: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    return 0


def run(home: Path, key: str, env_extra: dict[str, str]) -> tuple[int, float, float, float, str]:
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    env = {**os.environ, "LORE_HOME": str(home), **env_extra}
    server = subprocess.Popen(
        [str(Path(sys.executable).parent / "lore"), "serve", "--port", str(port)],
        env=env,
        cwd=home,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_healthy(url, server)
        headers = {"Authorization": f"Bearer {key}"}
        # Warm-up: a normal DOCX, so that loading the parsers is not counted.
        httpx.post(url + "/api/kbs/lim/preview", json={"file": DOCX.name}, headers=headers, timeout=600)
        before = memory_kb(server.pid, "VmHWM") / 1024
        started = time.perf_counter()
        r = httpx.post(url + "/api/kbs/lim/preview", json={"file": "bomb.docx"}, headers=headers, timeout=600)
        seconds = time.perf_counter() - started
        peak = memory_kb(server.pid, "VmHWM") / 1024
        detail = r.json().get("detail", "") if r.status_code != 200 else f"{r.json()['chunks']} chunks"
        return r.status_code, seconds, before, peak, str(detail)[:70]
    finally:
        server.terminate()
        server.wait(30)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--inflate-mb", type=int, default=300)
    args = parser.parse_args()
    home = Path(tempfile.mkdtemp(prefix="lore-limits-"))
    try:
        lore = Lore(load_settings(home=home))
        lore.create_kb("lim")
        key = lore.catalog.create_api_key("default", ["admin"])[1]
        lore.close()
        bomb = zip_bomb(args.inflate_mb)
        (home / "uploads" / "lim").mkdir(parents=True)
        (home / "uploads" / "lim" / "bomb.docx").write_bytes(bomb)
        shutil.copy(DOCX, home / "uploads" / "lim" / DOCX.name)
        print(f"bomb.docx: {len(bomb) / 1e3:.0f} KB, inflates to {args.inflate_mb} MB\n")
        print(
            "| server | status | seconds | peak RSS after warm-up (MB) | peak RSS after the bomb (MB) | "
            "answer |\n|---|---|---|---|---|---|"
        )
        for name, env in [
            (
                "limits off (baseline: before)",
                {"LORE_INGEST__MAX_UNZIPPED_MB": "100000", "LORE_INGEST__MAX_ZIP_RATIO": "1000000"},
            ),
            ("default limits", {}),
        ]:
            status, seconds, before, peak, detail = run(home, key, env)
            print(f"| {name} | {status} | {seconds:.2f} | {before:.0f} | {peak:.0f} | {detail} |")
        return 0
    finally:
        shutil.rmtree(home, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
