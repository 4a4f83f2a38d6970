"""Bytes to text: UTF-8 (with or without BOM) first, then a declared hint, then detection."""

from __future__ import annotations

import codecs
from pathlib import Path

from charset_normalizer import from_bytes

from lore.errors import LoadError

_UTF16_BOMS = (codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)
_SUPERSETS = {"gb2312": "gb18030", "gbk": "gb18030", "shift_jis": "cp932"}


def decode_bytes(data: bytes, path: str, hint: str | None = None) -> tuple[str, str]:
    """Decode `data` and return (text, encoding name); `hint` is a declared charset to try early."""
    if not data:
        return "", "utf-8"
    if data.startswith(codecs.BOM_UTF8):
        return _strict(data, "utf-8-sig", path), "utf-8-sig"
    if data.startswith(_UTF16_BOMS):
        return _strict(data, "utf-16", path), "utf-16"
    # NUL bytes never occur in text outside UTF-16/32, which we only accept with a BOM.
    if b"\x00" in data[:8192]:
        raise LoadError(path, "binary file, not text")
    try:
        return data.decode("utf-8"), "utf-8"
    except UnicodeDecodeError:
        pass
    if hint:
        name = _codec_name(hint)
        if name:
            try:
                return data.decode(name), name
            except UnicodeDecodeError:
                pass
    best = from_bytes(data).best()
    if best is None or best.encoding is None:
        raise LoadError(path, "cannot detect the text encoding (binary or corrupt file?)")
    return str(best), best.encoding


def read_text(path: Path, hint: str | None = None) -> tuple[str, str]:
    """Read a file and decode it with `decode_bytes`."""
    return decode_bytes(path.read_bytes(), str(path), hint)


def _strict(data: bytes, encoding: str, path: str) -> str:
    try:
        return data.decode(encoding)
    except UnicodeDecodeError as exc:
        raise LoadError(
            path, f"not valid {encoding} text despite its byte-order mark ({exc.reason})"
        ) from exc


def _codec_name(label: str) -> str | None:
    """Python's codec name for a charset label, or None if unknown; legacy CJK labels widen."""
    try:
        name = codecs.lookup(label.strip().strip("\"'")).name
    except LookupError:
        return None
    # Files labelled gb2312/gbk/shift_jis routinely use characters only the superset has.
    return _SUPERSETS.get(name, name)
