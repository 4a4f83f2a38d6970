"""Start-up checks: the service refuses to start, saying why, unless every part it needs works."""

from __future__ import annotations

from lore.catalog import SchemaError
from lore.embed.cache import embed_texts
from lore.engine import Lore
from lore.errors import LoreError
from lore.owners import backfill, backfill_line
from lore.scenario.request import scenarios


class PreflightError(LoreError):
    """A part the service needs is missing or broken; the message lists every problem found."""


def preflight(lore: Lore) -> list[str]:
    """Open the catalog, load the embedder, open every KB's store, check active versions and scenarios.

    Returns one line per check that passed (and a `warning:` line per KB never activated yet, which
    answers 409 until it is); raises `PreflightError` listing every failure. A KB that served before
    but has no active version now is a failure: it was taken out of service.
    """
    passed: list[str] = []
    problems: list[str] = []
    try:
        kbs = lore.catalog.list_kbs()
        passed.append(f"catalog: {len(kbs)} knowledge base(s), schema at head")
    except SchemaError as exc:
        raise PreflightError(f"service cannot start: {exc}") from exc
    except Exception as exc:  # any failure here means no service
        raise PreflightError(f"service cannot start: catalog unreachable: {exc}") from exc
    passed += [line for b in backfill(lore) if (line := backfill_line(b))]
    try:
        # A KB's embedder is the configured one, and it stays loaded for serving; no KB yet: a fresh one.
        embedder = lore.embedder(kbs[0]) if kbs else lore.configured_embedder()
        embed_texts(embedder, ["preflight"], "query", None)
        passed.append(f"embedder: {embedder.model_id} ({embedder.dim}-d) loads")
    except Exception as exc:  # noqa: BLE001 - reported with the others
        problems.append(
            f"embedder {lore.settings.embed.provider}/{lore.settings.embed.model} does not load: {exc}"
        )
    for kb in kbs:
        try:
            versions = lore.catalog.list_versions(kb.id)
            if versions and lore.catalog.active_version(kb.id) is None:
                if not lore.catalog.activation_log(kb.id):
                    passed.append(
                        f"warning: knowledge base '{kb.name}' has {len(versions)} version(s), none "
                        f"activated yet; it answers 409 until one is (lore activate --kb {kb.name} SEQ)"
                    )
                    continue
                problems.append(
                    f"knowledge base '{kb.name}' has {len(versions)} version(s) but none is active "
                    f"(lore activate --kb {kb.name} SEQ)"
                )
                continue
            lore.store(kb).count()
            lore.embedder(kb)
            lore.scoped(kb, lore.search_options())  # the serving version's embedding model matches
            passed.append(f"knowledge base '{kb.name}': store opens")
        except Exception as exc:  # noqa: BLE001 - reported with the others
            problems.append(f"knowledge base '{kb.name}': {exc}")
    names = {kb.name for kb in kbs}
    found = scenarios(lore)
    for scenario_id in found.ids():
        try:
            sc = found.get(scenario_id)
        except LoreError as exc:
            problems.append(str(exc))
            continue
        if sc.kb_name not in names:
            problems.append(
                f"scenario '{sc.id}': its knowledge base '{sc.kb_name}' is not built "
                f"(lore scenario build {sc.id} --activate)"
            )
        else:
            passed.append(f"scenario '{sc.id}': valid, answers from '{sc.kb_name}'")
    if problems:
        raise PreflightError("service cannot start: " + "; ".join(problems))
    return passed
