"""Start-up checks: the service refuses to start, saying why, unless every part it needs works."""

from __future__ import annotations

from lore.embed.cache import embed_texts
from lore.engine import Lore
from lore.errors import LoreError
from lore.retrieve.search import SearchOptions


class PreflightError(LoreError):
    """A part the service needs is missing or broken; the message lists every problem found."""


def preflight(lore: Lore) -> list[str]:
    """Open the catalog, load the embedder, open every KB's store and check active versions.

    Returns one line per check that passed; raises `PreflightError` listing every failure.
    """
    passed: list[str] = []
    problems: list[str] = []
    try:
        kbs = lore.catalog.list_kbs()
        passed.append(f"catalog: {len(kbs)} knowledge base(s)")
    except Exception as exc:  # any failure here means no service
        raise PreflightError(f"service cannot start: catalog unreachable: {exc}") from exc
    try:
        embedder = lore._new_embedder()
        embed_texts(embedder, ["preflight"], "query", None)
        passed.append(f"embedder: {embedder.model_id} ({embedder.dim}-d) loads")
    except Exception as exc:  # noqa: BLE001 - reported with the others
        problems.append(f"embedder {lore.settings.embed.provider}/{lore.settings.embed.model} does not load: {exc}")
    for kb in kbs:
        try:
            versions = lore.catalog.list_versions(kb.id)
            if versions and lore.catalog.active_version(kb.id) is None:
                problems.append(f"knowledge base '{kb.name}' has {len(versions)} version(s) but none is active "
                                f"(lore activate --kb {kb.name} SEQ)")
                continue
            lore.store(kb).count()
            lore.embedder(kb)
            lore.scoped(kb.name, SearchOptions())  # the serving version's embedding model matches
            passed.append(f"knowledge base '{kb.name}': store opens")
        except Exception as exc:  # noqa: BLE001 - reported with the others
            problems.append(f"knowledge base '{kb.name}': {exc}")
    if problems:
        raise PreflightError("service cannot start: " + "; ".join(problems))
    return passed
