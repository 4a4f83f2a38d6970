"""Every option's help reads in `--help` as written: a config section such as `[retrieve]` is text, not
Rich markup that swallows it ("(default: [retrieve] mode)" printed as "(default: mode)")."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import typer.main
from typer._click import Context
from typer.testing import CliRunner

from lore.cli.lazy import LazyGroup, load
from lore.cli.main import app

_SECTION = re.compile(r"\\?\[([a-z_]+)\]")


def _commands(group: Any, path: list[str]) -> Iterator[tuple[list[str], Any]]:
    """Every command under `group`, lazy ones imported (their listing carries only the docstring)."""
    ctx = Context(group)
    for name in group.list_commands(ctx):
        lazy = isinstance(group, LazyGroup) and name in group.lazy and name not in group.commands
        command = load(name, group.lazy[name]) if lazy else group.get_command(ctx, name)
        yield [*path, name], command
        if hasattr(command, "list_commands"):
            yield from _commands(command, [*path, name])


def test_config_sections_named_in_option_help_are_printed() -> None:
    runner = CliRunner()
    checked = 0
    for path, command in _commands(typer.main.get_command(app), []):
        sections = {
            m.group(1) for p in command.params for m in _SECTION.finditer(getattr(p, "help", None) or "")
        }
        if not sections:
            continue
        shown = runner.invoke(app, [*path, "--help"], terminal_width=200)
        assert shown.exit_code == 0, (path, shown.output)
        flat = " ".join(shown.output.replace("│", " ").split())
        for section in sections:
            assert f"[{section}]" in flat, (path, section)
        checked += 1
    assert checked >= 2  # search and eval name [retrieve] and [rerank]
