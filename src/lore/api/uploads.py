"""Uploads streamed to disk with a size limit and safe names; server paths confined to configured roots."""

from __future__ import annotations

import re
import tempfile
import unicodedata
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path

from fastapi import HTTPException
from python_multipart.multipart import MultipartParser, parse_options_header
from starlette.concurrency import run_in_threadpool

from lore.errors import LoadError
from lore.ingest.loaders import loader_for, supported_suffixes

_UNSAFE = re.compile(r"[\x00-\x1f\x7f<>:\"|?*]")
_MAX_NAME = 200
MAX_PARTS = 100  # file parts per upload request


def safe_name(filename: str | None) -> str:
    """The upload's file name if it is a plain, supported file name; 400/415 naming the problem otherwise."""
    name = unicodedata.normalize("NFC", (filename or "").strip())
    if not name:
        raise HTTPException(400, "upload: the file part has no file name")
    if "/" in name or "\\" in name or name in (".", "..") or name.startswith("."):
        raise HTTPException(
            400, f"upload {name!r}: file names must not contain path separators or start with '.'"
        )
    if _UNSAFE.search(name) or len(name) > _MAX_NAME:
        raise HTTPException(
            400, f"upload {name!r}: control or reserved characters, or longer than {_MAX_NAME}"
        )
    try:
        loader_for(Path(name))
    except LoadError as exc:
        raise HTTPException(
            415, f"upload {name!r}: {exc.reason}; supported: {' '.join(supported_suffixes())}"
        ) from exc
    return name


def within_roots(path: str, roots: list[Path]) -> Path:
    """`path` resolved (symlinks followed) if it lies inside one of `roots`; 403/404 otherwise."""
    if not roots:
        raise HTTPException(
            403, "server-path ingest is disabled: set api.ingest_roots to the folders it may read"
        )
    resolved = Path(path).expanduser().resolve()
    if not any(resolved.is_relative_to(root.expanduser().resolve()) for root in roots):
        raise HTTPException(403, f"path {path!r} is outside the configured ingest roots")
    if not resolved.exists():
        raise HTTPException(404, f"path {path!r}: no such file or folder")
    return resolved


@dataclass
class _Part:
    headers: dict[str, bytes] = field(default_factory=dict)
    name: str | None = None
    tmp: tempfile._TemporaryFileWrapper | None = None  # type: ignore[type-arg]
    size: int = 0


class MultipartUpload:
    """Parse a multipart body chunk by chunk, writing each file part straight to a temp file in `folder`."""

    def __init__(self, folder: Path, limit: int, content_type: str) -> None:
        ctype, params = parse_options_header(content_type)
        if ctype != b"multipart/form-data" or b"boundary" not in params:
            raise HTTPException(415, "upload: send multipart/form-data with one or more 'file' parts")
        self.folder, self.limit = folder, limit
        self.done: list[tuple[str, Path, int]] = []  # (safe name, temp path, size)
        self._part = _Part()
        self._field = b""
        self._error: HTTPException | None = None
        self.parser = MultipartParser(
            params[b"boundary"],
            {
                "on_part_begin": self._begin,
                "on_part_data": self._data,
                "on_part_end": self._end,
                "on_header_field": self._hfield,
                "on_header_value": self._hvalue,
                "on_header_end": self._hend,
                "on_headers_finished": self._headers_done,
            },
        )
        self._value = b""

    async def consume(self, chunks: AsyncIterator[bytes]) -> list[tuple[str, Path, int]]:
        """Feed the whole body; on any problem every temp file is removed and the error raised."""
        try:
            async for chunk in chunks:
                # Parsing writes to temp files: off the event loop, so other streams keep flowing.
                await run_in_threadpool(self.parser.write, chunk)
                if self._error:
                    raise self._error
            self.parser.finalize()
            if self._error:
                raise self._error
            if not self.done:
                raise HTTPException(400, "upload: no file part in the form")
            return self.done
        except BaseException:
            self.discard()
            raise

    def discard(self) -> None:
        """Delete temp files written so far."""
        if self._part.tmp is not None:
            self._part.tmp.close()
            Path(self._part.tmp.name).unlink(missing_ok=True)
        for _, path, _ in self.done:
            path.unlink(missing_ok=True)

    # -- parser callbacks ------------------------------------------------------------------------

    def _begin(self) -> None:
        self._part = _Part()

    def _hfield(self, data: bytes, start: int, end: int) -> None:
        self._field += data[start:end]

    def _hvalue(self, data: bytes, start: int, end: int) -> None:
        self._value += data[start:end]

    def _hend(self) -> None:
        self._part.headers[self._field.decode("latin-1").lower()] = self._value
        self._field = self._value = b""

    def _headers_done(self) -> None:
        _, params = parse_options_header(self._part.headers.get("content-disposition", b""))
        filename = params.get(b"filename")
        if filename is None or self._error:
            return  # a plain form field: ignored
        if len(self.done) >= MAX_PARTS:
            self._error = HTTPException(
                413, f"upload: more than {MAX_PARTS} files in one request; send them in several requests"
            )
            return
        try:
            self._part.name = safe_name(filename.decode("utf-8", "replace"))
        except HTTPException as exc:
            self._error = exc
            return
        self._part.tmp = tempfile.NamedTemporaryFile(dir=self.folder, prefix=".upload-", delete=False)  # noqa: SIM115

    def _data(self, data: bytes, start: int, end: int) -> None:
        part = self._part
        if part.tmp is None or self._error:
            return
        part.size += end - start
        if part.size > self.limit:
            self._error = HTTPException(
                413, f"upload {part.name!r}: larger than the limit of {self.limit / 1e6:g} MB"
            )
            return
        part.tmp.write(data[start:end])

    def _end(self) -> None:
        part = self._part
        if part.tmp is None:
            return
        part.tmp.close()
        if self._error:
            Path(part.tmp.name).unlink(missing_ok=True)
        else:
            self.done.append((part.name or "", Path(part.tmp.name), part.size))
        self._part = _Part()


def commit(
    uploads: list[tuple[str, Path, int]],
    store: Callable[[str, Path], None],
    claim: Callable[[list[str]], None],
) -> list[dict[str, object]]:
    """Record the uploader as the owner of every file (`claim`: one catalog transaction), then `store` each
    finished temp file under its name (replacing older uploads); temp files not stored are removed."""
    saved = []
    try:
        claim([name for name, _, _ in uploads])
        for name, tmp, size in uploads:
            store(name, tmp)
            saved.append({"name": name, "size": size})
    finally:
        for _, tmp, _ in uploads:
            tmp.unlink(missing_ok=True)
    return saved
