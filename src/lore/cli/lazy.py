"""Commands loaded on use: `lore --help` lists them from their source text, and only the command that runs
imports its module (and so the engine, PyMuPDF, ONNX Runtime… behind it)."""

from __future__ import annotations

import ast
import functools
import importlib
import importlib.metadata
import importlib.util
import re
from typing import TYPE_CHECKING, Any, ClassVar

import typer
from typer.core import TyperCommand, TyperGroup

from lore.registry import DISTRIBUTION

if TYPE_CHECKING:  # Typer's own copy of click
    from typer._click import Command, Context

SUBCOMMAND_ARGS = "lore.subcommand_args"
SERVER_HINT = f'this command needs the server: pip install "{DISTRIBUTION}[server]"'


class LazyGroup(TyperGroup):
    """A group whose `lazy` commands ("name" -> "module:attribute", a function or a Typer) are imported
    only when resolved to run; listing them (help, completion) reads their help from the module's source."""

    lazy: ClassVar[dict[str, str]] = {}

    def list_commands(self, ctx: Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *self.lazy})

    def get_command(self, ctx: Context, cmd_name: str) -> Command | None:
        if cmd_name in self.commands or cmd_name not in self.lazy:
            return super().get_command(ctx, cmd_name)
        target = self.lazy[cmd_name]
        return TyperCommand(cmd_name, help=source_help(*target.split(":")))

    def resolve_command(self, ctx: Context, args: list[str]) -> tuple[str | None, Command | None, list[str]]:
        if args and args[0] in self.lazy and args[0] not in self.commands:
            self.commands[args[0]] = load(args[0], self.lazy[args[0]])
        ctx.meta[SUBCOMMAND_ARGS] = args[1:]  # the group's callback, run next, sees what follows
        return super().resolve_command(ctx, args)


def subcommand_args(ctx: Context) -> list[str]:
    """The arguments after the subcommand's name, in a `LazyGroup`'s callback."""
    return list(ctx.meta.get(SUBCOMMAND_ARGS, []))


def lazy_group(commands: dict[str, str]) -> type[LazyGroup]:
    """A `LazyGroup` class (for `typer.Typer(cls=…)`) with these lazy commands."""
    return type("LazyGroup", (LazyGroup,), {"lazy": commands})


def load(name: str, target: str) -> Command:
    """The click command for `target` ("module:attribute"), importing its module now."""
    module, attr = target.split(":")
    obj: Any = getattr(importlib.import_module(module), attr)
    if isinstance(obj, typer.Typer):
        return typer.main.get_group(obj)
    single = typer.Typer(pretty_exceptions_enable=False)
    single.command(name)(obj)
    return typer.main.get_command(single)


@functools.cache
def source_help(module: str, attr: str) -> str:
    """The help of `attr` in `module` without importing it: a function's docstring, or the `help=` of a
    `typer.Typer(...)` assigned to that name."""
    spec = importlib.util.find_spec(module)
    if spec is None or spec.origin is None:
        return ""
    with open(spec.origin, encoding="utf-8") as source:
        tree = ast.parse(source.read())
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == attr:
            return ast.get_docstring(node) or ""
        if isinstance(node, ast.Assign | ast.AnnAssign) and isinstance(node.value, ast.Call):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(t, ast.Name) and t.id == attr for t in targets):
                for keyword in node.value.keywords:
                    if keyword.arg == "help" and isinstance(keyword.value, ast.Constant):
                        return str(keyword.value.value)
    return ""


def server_missing() -> bool:
    """Whether a package of the `server` extra is not installed (a client-only `lore`): an engine module's
    import then fails, and the command says to install the extra instead of showing a traceback."""
    try:
        requires = importlib.metadata.requires(DISTRIBUTION) or []
    except importlib.metadata.PackageNotFoundError:
        return False
    for requirement in requires:
        name = re.match(r"[A-Za-z0-9._-]+", requirement)
        if name and re.search(r"""extra\s*==\s*["']server["']""", requirement):
            try:
                importlib.metadata.distribution(name[0])
            except importlib.metadata.PackageNotFoundError:
                return True
    return False
