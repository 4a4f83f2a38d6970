"""Build the project's wheel from a clean copy of the checkout, and install it into fresh virtualenvs, for the
wheel tests."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from tests.conftest import REPO

SRC = REPO / "src" / "lore"


def build_wheel(workdir: Path) -> Path:
    """Build with `pip wheel` from a copy of the checkout's top-level files and src/ (no stale build/ or
    egg-info can leak in, nothing is written into the checkout); returns the wheel's path."""
    tree = workdir / "tree"
    tree.mkdir(parents=True)
    for path in REPO.iterdir():
        if path.is_file():
            shutil.copy2(path, tree / path.name)
    shutil.copytree(
        REPO / "src", tree / "src", ignore=shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info")
    )
    out = workdir / "dist"
    cmd = [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(out), str(tree)]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout + done.stderr
    (wheel,) = out.glob("lore_kb-*.whl")
    return wheel


def venv_with(venv: Path, *requirements: str, timeout: float = 1800) -> Path:
    """Create a virtualenv at `venv` (or reuse it) and pip-install `requirements` into it under
    constraints.txt, as `make install` does (without compiling every module up front: the commands compile
    what they import, and compiling all of them was half the install's time); returns its bin folder."""
    bin_dir = venv / "bin"
    steps = [] if bin_dir.exists() else [[sys.executable, "-m", "venv", str(venv)]]
    pip = [str(bin_dir / "pip"), "install", "-q", "--no-compile", "-c", str(REPO / "constraints.txt")]
    steps.append([*pip, *requirements])
    for cmd in steps:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        assert done.returncode == 0, done.stdout + done.stderr
    return bin_dir
