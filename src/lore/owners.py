"""The ownership backfill of knowledge bases from before migration 0005 (which 0007 leaves without owner).

A KB without owner is seen by no API key. For each, the tenants of its content are read: recorded file
owners, the tenants on each catalogued file's chunks in the store, and the uploader of each upload not
indexed yet (`.owners.json`, how uploads were recorded before 0005). The tenant of the oldest file becomes
the owner, the others get shares, and every file its owner row. A KB without content keeps no owner.
"""

from __future__ import annotations

import json
import logging
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from lore.catalog import KnowledgeBase
from lore.engine import Lore
from lore.errors import LoreError
from lore.schema import SearchFilter
from lore.storage.layout import uploads_key

log = logging.getLogger(__name__)
LEGACY_UPLOAD_OWNERS = ".owners.json"  # {file name: tenant} in a KB's uploads, written before 0005


@dataclass
class Backfilled:
    """What the backfill decided for one KB."""

    kb: str
    owner: str | None
    shares: list[str] = field(default_factory=list)
    files: int = 0
    unattributed_chunks: int = 0  # chunks of the KB's store that no catalogued file accounts for
    error: str | None = None


def backfill(lore: Lore) -> list[Backfilled]:
    """Give every KB without owner the owner and shares its content implies; one result per such KB."""
    out = []
    for kb in lore.catalog.list_kbs():
        if kb.owner_tenant is None:
            try:
                out.append(_backfill_kb(lore, kb))
            except LoreError as exc:  # e.g. its store is down: it stays without owner (seen by nobody)
                log.warning("owner backfill of knowledge base %r skipped: %s", kb.name, exc)
                out.append(Backfilled(kb.name, None, error=str(exc)))
    return out


def backfill_line(b: Backfilled) -> str:
    """One line for logs and the CLI."""
    if b.owner is None:
        why = f"its store cannot be read ({b.error})" if b.error else "it has no content"
        return (
            f"warning: knowledge base '{b.kb}' has no owner ({why}): only the operator sees it; "
            f"give it one with `lore kb owner {b.kb} TENANT`"
        )
    shared = f", shared with {', '.join(b.shares)}" if b.shares else ""
    lost = f"; {b.unattributed_chunks} chunk(s) of no catalogued file" if b.unattributed_chunks else ""
    return f"knowledge base '{b.kb}': owner {b.owner} from its {b.files} file(s){shared}{lost}"


def content_owners(lore: Lore, kb: KnowledgeBase) -> tuple[list[tuple[str, str]], int]:
    """[(path, tenant)] of the KB's files, oldest first, and the number of chunks no file accounts for."""
    recorded = lore.catalog.file_owners(kb.id)
    store = lore.store(kb)
    owners: list[tuple[str, str]] = []
    counted = 0
    for f in sorted(lore.catalog.list_files(kb.id), key=lambda f: (f.created_at, f.path)):
        ids = lore.catalog.file_chunk_ids(f.id)
        tenants = Counter(c.tenant_id for c in store.get(ids)) if ids else Counter()
        counted += sum(tenants.values())
        tenant = recorded.get(f.path) or (min(tenants, key=lambda t: (-tenants[t], t)) if tenants else None)
        if tenant:
            owners.append((f.path, tenant))
    seen = {p for p, _ in owners}
    legacy = _legacy_upload_owners(lore.storage.path(uploads_key(kb)))  # moved to the id on opening
    for path, tenant in sorted({**legacy, **recorded}.items()):
        if path not in seen and tenant:
            owners.append((path, tenant))
    return owners, max(0, store.count(SearchFilter()) - counted)


def _backfill_kb(lore: Lore, kb: KnowledgeBase) -> Backfilled:
    owners, unattributed = content_owners(lore, kb)
    tenants = list(dict.fromkeys(t for _, t in owners))
    if not tenants:
        return Backfilled(kb.name, None, unattributed_chunks=unattributed)
    owner, shares = tenants[0], sorted(tenants[1:])
    with lore.catalog.transaction():
        lore.catalog.set_kb_owner(kb.id, owner)
        for tenant in shares:
            lore.catalog.share_kb(kb.id, tenant)
        lore.catalog.claim_unowned_files(kb.id, dict(owners))
        lore.catalog.audit(
            "owner", tenant=owner, key_id=None, kb=kb.name, target=owner, via="backfill", shares=shares
        )
    return Backfilled(kb.name, owner, shares, len(owners), unattributed)


def _legacy_upload_owners(folder: Path) -> dict[str, str]:
    try:
        data = json.loads((folder / LEGACY_UPLOAD_OWNERS).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return (
        {
            k: v
            for k, v in data.items()
            if isinstance(k, str) and isinstance(v, str) and "/" not in k and (folder / k).is_file()
        }
        if isinstance(data, dict)
        else {}
    )
