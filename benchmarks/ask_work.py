"""Per-request work of `Lore.ask` in one process, one client: CPU ms and wall ms per answer.

The same questions as `benchmarks/load.py` (a fresh text per request, so the query-embedding cache does
not hide the work), over the sample handbook with the extractive generator. CPU time is the process's
(every thread), so it shows the work done even when other jobs share the machine. To compare two trees,
run it with each tree's `src` first on PYTHONPATH:

    OPENBLAS_NUM_THREADS=1 python benchmarks/ask_work.py --requests 60
"""

from __future__ import annotations

import argparse
import itertools
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from load import EXAMPLES, question

import lore
from lore.config import load_settings
from lore.engine import Lore


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--requests", type=int, default=60)
    p.add_argument("--warmup", type=int, default=10)
    p.add_argument("--label", default="")
    args = p.parse_args()
    with tempfile.TemporaryDirectory(prefix="lore-work-") as work:
        engine = Lore(load_settings(home=Path(work) / "home", storage={"dir": str(Path(work) / "files")}))
        engine.create_kb("hb")
        engine.ingest("hb", [EXAMPLES])
        counter = itertools.count(10_000)
        for _ in range(args.warmup):
            list(engine.ask("hb", question(counter)))
        cpu, wall = [], []
        for _ in range(args.requests):
            c0, w0 = time.process_time(), time.perf_counter()
            events = list(engine.ask("hb", question(counter)))
            cpu.append((time.process_time() - c0) * 1000)
            wall.append((time.perf_counter() - w0) * 1000)
            assert events[-1].type == "end", events[-1]
        engine.close()
    label = args.label or str(Path(lore.__file__).resolve().parents[2])
    print("| code | requests | CPU ms/request (mean) | CPU ms p50 | wall ms p50 |")
    print("|---|---|---|---|---|")
    print(
        f"| {label} | {args.requests} | {statistics.mean(cpu):.1f} | {statistics.median(cpu):.1f} | "
        f"{statistics.median(wall):.1f} |"
    )


if __name__ == "__main__":
    main()
