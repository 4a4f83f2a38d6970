"""Who may read an original file and who may write to a knowledge base that several tenants share.

Reading an original needs read access to at least one of the file's chunks under the caller's own scope.
Writing to a KB that holds another tenant's chunks needs the `platform-admin` role (403 otherwise), and
even then a file whose chunks carry another tenant is never replaced or removed (409).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace

from fastapi import HTTPException

from lore.api.deps import PLATFORM_ADMIN_ROLE, Scope
from lore.api.uploads import upload_owner
from lore.catalog import KnowledgeBase
from lore.engine import Lore
from lore.schema import Chunk, SearchFilter


def _chunk_ids(lore: Lore, kb: KnowledgeBase, name: str) -> list[str]:
    record = lore.catalog.get_file(kb.id, name)
    return lore.catalog.file_chunk_ids(record.id) if record is not None else []


def _file_chunks(lore: Lore, kb: KnowledgeBase, name: str) -> list[Chunk]:
    """The catalogued file's chunks as stored (none for an upload not indexed yet)."""
    ids = _chunk_ids(lore, kb, name)
    return lore.store(kb).get(ids) if ids else []


def _tenants(lore: Lore, kb: KnowledgeBase, name: str, chunks: list[Chunk]) -> set[str]:
    """Tenants of the file's chunks; for an upload not indexed yet, its uploader."""
    if chunks:
        return {c.tenant_id for c in chunks}
    owner = upload_owner(lore.settings.files_dir / "uploads" / kb.name, name)
    return {owner} if owner else set()


def _readable(lore: Lore, kb: KnowledgeBase, chunks: list[Chunk], scope: Scope) -> bool:
    """True if the caller's own scope reads at least one of these chunks (checked inside the store)."""
    documents = sorted({c.document_id for c in chunks})
    return bool(documents) and lore.store(kb).count(replace(scope.search_filter(), document_ids=documents)) > 0


def holds_other_tenants(lore: Lore, kb: KnowledgeBase, tenant: str) -> bool:
    """True if the KB's store has chunks of any tenant but `tenant`."""
    store = lore.store(kb)
    return store.count(SearchFilter()) > store.count(SearchFilter(tenant_ids=[tenant]))


def may_write(lore: Lore, kb: KnowledgeBase, scope: Scope) -> bool:
    """An admin key may write to a KB of its tenant alone; a platform admin also to a shared one."""
    return scope.is_admin and (scope.is_platform_admin or not holds_other_tenants(lore, kb, scope.tenant_id))


def check_kb_write(lore: Lore, kb: KnowledgeBase, scope: Scope) -> None:
    """403 unless the caller may write to the KB (see `may_write`)."""
    if not may_write(lore, kb, scope):
        raise HTTPException(403, f"knowledge base '{kb.name}' holds other tenants' documents: changing it needs "
                                 f"an API key with the '{PLATFORM_ADMIN_ROLE}' role")


def check_file_writes(lore: Lore, kb: KnowledgeBase, names: Iterable[str], scope: Scope) -> None:
    """409 if any of the files has chunks of a tenant other than the caller's (or another's upload)."""
    # In a KB without other tenants' chunks, an indexed file's chunks are the caller's: no need to
    # fetch them; a file without chunks is judged by its uploader either way.
    shared = holds_other_tenants(lore, kb, scope.tenant_id)
    for name in names:
        if not shared and _chunk_ids(lore, kb, name):
            continue
        if _tenants(lore, kb, name, _file_chunks(lore, kb, name) if shared else []) - {scope.tenant_id}:
            raise HTTPException(409, f"file '{name}' in knowledge base '{kb.name}' belongs to another tenant; "
                                     f"it cannot be replaced or removed by tenant '{scope.tenant_id}'")


def file_visible(lore: Lore, kb: KnowledgeBase, name: str, scope: Scope, writer: bool) -> bool:
    """A file (upload or catalogued) is shown to readers of its chunks and to writers when it is theirs."""
    chunks = _file_chunks(lore, kb, name)
    if _readable(lore, kb, chunks, scope):
        return True
    return writer and not (_tenants(lore, kb, name, chunks) - {scope.tenant_id})


def kb_visible(lore: Lore, kb: KnowledgeBase, scope: Scope) -> bool:
    """A KB is shown to callers who can read a chunk of it and to admins who may write to it."""
    return lore.store(kb).count(scope.search_filter()) > 0 or may_write(lore, kb, scope)


def check_kb_visible(lore: Lore, kb: KnowledgeBase, scope: Scope) -> None:
    """The same 404 as an unknown KB for one the caller may not see (its name is not confirmed)."""
    if not kb_visible(lore, kb, scope):
        raise HTTPException(404, f"knowledge base '{kb.name}' not found")


def check_kb_manager(lore: Lore, kb: KnowledgeBase, scope: Scope) -> None:
    """Reports and diffs name every file of the KB: only callers who may write to it read them (else 404)."""
    if not may_write(lore, kb, scope):
        check_kb_visible(lore, kb, scope)
        raise HTTPException(403, f"knowledge base '{kb.name}': reports and diffs name every file; they need an "
                                 "admin key that may change this knowledge base")
