"""Benchmark helpers for processes: a `milvus-lite server` (Milvus's gRPC protocol) and resident memory."""

from __future__ import annotations

import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repo: its tests' server helpers

from tests.servers import MilvusServer as TestMilvusServer


def rss_mb(pid: int | None = None) -> float:
    """Resident set size of a process (this one by default) in MB, from /proc."""
    status = Path(f"/proc/{pid or os.getpid()}/status").read_text(encoding="utf-8")
    line = next(x for x in status.splitlines() if x.startswith("VmRSS:"))
    return int(line.split()[1]) / 1024


class MilvusServer(TestMilvusServer):
    """The tests' `milvus-lite server`, given longer to start and stop over a large store, and its memory."""

    start_timeout_s = 120.0
    stop_timeout_s = 60.0

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
