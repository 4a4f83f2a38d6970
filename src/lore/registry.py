"""One registry per kind of backend: built-ins are named lazily ("module:attr") and plugins
register the same way, so adding a backend is adding one module."""

from __future__ import annotations

import importlib
from typing import Generic, TypeVar

from lore.errors import ConfigError

F = TypeVar("F")


class Registry(Generic[F]):
    """Factories by name; a built-in's module is imported only when it is first asked for."""

    def __init__(self, setting: str, builtin: dict[str, str]) -> None:
        self.setting = setting  # the setting that names the backend, for error messages
        self._builtin = dict(builtin)
        self._factories: dict[str, F] = {}

    def register(self, name: str, factory: F) -> None:
        """Register (or replace) the factory for `name`."""
        self._factories[name] = factory

    def get(self, name: str) -> F:
        """The factory for `name`; an unknown name is a ConfigError listing the known ones."""
        if name not in self._factories:
            if name not in self._builtin:
                known = ", ".join(sorted({*self._builtin, *self._factories}))
                raise ConfigError(f"{self.setting}: unknown {name!r} (known: {known})")
            module, _, attr = self._builtin[name].partition(":")
            self.register(name, getattr(importlib.import_module(module), attr))
        return self._factories[name]
