"""Benchmark helpers for processes: a `milvus-lite server` (Milvus's gRPC protocol) and resident memory."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path


def rss_mb(pid: int | None = None) -> float:
    """Resident set size of a process (this one by default) in MB, from /proc."""
    status = Path(f"/proc/{pid or os.getpid()}/status").read_text(encoding="utf-8")
    line = next(x for x in status.splitlines() if x.startswith("VmRSS:"))
    return int(line.split()[1]) / 1024


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class MilvusServer:
    """`milvus-lite server` over `data_dir` on a free port; `restart()` makes it load from disk again."""

    def __init__(self, data_dir: Path) -> None:
        self.data_dir, self.port = data_dir, _free_port()
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def uri(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> MilvusServer:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        exe = str(Path(sys.executable).with_name("milvus-lite"))
        args = [
            exe,
            "server",
            "--data-dir",
            str(self.data_dir),
            "--host",
            "127.0.0.1",
            "--port",
            str(self.port),
        ]
        with (self.data_dir.parent / "milvus-server.log").open("ab") as log:
            self.proc = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", self.port)) == 0:
                    return self
            time.sleep(0.1)
        raise TimeoutError(f"milvus-lite server did not listen on {self.port}")

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(60)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(10)
        self.proc = None

    def restart(self) -> None:
        self.stop()
        self.start()

    def rss_mb(self) -> float:
        """The server's resident memory: every process of its process group (it may spawn a child)."""
        if self.proc is None:
            return 0.0
        total = 0.0
        for stat in Path("/proc").glob("[0-9]*/stat"):
            try:
                fields = stat.read_text(encoding="utf-8").rsplit(")", 1)[1].split()
                if int(fields[2]) == self.proc.pid:  # pgrp
                    total += rss_mb(int(stat.parent.name))
            except (OSError, ValueError, StopIteration):
                continue
        return total
