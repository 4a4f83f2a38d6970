"""How the CLI says a build's pages and time left, locally and from a server's progress events (no engine
imports: the client-only install uses it too)."""

from __future__ import annotations


def pages_text(pages: int | None) -> str:
    """1 page, 12 pages (pages, slides or sheets)."""
    return f"{pages:,} page{'' if pages == 1 else 's'}"


def time_left(eta_s: float | None) -> str:
    """The run's estimated time left as the console says it too: about 40 s, 2 min, 1 h 05 min left."""
    s = int((eta_s or 0) + 0.5)  # rounded half up, as the console's Math.round
    if s < 60:
        return f"about {max(s, 1)} s left"
    if s < 3600:
        return f"about {int(s / 60 + 0.5)} min left"
    return f"about {s // 3600} h {s % 3600 // 60:02d} min left"
