"""Text length in units (CJK characters count 1, others 1/3) and deterministic ids from text parts."""

from __future__ import annotations

import hashlib
import math
import re

from lore.lexical import CJK, CJK_CHAR


def text_units(text: str) -> int:
    """Length in units: CJK characters count 1, other characters 1/3."""
    cjk = len(CJK_CHAR.findall(text))
    return cjk + (len(text) - cjk + 2) // 3


def stable_id(*parts: object) -> str:
    """A deterministic 32-hex id from the given parts (re-running a build gives the same ids)."""
    raw = "\x1f".join("" if p is None else str(p) for p in parts)
    return hashlib.sha256(raw.encode("utf-8")).hexdigest()[:32]


_TOKEN = re.compile(rf"[{CJK}]|[^\W_{CJK}]+|[^\w\s]|_")


def estimate_tokens(text: str) -> int:
    """Tokens by a tiktoken-like rule (a model's usage when it reports none): a CJK character, a punctuation
    mark, and each started 4 characters of a word or number count one."""
    return sum(math.ceil(len(m.group()) / 4) for m in _TOKEN.finditer(text))
