"""The built wheel installs into a fresh virtualenv outside the checkout, where `lore demo` and every
command of README's "Use" block, exactly as written, exit 0."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import time
from pathlib import Path

import pytest

from tests.conftest import REPO
from tests.deploy.wheel_build import venv_with

pytestmark = pytest.mark.slow
HANG_GUARD_S = 1800  # a stuck step fails the test instead of stalling the suite; no duration is asserted


def _use_section() -> str:
    text = (REPO / "README.md").read_text(encoding="utf-8")
    return text.split("\n## Use\n", 1)[1].split("\n## ", 1)[0]


def _demo_command(section: str) -> list[str]:
    """The prose's command for building the demo from an installed wheel, e.g. `LORE_HOME=… lore demo`."""
    found = re.search(r"`((?:\w+=\S+ )*lore demo)`", section)
    assert found, "README's Use section names no `… lore demo` command"
    return shlex.split(found.group(1))


def _use_block(section: str) -> list[list[str]]:
    """The commands of the section's first code block, comments and blank lines dropped."""
    block = section.split("```\n", 2)[1]
    return [words for line in block.splitlines() if (words := shlex.split(line, comments=True))]


def _run(argv: list[str], env: dict[str, str], cwd: Path, bin_dir: Path) -> None:
    """Run one README command with the venv's `lore`, shell-style `$VAR` expanded; assert it exits 0."""
    argv = [re.sub(r"\$(\w+)", lambda m: env[m.group(1)], word) for word in argv]
    assigned = {}
    while "=" in argv[0]:  # `NAME=value cmd …`
        name, value = argv.pop(0).split("=", 1)
        assigned[name] = value
    assert argv[0] == "lore", f"README command the test cannot run: {shlex.join(argv)}"
    start = time.monotonic()
    done = subprocess.run(
        [str(bin_dir / "lore"), *argv[1:]],
        cwd=cwd,
        env=env | assigned,
        capture_output=True,
        text=True,
        timeout=HANG_GUARD_S,
    )
    print(f"{time.monotonic() - start:7.1f} s  {shlex.join(argv)}")
    assert done.returncode == 0, f"{shlex.join(argv)} exited {done.returncode}:\n{done.stdout}\n{done.stderr}"


def test_wheel_runs_the_demo_and_the_readme_use_block(wheel: Path, tmp_path: Path) -> None:
    assert not tmp_path.resolve().is_relative_to(REPO.resolve())
    start = time.monotonic()
    venv = tmp_path / "venv"
    venv_with(venv, f"{wheel}[server]", timeout=HANG_GUARD_S)  # the engine: `pip install "lore-kb[server]"`
    print(f"{time.monotonic() - start:7.1f} s  wheel installed into a fresh venv")

    cwd = tmp_path / "work"  # the user's folder: a docs/ of their own, no checkout around
    (cwd / "docs").mkdir(parents=True)
    (cwd / "docs" / "office.md").write_text(
        "# Office hours\n\nThe Lisbon office opens at 8:30 and closes at 18:00 on weekdays.\n",
        encoding="utf-8",
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("LORE_") and k != "VIRTUAL_ENV"}
    env |= {
        "PWD": str(cwd),
        "PATH": f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}",
        "LORE_CONFIG": os.environ["LORE_CONFIG"],  # this test's absent lore.toml, not the developer's
        "XDG_DATA_HOME": str(tmp_path / "xdg-data"),  # the default home, were README to forget LORE_HOME
    }
    section = _use_section()
    _run(_demo_command(section), env, cwd, venv / "bin")
    commands = _use_block(section)
    assert commands[0][0] == "source" and commands[0][1].endswith("bin/activate")  # the venv's bin is used
    for words in commands[1:]:
        if words[0] == "export":
            name, value = words[1].split("=", 1)
            env[name] = re.sub(r"\$(\w+)", lambda m: env[m.group(1)], value)
        else:
            _run(words, env, cwd, venv / "bin")
    assert (cwd / ".lore" / "demo").is_dir()  # the demo and the block shared the README's home
    print(f"{time.monotonic() - start:7.1f} s  in all")
