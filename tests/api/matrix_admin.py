"""Attack-matrix entries of the console's administrator tools: a KB's chunking settings and their preview,
a KB's feedback list and turning a rating into a FAQ row (joined into `entries()` of the matrix)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tests.api.matrix_world import OWNERS, SEES, A, Caller, World, canary, readable

Expect = Callable[[Caller], Any]


def _feedback_on_ka(w: World, _c: Caller) -> tuple[str, Any, Any]:
    """A fresh thumbs-down of tenant A's admin on KB `ka`, to be made a FAQ row of scenario `ahr` (whose
    KB is another: the callers allowed this far get 422, nothing is written)."""
    fb = w.lore.catalog.add_feedback(trace_id=w.traces["adm"][0], tenant_id=A, key_id=None, rating=-1)
    return f"/api/feedback/{fb.id}/faq", {"scenario": "ahr", "answer": "Harmless."}, None


def _faq_expect(c: Caller) -> int:
    if not c.admin:
        return 403
    return 422 if c.tenant == A else 404


def _preview_expect(kb: str, name: str, kb_admin: Callable[..., Expect]) -> Expect:
    admin = kb_admin(SEES[kb], OWNERS[kb], 200)
    tenant, kind = (A if name.startswith("a_") else "bluefin"), name.split("_", 1)[1].split(".")[0]

    def expect(c: Caller) -> int | set[int]:
        first = admin(c)
        if first != 200:
            return first
        return 200 if canary(tenant, kind) in readable(c) else 404

    return expect


def admin_entries(
    Call: Any,  # the matrix's class and helpers are handed in: that module imports this one
    _fixed: Callable[..., Any],
    _kb_admin: Callable[..., Expect],
    FILES: list[tuple[str, str]],
    KBS: tuple[str, ...],
) -> dict[tuple[str, str], list[Any]]:
    """(method, path template) -> calls of the routes above."""
    harmless = {
        "text": "# Parking\n\nA harmless note about parking.\n",
        "child_size": 60,
        "strategy": "structure",
    }
    return {
        ("GET", "/api/kbs/{kb}/chunking"): [
            Call(kb, _fixed(f"/api/kbs/{kb}/chunking"), _kb_admin(SEES[kb], OWNERS[kb], 200)) for kb in KBS
        ],
        ("PUT", "/api/kbs/{kb}/chunking"): [
            *(  # the KB's own strategy (the configured one, with its sizes), then the reset
                Call(
                    f"{kb}/{label}",
                    _fixed(f"/api/kbs/{kb}/chunking", body),
                    _kb_admin(SEES[kb], OWNERS[kb], 200),
                    "PUT",
                )
                for label, body in (
                    ("set", {"strategy": "structure"}),
                    ("reset", {"reset": True}),
                )
                for kb in KBS
            ),
        ],
        ("POST", "/api/kbs/{kb}/chunking/preview"): [
            *(
                Call(
                    f"{kb}/text",
                    _fixed(f"/api/kbs/{kb}/chunking/preview", harmless),
                    _kb_admin(SEES[kb], OWNERS[kb], 200),
                    "POST",
                )
                for kb in KBS
            ),
            *(
                Call(
                    f"{kb}/{n}",
                    _fixed(f"/api/kbs/{kb}/chunking/preview", {"file": n}),
                    _preview_expect(kb, n, _kb_admin),
                    "POST",
                )
                for kb, n in FILES
                if kb != "shared"
            ),
        ],
        ("GET", "/api/kbs/{kb}/feedback"): [
            Call(
                kb, _fixed(f"/api/kbs/{kb}/feedback"), _kb_admin(SEES[kb], OWNERS[kb], 200, platform_ok=True)
            )
            for kb in KBS
        ],
        ("POST", "/api/feedback/{feedback_id}/faq"): [
            Call("ka-to-ahr", _feedback_on_ka, _faq_expect, "POST"),
            Call(
                "nope",
                _fixed("/api/feedback/999999/faq", {"scenario": "ahr", "answer": "x"}),
                lambda c: 404 if c.admin else 403,
                "POST",
            ),
        ],
    }
