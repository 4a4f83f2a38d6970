"""Text length in units (CJK characters count 1, others 1/3) and deterministic ids from text parts."""

from __future__ import annotations

import hashlib

from lore.lexical import CJK_CHAR


def text_units(text: str) -> int:
    """Length in units: CJK characters count 1, other characters 1/3."""
    cjk = len(CJK_CHAR.findall(text))
    return cjk + (len(text) - cjk + 2) // 3


def stable_id(*parts: object) -> str:
    """A deterministic 32-hex id from the given parts (re-running a build gives the same ids)."""
    raw = "\x1f".join("" if p is None else str(p) for p in parts)
    return hashlib.sha256(raw.encode("utf-8")).hexdigest()[:32]
