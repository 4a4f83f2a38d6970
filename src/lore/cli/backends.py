"""Which backend a command runs on: the server's with `--server` (or LORE_SERVER), else the in-process one."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from lore.cli import remote
from lore.cli.backend import Backend
from lore.cli.common import failing


def backend() -> Backend:
    """The server's backend with `--server` (or LORE_SERVER), else the in-process one."""
    if (client := remote.client()) is not None:
        from lore.cli.backend_http import HttpBackend

        return HttpBackend(client)
    from lore.cli.backend_local import LocalBackend

    return LocalBackend()


@contextmanager
def running() -> Iterator[Backend]:
    """The backend for this command; a LoreError fails the command (exit code 2); closed at the end."""
    with failing():
        chosen = backend()
        try:
            yield chosen
        finally:
            chosen.close()
