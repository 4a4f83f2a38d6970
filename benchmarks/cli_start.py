"""How long `lore` takes to start: median and min of N runs of each command beside `python -c pass`.

    .venv/bin/python benchmarks/cli_start.py [--runs 5] [--search]

`--search` also ingests examples/handbook into a temporary home (not timed) and times an end-to-end
`lore search … --kb handbook`. Bytecode is cached in a temporary folder (PYTHONPYCACHEPREFIX), warmed by one
untimed run, so the figures are those of an installed `lore`, not of recompiling the sources.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent


def timed(argv: list[str], env: dict[str, str], runs: int) -> list[float]:
    """Wall-clock seconds of `runs` runs of argv (after one warm-up run); a failing run stops the script."""
    times = []
    for i in range(runs + 1):
        start = time.perf_counter()
        done = subprocess.run(argv, env=env, cwd=REPO, capture_output=True, text=True)
        if done.returncode != 0:
            sys.exit(f"{' '.join(argv)} failed ({done.returncode}): {done.stderr[-500:]}")
        if i:
            times.append(time.perf_counter() - start)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--search", action="store_true", help="Also time `lore search` on the sample KB.")
    args = parser.parse_args()
    lore = str(BIN / "lore")
    with tempfile.TemporaryDirectory(prefix="lore-cli-start-") as tmp:
        env = {k: v for k, v in os.environ.items() if not k.startswith("LORE_")}
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env |= {"PYTHONPYCACHEPREFIX": str(Path(tmp) / "pycache"), "LORE_HOME": str(Path(tmp) / "home")}
        env["LORE_CONFIG"] = str(Path(tmp) / "no-lore.toml")
        commands = {
            "python -c pass": ([sys.executable, "-c", "pass"], env),
            "lore --help": ([lore, "--help"], env),
            "lore kb list (no KBs)": ([lore, "kb", "list"], env),
        }
        if args.search:
            print("ingesting examples/handbook into a temporary home (not timed)…", file=sys.stderr)
            kb_env = env | {"LORE_HOME": str(Path(tmp) / "search-home")}  # `kb list` keeps an empty home
            for argv in (
                [lore, "kb", "create", "handbook"],
                [lore, "ingest", "examples/handbook", "--kb", "handbook"],
            ):
                subprocess.run(argv, env=kb_env, cwd=REPO, check=True, capture_output=True)
            search = [lore, "search", "refund window", "--kb", "handbook"]
            commands["lore search … --kb handbook"] = (search, kb_env)
        rows = {name: timed(argv, run_env, args.runs) for name, (argv, run_env) in commands.items()}
    base = statistics.median(rows["python -c pass"])
    print(f"{'command':<30} {'median s':>9} {'min s':>7} {'× python -c pass':>17}")
    for name, times in rows.items():
        median = statistics.median(times)
        print(f"{name:<30} {median:>9.3f} {min(times):>7.3f} {median / base:>17.1f}")
    print(f"({args.runs} runs each after a warm-up; load average {os.getloadavg()[0]:.2f})")


if __name__ == "__main__":
    main()
