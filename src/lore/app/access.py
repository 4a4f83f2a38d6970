"""The facts `lore.policy` decides on, read from the catalog and the store, and the checks routers call.

Nothing here decides: KB owner and shares, file owners and whether a grant reads a file's chunks are
gathered into a `Resource`, and `lore.policy.check` raises 404 (absent or foreign), 403 or 409.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace
from typing import Any
from urllib.parse import quote

from lore.catalog import Catalog, KnowledgeBase
from lore.catalog.service_records import ChatSession, Trace
from lore.engine import Lore
from lore.errors import LoreError, NotFoundError
from lore.grant import Grant
from lore.policy import Action, Kind, Resource, absent, can, check

REDACTED = "[redacted: outside your access]"


def audit(
    lore: Lore, caller: Grant, action: str, *, kb: str | None = None, target: str = "", **detail: Any
) -> None:
    """Append one line to the audit log for what the caller's key did (its tenant and key id)."""
    lore.catalog.audit(action, tenant=caller.tenant, key_id=caller.key_id, kb=kb, target=target, **detail)


def kb_resource(lore: Lore, kb: KnowledgeBase) -> Resource:
    """A KB: seen by its owner tenant and the tenants it is shared with; changes touch every file owner.
    A KB without owner (from before 0005, no content) is seen by no API key: only by the local operator."""
    owner, shared = lore.catalog.kb_tenants(kb.id)
    mine = _tenants(owner)
    return Resource(
        Kind.KB,
        kb.name,
        tenants=mine | shared,
        owners=mine | lore.catalog.content_tenants(kb.id),
        owner=owner,
    )


def _tenants(owner: str | None) -> frozenset[str]:
    return frozenset() if owner is None else frozenset({owner})


def require_kb(lore: Lore, grant: Grant, name: str, action: Action = Action.READ) -> KnowledgeBase:
    """The KB if the grant may do `action` to it; one it may not see is the same 404 as an unknown one."""
    try:
        kb = lore.catalog.get_kb(name)
    except NotFoundError:
        raise NotFoundError(absent(Resource(Kind.KB, name))) from None
    check(grant, action, kb_resource(lore, kb))
    return kb


def visible_kbs(lore: Lore, grant: Grant) -> list[KnowledgeBase]:
    """The KBs the grant may list."""
    return [kb for kb in lore.catalog.list_kbs() if can(grant, Action.LIST, kb_resource(lore, kb))]


def file_resource(lore: Lore, kb: KnowledgeBase, name: str, grant: Grant) -> Resource:
    """A file (upload or indexed) of a KB: its owner tenant, and whether it is indexed and the grant reads
    one of its chunks (checked against the chunks as stored). An indexed file without owner row is the KB
    owner's (the operator's CLI ingest); an upload without one is nobody's (left from before: never
    handed to whoever owns the KB now)."""
    record = lore.catalog.get_file(kb.id, name)
    owner = lore.catalog.file_owner(kb.id, name) or (kb.owner_tenant if record is not None else None)
    ids = lore.catalog.file_chunk_ids(record.id) if record is not None else []
    readable = False
    if ids and owner == grant.tenant:
        flt = grant.to_filter()
        readable = any(flt.matches(c) for c in lore.store(kb).get(ids))
    return indexed_file(name, owner, bool(ids), readable)


def indexed_file(name: str, owner: str | None, indexed: bool, readable: bool) -> Resource:
    """A file's facts once gathered (by `file_resource`, or for a whole KB at once)."""
    return Resource(
        Kind.FILE,
        name,
        tenants=_tenants(owner),
        owners=_tenants(owner),
        indexed=indexed,
        readable=readable,
    )


TENANT_MARK = "|"  # joins a share tenant to its file names; never in an uploaded name (`uploads.safe_name`)


def tenant_prefix(grant: Grant) -> str:
    """What a share tenant's stored file names start with (the tenant quoted: no '/' reaches a path)."""
    return quote(grant.tenant, safe="") + TENANT_MARK


def own_name(lore: Lore, kb: KnowledgeBase, grant: Grant, name: str) -> str:
    """The stored name of the caller's file `name`: files are keyed by (KB, path, tenant). The owner tenant
    (and the operator) use the name itself; a tenant the KB is shared with stores `<tenant>|<name>`, so its
    upload succeeds as its own file whatever another tenant holds, and tells nothing of it (a plain name
    that tenant already owns, from before, stays). `name` may carry the caller's own prefix."""
    if grant.key_id is None or kb.owner_tenant == grant.tenant:
        return name
    plain = name.removeprefix(tenant_prefix(grant))
    if lore.catalog.file_owner(kb.id, plain) == grant.tenant:
        return plain
    return tenant_prefix(grant) + plain


def plain_name(grant: Grant, name: str) -> str:
    """`name` without the caller's own tenant prefix (what upload names are checked as)."""
    return name.removeprefix(tenant_prefix(grant))


