"""The README's isolation table, generated from `lore.policy.decide` (a test keeps README and policy
equal)."""

from __future__ import annotations

from lore.grant import Grant
from lore.policy import Action, Kind, Resource, decide

T, OTHER = "t", "o"  # the caller's tenant and another one
_KEYS = {
    "employee": Grant.of_key("k1", T, ["employee"], None),
    "admin": Grant.of_key("k2", T, ["admin"], None),
    "platform admin": Grant.of_key("k3", T, ["admin", "platform-admin"], None),
}
_KBS = {  # ownership situations of a knowledge base
    "own KB": Resource(Kind.KB, "kb", frozenset({T}), frozenset({T}), owner=T),
    "own KB, shared, others' files in it": Resource(
        Kind.KB, "kb", frozenset({OTHER, T}), frozenset({OTHER, T}), owner=T
    ),
    "KB shared with it, others' files in it": Resource(
        Kind.KB, "kb", frozenset({OTHER, T}), frozenset({OTHER, T}), owner=OTHER
    ),
    "another tenant's KB": Resource(Kind.KB, "kb", frozenset({OTHER}), frozenset({OTHER}), owner=OTHER),
}
_KB_ACTIONS = (
    Action.LIST,
    Action.READ,
    Action.READ_VERSION,
    Action.UPLOAD,
    Action.BUILD,
    Action.ACTIVATE,
    Action.ROLLBACK,
    Action.DELETE,
    Action.REPORT,
    Action.SHARE,
)
_FILES = {
    "own file, a chunk it reads": Resource(
        Kind.FILE, "f", frozenset({T}), frozenset({T}), indexed=True, readable=True
    ),
    "own file, no chunk it reads": Resource(Kind.FILE, "f", frozenset({T}), frozenset({T}), indexed=True),
    "own upload, not indexed": Resource(Kind.FILE, "f", frozenset({T}), frozenset({T})),
    "another tenant's file": Resource(Kind.FILE, "f", frozenset({OTHER}), frozenset({OTHER}), indexed=True),
}
_TRACES = {
    "its own trace/session": Resource(Kind.TRACE, "x", frozenset({T}), key_id="k1"),
    "another key's, same tenant": Resource(Kind.TRACE, "x", frozenset({T}), key_id="other"),
    "another tenant's": Resource(Kind.TRACE, "x", frozenset({OTHER}), key_id="k9"),
}


def _cell(grant: Grant, action: Action, resource: Resource) -> str:
    d = decide(grant, action, resource)
    return "yes" if d.allowed else str(d.status)


def _rows(things: dict[str, Resource], actions: tuple[Action, ...], keys: dict[str, Grant]) -> list[str]:
    out = []
    for label, resource in things.items():
        for action in actions:
            row = [f"{action.value}", label, *(_cell(g, action, resource) for g in keys.values())]
            out.append("| " + " | ".join(row) + " |")
    return out


def policy_table() -> str:
    """Markdown: action x ownership x role -> yes, or the HTTP status of the refusal."""
    head = "| action | resource | " + " | ".join(_KEYS) + " |"
    rule = "|" + "---|" * (2 + len(_KEYS))
    own_key = {
        "employee": _KEYS["employee"],
        "admin": Grant.of_key("k1", T, ["admin"], None),
        "platform admin": Grant.of_key("k1", T, ["admin", "platform-admin"], None),
    }
    lines = [
        head,
        rule,
        *_rows(_KBS, _KB_ACTIONS, _KEYS),
        *_rows(_FILES, (Action.DOWNLOAD, Action.WRITE_FILE), _KEYS),
        *_rows(_TRACES, (Action.READ_TRACE,), own_key),
        *_rows(
            {
                "its tenant's API keys": Resource(Kind.KEY, tenants=frozenset({T})),
                "another tenant's key": Resource(Kind.KEY, tenants=frozenset({OTHER})),
            },
            (Action.MANAGE_KEYS,),
            _KEYS,
        ),
        *_rows(
            {"its tenant's audit log": Resource(Kind.AUDIT, tenants=frozenset({T}))}, (Action.AUDIT,), _KEYS
        ),
        *_rows(
            {"its tenant's feedback": Resource(Kind.FEEDBACK, tenants=frozenset({T}))},
            (Action.REVIEW,),
            _KEYS,
        ),
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    print(policy_table())
