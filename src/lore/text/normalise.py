"""The one text normaliser: the key by which two texts count as "the same"."""

from __future__ import annotations

import re
import unicodedata

from lore.lexical import CJK

_CJK_SPACE = re.compile(rf"(?<=[{CJK}]) | (?=[{CJK}])")


def normalise(text: str, *, width: bool = True, match_key: bool = False) -> str:
    """Whitespace collapsed and lower case; `width` folds NFKC widths first (ingest's chunk hashes don't).

    `match_key` is the stricter exact-match key of FAQs and routing: NFKC, case folding (not lower),
    punctuation and symbols dropped, spaces next to CJK characters dropped.
    """
    if match_key:
        text = unicodedata.normalize("NFKC", text).casefold()
        text = "".join(" " if unicodedata.category(ch)[0] in "PSZC" else ch for ch in text)
        return _CJK_SPACE.sub("", " ".join(text.split()))
    if width:
        text = unicodedata.normalize("NFKC", text)
    return " ".join(text.split()).lower()