def own_files(lore: Lore, kb: KnowledgeBase, grant: Grant, names: Iterable[str]) -> list[str]:
    """The names among `names` that the caller's tenant owns (all of them for the operator)."""
    if grant.key_id is None:
        return list(names)
    owners = lore.catalog.file_owners(kb.id)
    indexed = {f.path for f in lore.catalog.list_files(kb.id)}
    return [n for n in names if owners.get(n, kb.owner_tenant if n in indexed else None) == grant.tenant]


def file_visible(lore: Lore, kb: KnowledgeBase, name: str, grant: Grant) -> bool:
    """May the grant see (list, download, preview) this file?"""
    return can(grant, Action.DOWNLOAD, file_resource(lore, kb, name, grant))


def require_file(lore: Lore, kb: KnowledgeBase, name: str, grant: Grant) -> None:
    """404 (as for a missing file) unless the grant may see the file."""
    check(grant, Action.DOWNLOAD, file_resource(lore, kb, name, grant))


def check_file_writes(lore: Lore, kb: KnowledgeBase, names: Iterable[str], grant: Grant) -> None:
    """409 if any of the files belongs to another tenant (it is never replaced or removed by this one)."""
    owners = lore.catalog.file_owners(kb.id)
    for name in names:
        owner = owners.get(name) or (kb.owner_tenant if lore.catalog.get_file(kb.id, name) else grant.tenant)
        check(
            grant,
            Action.WRITE_FILE,
            Resource(Kind.FILE, name, tenants=_tenants(owner), owners=_tenants(owner)),
        )


def own_counts(lore: Lore, kb: KnowledgeBase, grant: Grant) -> tuple[int, int]:
    """(files, chunks) of the KB that the grant's tenant owns: a shared KB shows each tenant its own."""
    owners = lore.catalog.file_owners(kb.id)
    mine = [
        f
        for f in lore.catalog.list_files(kb.id, "ingested")
        if owners.get(f.path, kb.owner_tenant) == grant.tenant
    ]
    return len(mine), sum(f.chunk_count for f in mine)


# -- traces and sessions keep what the asker was allowed to see ---------------------------------------


def own_session(catalog: Catalog, session_id: str, grant: Grant) -> ChatSession:
    """The session if the policy lets the grant read it; the same 404 as an unknown one otherwise."""
    s = catalog.get_session(session_id, grant.tenant)
    check(
        grant,
        Action.READ_TRACE,
        Resource(Kind.SESSION, session_id, tenants=frozenset({s.tenant_id}), key_id=s.key_id),
    )
    return s


def trace_resource(trace: Trace) -> Resource:
    return Resource(Kind.TRACE, trace.id, tenants=frozenset({trace.tenant_id}), key_id=trace.key_id)


def redact_trace(lore: Lore, grant: Grant, trace: Trace) -> dict[str, Any]:
    """The trace as JSON; passages the reader's grant cannot read lose their text, and so does the answer
    built from them (the metadata stays)."""
    out = trace.to_json()
    end = (trace.data or {}).get("end") or {}
    hidden = unreadable_citations(lore, grant, trace)
    if not hidden:
        return out
    data = {k: v for k, v in trace.data.items() if k not in ("evidence", "sub_questions", "rounds", "cache")}
    data["end"] = redact_end(end, hidden)
    data["redacted"] = sorted(hidden)
    out["data"] = data
    return out


def redact_end(end: dict[str, Any], hidden: set[str]) -> dict[str, Any]:
    """An `end` payload without the text of hidden passages, nor the answer and checks built from them."""
    keep: dict[str, Any] = {
        k: end[k]
        for k in (
            "route",
            "refused",
            "evidence_confidence",
            "answer_confidence",
            "low_confidence",
            "mode",
            "timings_ms",
            "profile",
            "scenario",
        )
        if k in end
    }
    cites = [
        {**c, "text": REDACTED, "quote": REDACTED, "quote_span": None} if c.get("chunk_id") in hidden else c
        for c in end.get("citations", [])
    ]
    return {**keep, "answer": REDACTED, "citations": cites}


def unreadable_citations(lore: Lore, grant: Grant, trace: Trace) -> set[str]:
    """Chunk ids the trace cites that the reader's grant cannot read (none for the asker itself)."""
    end = (trace.data or {}).get("end") or {}
    ids = [c["chunk_id"] for c in end.get("citations", []) if c.get("chunk_id")]
    if not ids or trace.key_id == grant.key_id:
        return set()
    asked = trace.data.get("grant")
    if asked and grant.covers(Grant.from_json(asked)):
        return set()
    return set(ids) - readable_chunk_ids(lore, grant, trace.kb, ids)


def readable_chunk_ids(lore: Lore, grant: Grant, kb_name: str, ids: Iterable[str]) -> set[str]:
    """The chunk ids (cited by a trace or feedback) that the grant reads in the KB, each chunk as stored;
    none when the KB is gone or hidden from the grant."""
    ids = sorted(set(ids))
    try:
        kb = require_kb(lore, grant, kb_name)
    except LoreError:  # deleted since, or not the reader's to see
        return set()
    flt = replace(grant.to_filter(), version_seq=None)
    return {c.chunk_id for c in lore.store(kb).get(ids) if flt.matches(c)} if ids else set()
