"""One registry per kind of backend: built-ins are named lazily ("module:attr"), plugins register the
same way in code or through a Python entry-point group, so adding a backend is adding one module."""

from __future__ import annotations

import importlib
from importlib.metadata import entry_points
from typing import Generic, TypeVar

from lore.errors import ConfigError

F = TypeVar("F")


class Registry(Generic[F]):
    """Factories by name; a built-in's module is imported only when it is first asked for.

    With `group` set, installed packages add names through entry points of that group
    (`[project.entry-points."<group>"] name = "pkg.module:attr"`); a built-in name wins.
    """

    def __init__(self, setting: str, builtin: dict[str, str], group: str | None = None) -> None:
        self.setting = setting  # the setting that names the backend, for error messages
        self.group = group
        self._builtin = dict(builtin)
        self._factories: dict[str, F] = {}
        self._plugins: dict[str, str] | None = None  # entry points, read on first need

    def register(self, name: str, factory: F) -> None:
        """Register (or replace) the factory for `name`."""
        self._factories[name] = factory

    def names(self) -> list[str]:
        """Every known name: built-ins, registered factories and installed plugins."""
        return sorted({*self._builtin, *self._factories, *self._plugin_targets()})

    def find(self, name: str) -> F | None:
        """The factory for `name`, or None if no built-in, registration or plugin has it."""
        if name not in self._factories:
            target = self._builtin.get(name) or self._plugin_targets().get(name)
            if target is None:
                return None
            module, _, attr = target.partition(":")
            self.register(name, getattr(importlib.import_module(module), attr))
        return self._factories[name]

    def get(self, name: str) -> F:
        """The factory for `name`; an unknown name is a ConfigError listing the known ones."""
        factory = self.find(name)
        if factory is None:
            raise ConfigError(f"{self.setting}: unknown {name!r} (known: {', '.join(self.names())})")
        return factory

    def refresh(self) -> None:
        """Read the entry points again (after packages were installed in this process)."""
        self._plugins = None

    def _plugin_targets(self) -> dict[str, str]:
        if self._plugins is None:
            found = entry_points(group=self.group) if self.group else ()
            self._plugins = {ep.name: ep.value for ep in found}
        return self._plugins
