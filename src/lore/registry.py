"""One plug-in mechanism for every kind of backend (stores, embedders, generators, rerankers, loaders):
Python entry points. Lore declares its built-ins in its own pyproject.toml exactly as a third-party
package declares its plug-ins, so adding a backend is adding one module and one entry-point line."""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from importlib.metadata import EntryPoint, entry_points
from typing import Generic, TypeVar

from lore.errors import ConfigError

F = TypeVar("F")
DISTRIBUTION = "lore-kb"  # whose entry points are the built-ins
KINDS = {  # kind of backend -> its entry-point group
    "stores": "lore.stores",
    "embedders": "lore.embedders",
    "generators": "lore.generators",
    "rerankers": "lore.rerankers",
    "loaders": "lore.loaders",
}


def _is_builtin(ep: EntryPoint) -> bool:
    return ep.dist is not None and ep.dist.name == DISTRIBUTION


class Registry(Generic[F]):
    """Factories by name from the entry points of `group` (`[project.entry-points."<group>"]
    name = "pkg.module:attr"`); a module is imported only when its name is first asked for, and a
    built-in name is never taken over by a plug-in."""

    def __init__(self, setting: str, group: str) -> None:
        self.setting = setting  # the setting that names the backend, for error messages
        self.group = group
        self._factories: dict[str, F] = {}
        self._targets: dict[str, str] | None = None  # entry points, read on first need

    def register(self, name: str, factory: F) -> None:
        """Register (or replace) the factory for `name` in this process."""
        self._factories[name] = factory

    def names(self) -> list[str]:
        """Every known name: built-ins, installed plug-ins and factories registered in this process."""
        return sorted({*self._factories, *self.targets()})

    def find(self, name: str) -> F | None:
        """The factory for `name`, or None if no entry point or registration has it."""
        if name not in self._factories:
            target = self.targets().get(name)
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
        self._targets = None

    def targets(self) -> dict[str, str]:
        """ "module:attr" by name: the plug-ins' entry points, then the built-ins' over them."""
        if self._targets is None:
            found = sorted(entry_points(group=self.group), key=_is_builtin)  # built-ins last: they win
            self._targets = {ep.name: ep.value for ep in found}
            if not any(_is_builtin(ep) for ep in found):
                raise ConfigError(
                    f"no built-in {self.setting} found in the {self.group!r} entry points: "
                    f"is {DISTRIBUTION} installed (`pip install -e .`)?"
                )
        return self._targets


@dataclass(frozen=True)
class Installed:
    """One installed backend: its name, where it comes from, and whether it is the one used for its name."""

    kind: str
    name: str
    target: str  # "module:attr"
    distribution: str
    builtin: bool
    used: bool  # False: a plug-in that names a built-in is ignored


def installed() -> list[Installed]:
    """Every backend the installed distributions declare, kind by kind (read from metadata: nothing is
    imported)."""
    out: list[Installed] = []
    for kind, group in KINDS.items():
        found = sorted(entry_points(group=group), key=lambda ep: (ep.name, not _is_builtin(ep)))
        builtin_names = {ep.name for ep in found if _is_builtin(ep)}
        for ep in found:
            own = _is_builtin(ep)
            dist = ep.dist.name if ep.dist is not None else "?"
            out.append(Installed(kind, ep.name, ep.value, dist, own, own or ep.name not in builtin_names))
    return out
