"""`lore serve` on SIGTERM: stops taking connections, lets an open answer stream finish, then exits."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import threading
import time
from pathlib import Path

import httpx

from lore.config import load_settings
from lore.engine import Lore
from tests.answer.chat_server import answer, serve
from tests.conftest import EXAMPLES
from tests.servers import BIN, free_port, wait_port


def test_sigterm_lets_the_open_stream_finish(tmp_path: Path) -> None:
    lore = Lore(load_settings(home=tmp_path))
    lore.create_kb("hb")
    lore.ingest("hb", [EXAMPLES])
    _, key = lore.catalog.create_api_key("default", ["staff"])
    lore.close()
    with serve() as llm:
        llm.script.append(
            answer(
                "年假天数按累计工作年限计算",
                "，未休年假可顺延至次年 3 月 31 日 [1]。",
                gate_after=1,
                state=llm,
            )
        )
        port = free_port()
        env = {k: v for k, v in os.environ.items() if not k.startswith("LORE_")}
        env |= {
            "LORE_HOME": str(tmp_path),
            "LORE_CONFIG": str(tmp_path / "none.toml"),
            "LORE_ANSWER__GENERATOR": "openai",
            "LORE_ANSWER__LLM_BASE_URL": llm.url,
            "LORE_ANSWER__LLM_MODEL": "m",
            "LORE_API__SHUTDOWN_GRACE_S": "30",
        }
        log = (tmp_path / "serve.log").open("wb")
        proc = subprocess.Popen(
            [str(BIN / "lore"), "serve", "--host", "127.0.0.1", "--port", str(port)],
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        wait_port(port, timeout=180)
        events: list[str] = []
        started = threading.Event()

        def ask() -> None:
            with httpx.stream(
                "POST",
                f"http://127.0.0.1:{port}/api/ask",
                timeout=60,
                headers={"Authorization": f"Bearer {key}"},
                json={"kb": "hb", "question": "年假有几天？怎么申请？"},
            ) as r:
                for line in r.iter_lines():
                    if line.startswith("event: "):
                        events.append(line[7:])
                        if line == "event: start":
                            started.set()
                    elif line.startswith("data: ") and events[-1] == "end":
                        events.append(json.loads(line[6:])["answer"])

        client = threading.Thread(target=ask)
        client.start()
        assert started.wait(120), (tmp_path / "serve.log").read_text(errors="replace")[-2000:]
        proc.send_signal(signal.SIGTERM)  # mid-answer: the LLM holds its stream until the gate opens
        refused, deadline = False, time.monotonic() + 60
        while not refused and time.monotonic() < deadline:  # until the listener is closed
            try:
                httpx.get(f"http://127.0.0.1:{port}/api/health", timeout=2)
                time.sleep(0.05)
            except httpx.TransportError:
                refused = True
        assert refused and proc.poll() is None, " ".join(
            events
        )  # no new connections, still finishing the stream
        llm.gate.set()
        client.join(60)
        assert proc.wait(30) in (0, -signal.SIGTERM)  # uvicorn re-raises the signal once it has drained
        log.close()
    assert events[-2] == "end" and "顺延至次年" in events[-1]
    assert "Waiting for connections to close" in (tmp_path / "serve.log").read_text(errors="replace")
