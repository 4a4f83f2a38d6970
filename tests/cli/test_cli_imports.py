"""`lore` starts without the engine: its command modules load only when their command runs."""

from __future__ import annotations

import inspect
import json
import subprocess
import sys

import pytest
import typer
from typer.testing import CliRunner

from lore.cli.lazy import source_help
from lore.cli.main import _COMMANDS, _KB_COMMANDS, app

HEAVY = (
    "fitz",
    "pymupdf",
    "onnxruntime",
    "rapidocr",
    "lightgbm",
    "pymilvus",
    "langgraph",
    "uvicorn",
    "fastapi",
)
LOADED = "import json, sys; {run}; print(json.dumps(sorted(sys.modules)))"


def _modules_after(run: str) -> set[str]:
    """The modules a fresh interpreter holds after running `run`."""
    out = subprocess.run(
        [sys.executable, "-c", LOADED.format(run=run)], capture_output=True, text=True, check=True
    ).stdout
    return set(json.loads(out.splitlines()[-1]))


def _heavy(modules: set[str]) -> set[str]:
    return {m for m in modules if m.split(".")[0] in HEAVY or m.startswith("lore.engine")}


def test_importing_the_cli_loads_no_heavy_module() -> None:
    modules = _modules_after("import lore.cli.main")
    assert "lore.cli.main" in modules and "typer" in modules
    assert _heavy(modules) == set()


def test_help_lists_every_command_without_loading_their_modules() -> None:
    run = (
        "import contextlib, io; from lore.cli.main import main; sys.argv = ['lore', '--help']\n"
        "with contextlib.redirect_stdout(io.StringIO()) as out, contextlib.suppress(SystemExit): main()\n"
        "print(json.dumps(out.getvalue()))"
    )
    done = subprocess.run(
        [sys.executable, "-c", f"import json, sys\n{run}\nprint(json.dumps(sorted(sys.modules)))"],
        capture_output=True,
        text=True,
        check=True,
    )
    help_text, modules = (json.loads(line) for line in done.stdout.splitlines()[-2:])
    assert _heavy(set(modules)) == set()
    assert not {m for m in modules if m in {t.split(":")[0] for t in _COMMANDS.values()}}
    for name in [*_COMMANDS, "kb", "ingest", "search", "info"]:
        assert f" {name} " in help_text, name
    assert "List a knowledge base's versions." in help_text  # the help read from the source


@pytest.mark.parametrize(("group", "commands"), [((), _COMMANDS), (("kb",), _KB_COMMANDS)])
def test_every_lazy_command_loads_and_its_listed_help_is_its_own(
    group: tuple[str, ...], commands: dict[str, str]
) -> None:
    """A wrong module or name fails here; so does help read from the source that differs from the real one."""
    import importlib

    for name, target in commands.items():
        result = CliRunner().invoke(app, [*group, name, "--help"])
        assert result.exit_code == 0 and "Usage:" in result.output, (name, result.output)
        module, attr = target.split(":")
        obj = getattr(importlib.import_module(module), attr)
        real = obj.info.help if isinstance(obj, typer.Typer) else inspect.getdoc(obj)
        assert source_help(module, attr) == real and real, name


def test_an_unknown_command_is_still_refused() -> None:
    result = CliRunner().invoke(app, ["versoins"])
    assert result.exit_code == 2 and "versoins" in result.output


@pytest.mark.parametrize("module", ["ask", "access", "files", "scenario", "mcp", "service", "demo", "info"])
def test_a_commands_module_loads_the_engine_only_when_it_runs(module: str) -> None:
    """`lore ask --help` (and the like) imports the command's module but not what running it needs."""
    assert _heavy(_modules_after(f"import lore.cli.{module}")) == set()
