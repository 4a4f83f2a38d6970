"""`Lore`: the one object the CLI, API and benchmarks use to manage, search and ask knowledge bases.

Its parts: `wiring` (settings, catalog, stores, embedders, scoping), `quality` (calibration, diffs, eval
searches), `builds` (ingest, versioned builds, gc) and `asking` (fast and deep answers).
"""

from __future__ import annotations

from lore.engine.asking import Asking
from lore.engine.builds import Builds


class Lore(Builds, Asking):
    """Settings, catalog, embedders and stores wired together; stores are opened once per KB."""


__all__ = ["Lore"]
