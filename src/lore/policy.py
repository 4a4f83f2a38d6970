"""The one access policy: `decide(grant, action, resource)` for every action on every resource.

Callers gather the facts (who owns a KB, whom it is shared with, who owns a file, which key made a trace)
from the catalog into a `Resource`; this module alone decides. A resource the caller may not see is
`404` exactly like one that does not exist; one it sees but may not change is `403`; a file owned by
another tenant is never replaced or removed (`409`).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from lore.errors import ConflictError, ForbiddenError, NotFoundError
from lore.grant import ADMIN_ROLE, PLATFORM_ADMIN_ROLE, Grant


class Action(StrEnum):
    """What a caller does."""

    LIST = "list"  # see it in a list
    READ = "read"  # search, ask, show
    READ_VERSION = "read_version"  # search or ask another version than the active one
    DOWNLOAD = "download"  # an original file or an upload, or its preview
    CREATE = "create"  # a new knowledge base, owned by the caller's tenant
    UPLOAD = "upload"  # add or replace files (upload, ingest, add-by-chunks)
    WRITE_FILE = "write_file"  # replace or remove one named file
    BUILD = "build"  # a version holding exactly the named files (removes the rest)
    ACTIVATE = "activate"
    ROLLBACK = "rollback"
    DELETE = "delete"
    REPORT = "report"  # quality reports and diffs (they name every file)
    SHARE = "share"
    READ_TRACE = "read_trace"  # read, continue or delete a trace or session; rate its answer
    MANAGE_KEYS = "manage_keys"  # list, create and revoke the tenant's API keys
    AUDIT = "audit"  # the tenant's audit log
    REVIEW = "review"  # the tenant's feedback (list, export)


class Kind(StrEnum):
    """What it is done to."""

    KB = "kb"
    FILE = "file"
    VERSION = "version"
    SCENARIO = "scenario"
    TRACE = "trace"
    SESSION = "session"
    FEEDBACK = "feedback"
    KEY = "key"
    UPLOAD = "upload"
    AUDIT = "audit"


@dataclass(frozen=True)
class Resource:
    """The facts a decision needs, read from the catalog (ownership is data, never inferred)."""

    kind: Kind
    name: str = ""
    tenants: frozenset[str] = (
        frozenset()
    )  # who may see it: KB owner + shared tenants; file owner; trace tenant
    owners: frozenset[str] = frozenset()  # whose content a change touches: KB owner + every file's owner
    key_id: str | None = None  # trace, session, feedback: the key that made it
    indexed: bool = False  # file: it has chunks (then reading it needs reading one of them)
    readable: bool = False  # file: the caller's grant reads at least one of its chunks (checked in the store)
    owner: str | None = None  # KB: its owner tenant (may always unshare and delete it)


@dataclass(frozen=True)
class Decision:
    """Allowed, or the status and reason of the refusal."""

    allowed: bool
    status: int = 200
    reason: str = ""


_OK = Decision(True)
_KB_WIDE = {Action.BUILD, Action.ACTIVATE, Action.ROLLBACK, Action.DELETE, Action.REPORT, Action.SHARE}
_OWN = {Kind.TRACE, Kind.SESSION, Kind.FEEDBACK}


def absent(resource: Resource) -> str:
    """The message of a missing resource: the same for one that exists but is not the caller's."""
    label = {Kind.KB: "knowledge base", Kind.FILE: "file", Kind.UPLOAD: "upload", Kind.KEY: "api key"}.get(
        resource.kind, str(resource.kind)
    )
    return f"{label} '{resource.name}' not found"


def decide(grant: Grant, action: Action, resource: Resource) -> Decision:
    """Whether `grant` may do `action` to `resource` (see the README's policy table)."""
    operator = grant.key_id is None  # the local CLI
    if action is Action.MANAGE_KEYS and not operator and not (grant.is_admin and grant.is_platform_admin):
        return _forbidden(f"the '{ADMIN_ROLE}' and '{PLATFORM_ADMIN_ROLE}' roles")
    if action in (Action.AUDIT, Action.REVIEW) and not operator and not grant.is_admin:
        return _forbidden(f"the '{ADMIN_ROLE}' role")
    # Foreign looks like absent; except a file name another tenant holds, which cannot be taken (409).
    if grant.key_id is not None and grant.tenant not in resource.tenants and action is not Action.WRITE_FILE:
        return Decision(False, 404, absent(resource))
    if action in (Action.MANAGE_KEYS, Action.AUDIT, Action.REVIEW):
        return _OK
    if resource.kind in _OWN:
        mine = grant.key_id is None or resource.key_id == grant.key_id or grant.is_admin
        return _OK if mine else Decision(False, 404, absent(resource))
    if action in (Action.LIST, Action.READ):
        return _OK
    if action is Action.READ_VERSION:
        return _OK if grant.time_travel else _forbidden(f"the '{ADMIN_ROLE}' role to read a named version")
    if action is Action.DOWNLOAD:
        seen = resource.readable if resource.indexed else grant.is_admin
        return _OK if seen else Decision(False, 404, absent(resource))
    if not grant.is_admin and grant.key_id is not None:
        return _forbidden(f"the '{ADMIN_ROLE}' role")
    if action is Action.CREATE:
        return _OK
    others = resource.owners - {grant.tenant}
    if action is Action.WRITE_FILE:
        return (
            _OK
            if not others
            else Decision(
                False,
                409,
                f"file '{resource.name}' belongs to another tenant; it cannot be replaced or removed by "
                f"tenant '{grant.tenant}'",
            )
        )
    if action is Action.UPLOAD:
        return (
            _OK
            if not others or grant.is_platform_admin or grant.key_id is None
            else Decision(
                False,
                403,
                f"knowledge base '{resource.name}' holds other tenants' documents: adding files needs "
                f"an API key with the '{PLATFORM_ADMIN_ROLE}' role",
            )
        )
    if action in _KB_WIDE:
        owner_side = grant.key_id is None or grant.tenant == resource.owner
        if action in (Action.SHARE, Action.DELETE) and owner_side:
            return _OK  # its owner can always take shares back (with their files) and delete it
        if action is Action.SHARE:
            return _forbidden("the knowledge base's owner tenant")
        if others and grant.key_id is not None:
            return Decision(
                False,
                403,
                f"knowledge base '{resource.name}' holds other tenants' documents: "
                f"{action.value} needs write rights on all of them (its owner can unshare them first)",
            )
        return _OK
    return _forbidden(
        "a grant this policy does not know"
    )  # an action this table does not list is never allowed


def _forbidden(needs: str) -> Decision:
    return Decision(False, 403, f"this needs an API key with {needs}")


def can(grant: Grant, action: Action, resource: Resource) -> bool:
    """True if `decide` allows it."""
    return decide(grant, action, resource).allowed


def check(grant: Grant, action: Action, resource: Resource) -> None:
    """Raise the refusal's error: NotFoundError (404), ForbiddenError (403) or ConflictError (409)."""
    d = decide(grant, action, resource)
    if not d.allowed:
        raise {404: NotFoundError, 409: ConflictError}.get(d.status, ForbiddenError)(d.reason)
