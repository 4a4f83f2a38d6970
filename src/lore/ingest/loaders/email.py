"""E-mail (.eml) loader: headers and body as one document, each attachment as a child document.

Header and body bytes are decoded by their declared charset (gb2312 widened to GB18030), by RFC 2047
words, or by detection when a sender put raw 8-bit bytes in a header.
"""

from __future__ import annotations

import email
import hashlib
import mimetypes
import re
import tempfile
from email import policy
from email.header import Header, decode_header
from email.message import Message
from pathlib import Path
from typing import cast

from lore.errors import LoadError, LoadErrorKind
from lore.ingest.loaders.base import LoadOptions, load_file
from lore.ingest.loaders.encoding import decode_bytes
from lore.ingest.loaders.html import html_document
from lore.schema import LoadedDocument, Section

_UNSAFE_NAME = re.compile(r"[\x00-\x1f/\\:]")


def load_eml(path: Path, options: LoadOptions) -> list[LoadedDocument]:
    """The message (From/To/Date/Subject, then the plain-text body, else the HTML one) and its
    readable attachments; an attachment that cannot be read is a warning on the message."""
    data = path.read_bytes()
    if not data.strip():
        raise LoadError(str(path), "empty file", LoadErrorKind.EMPTY)
    msg = email.message_from_bytes(data, policy=policy.compat32)
    if not msg.keys():
        raise LoadError(str(path), "not an e-mail message (no headers)")
    hint = next((c for c in msg.get_charsets() if c), None)
    subject = _header(msg, "Subject", hint, str(path))
    head = [
        f"{name}: {value}"
        for name in ("From", "To", "Cc", "Date", "Subject")
        if (value := _header(msg, name, hint, str(path)))
    ]
    main = LoadedDocument(
        path=str(path),
        sections=[Section(text="\n".join(head))] if head else [],
        title=subject or None,
        encoding=hint,
    )
    plain: list[Message] = []
    html: list[Message] = []
    attachments: list[Message] = []
    for part in msg.walk():
        if part.is_multipart():
            continue
        if part.get_filename() or part.get_content_disposition() == "attachment":
            attachments.append(part)
        elif part.get_content_type() == "text/plain":
            plain.append(part)
        elif part.get_content_type() == "text/html":
            html.append(part)
    for part in plain or html:
        text, _ = decode_bytes(_payload(part), str(path), part.get_content_charset() or hint)
        if part.get_content_type() == "text/html":
            main.sections.extend(html_document(text, str(path)).sections)
        elif text.strip():
            main.sections.append(Section(text=text.strip()))
    digest = hashlib.sha256(data).hexdigest()
    children = [
        doc
        for i, part in enumerate(attachments, 1)
        for doc in _attachment(part, i, main, digest, hint, options)
    ]
    return [main, *children]


def _payload(part: Message) -> bytes:
    """The decoded body of a part that is not multipart (so bytes, or None when it has none)."""
    return cast("bytes | None", part.get_payload(decode=True)) or b""


def _attachment(
    part: Message, index: int, main: LoadedDocument, digest: str, hint: str | None, options: LoadOptions
) -> list[LoadedDocument]:
    """An attachment loaded by the loader for its file name, as documents of its own."""
    name = _file_name(part, index, hint, main.path)
    payload = _payload(part)
    with tempfile.TemporaryDirectory(prefix="lore-eml-") as tmp:
        file = Path(tmp) / name
        file.write_bytes(payload)
        try:
            docs = load_file(file, ocr=options.ocr)
        except LoadError as exc:
            main.warnings.append(f"attachment {name}: {exc.reason}")
            return []
    for n, doc in enumerate(docs):
        doc.path = main.path
        doc.document_id = "att_" + hashlib.sha256(f"{digest}/{index}/{name}/{n}".encode()).hexdigest()[:16]
        doc.title = main.title or name
        for section in doc.sections:
            section.heading_path = [f"Attachment: {name}", *section.heading_path]
    return docs


def _file_name(part: Message, index: int, hint: str | None, path: str) -> str:
    """A safe local file name for an attachment, with a suffix from its content type if it has none."""
    raw = part.get_filename() or ""
    name = _decode_words(raw, hint, path) if raw else ""
    name = _UNSAFE_NAME.sub("_", Path(name).name).strip(". ") or f"attachment-{index}"
    if not Path(name).suffix:
        name += mimetypes.guess_extension(part.get_content_type()) or ".bin"
    return name[-120:]


def _header(msg: Message, name: str, hint: str | None, path: str) -> str:
    value = msg.get(name)
    return "" if value is None else " ".join(_decode_words(value, hint, path).split())


def _decode_words(value: str | Header, hint: str | None, path: str) -> str:
    """RFC 2047 words by their charset; raw 8-bit bytes by the message's charset or detection."""
    out = []
    for chunk, charset in decode_header(value):
        raw = chunk if isinstance(chunk, bytes) else chunk.encode("ascii", "surrogateescape")
        known = charset if charset and charset != "unknown-8bit" else hint
        try:
            out.append(decode_bytes(raw, path, known)[0])
        except LoadError:
            out.append(raw.decode("utf-8", "replace"))
    return "".join(out)
