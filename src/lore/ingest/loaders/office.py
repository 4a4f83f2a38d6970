"""Legacy and other office formats (.doc, .ppt, .rtf, .odt) converted by headless LibreOffice to
.docx/.pptx and read by those loaders, so headings, tables, notes and pictures (OCR) carry over.

LibreOffice reads every variant seen in real shares (fast-saved and WPS-saved Word files, Chinese code
pages) where antiword and catdoc each miss some; `make office` installs it (Debian's -nogui packages).
"""

from __future__ import annotations

import atexit
import os
import shutil
import signal
import subprocess
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path

from lore.errors import LoadError, LoadErrorKind
from lore.ingest.loaders.base import LoadOptions
from lore.schema import LoadedDocument

CONVERT_TIMEOUT_S = 180
_INSTALL = (
    "install LibreOffice: `make office` or `apt-get install libreoffice-writer-nogui "
    "libreoffice-impress-nogui`"
)
_lock = threading.Lock()  # one conversion at a time: the profile folder is not shared safely
_profile: Path | None = None


def load_doc(path: Path, options: LoadOptions) -> list[LoadedDocument]:
    """Word 97-2003 (.doc)."""
    return _via(path, "docx", options)


def load_ppt(path: Path, options: LoadOptions) -> list[LoadedDocument]:
    """PowerPoint 97-2003 (.ppt), speaker notes included."""
    return _via(path, "pptx", options)


def load_rtf(path: Path, options: LoadOptions) -> list[LoadedDocument]:
    """Rich Text Format (.rtf)."""
    return _via(path, "docx", options)


def load_odt(path: Path, options: LoadOptions) -> list[LoadedDocument]:
    """OpenDocument text (.odt)."""
    return _via(path, "docx", options)


def soffice() -> str | None:
    """The LibreOffice executable, or None if it is not installed."""
    named = os.environ.get("LORE_SOFFICE")
    if named is not None:  # an explicit choice; "" or a missing file means "not installed"
        return shutil.which(named) if named else None
    return shutil.which("soffice") or shutil.which("libreoffice")


def convert(path: Path, target: str, out_dir: Path) -> Path:
    """Convert `path` to `target` ("docx", "pptx") in `out_dir` with headless LibreOffice."""
    exe = soffice()
    if exe is None:
        raise LoadError(
            str(path),
            f"reading {path.suffix} files needs LibreOffice, which is not installed: {_INSTALL}",
            LoadErrorKind.UNSUPPORTED,
        )
    source = out_dir / ("source" + path.suffix.lower())  # a plain name: the output name is predictable
    shutil.copyfile(path, source)
    with _lock:
        cmd = [
            exe,
            f"-env:UserInstallation={_profile_dir().as_uri()}",
            "--headless",
            "--norestore",
            "--nolockcheck",
            "--convert-to",
            target,
            "--outdir",
            str(out_dir / "out"),
            str(source),
        ]
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
        try:
            _, err = proc.communicate(timeout=CONVERT_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
            raise LoadError(
                str(path), f"LibreOffice did not finish converting it within {CONVERT_TIMEOUT_S} s"
            ) from None
    result = out_dir / "out" / f"source.{target}"
    if not result.is_file():
        detail = err.decode("utf-8", "replace").strip().splitlines()
        reason = detail[-1] if detail else f"exit code {proc.returncode}"
        raise LoadError(str(path), f"LibreOffice cannot open it (corrupt or password-protected?): {reason}")
    return result


def _via(path: Path, target: str, options: LoadOptions) -> list[LoadedDocument]:
    from lore.ingest.loaders.docx import load_docx
    from lore.ingest.loaders.pptx import load_pptx

    _check_magic(path)
    reader: Callable[[Path, LoadOptions], list[LoadedDocument]] = load_docx if target == "docx" else load_pptx
    with tempfile.TemporaryDirectory(prefix="lore-convert-") as tmp:
        converted = convert(path, target, Path(tmp))
        try:
            docs = reader(converted, options)
        except LoadError as exc:
            raise LoadError(str(path), exc.reason, exc.kind) from exc
    for doc in docs:
        doc.path = str(path)
    return docs


_OLE2 = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"
_MAGIC = {
    ".doc": ((_OLE2, b"{\\rtf"), "a Word 97-2003 file"),
    ".ppt": ((_OLE2,), "a PowerPoint 97-2003 file"),
    ".rtf": ((b"{\\rtf",), "an RTF file"),
    ".odt": ((b"PK\x03\x04",), "an OpenDocument file"),
}


def _check_magic(path: Path) -> None:
    """Refuse a file whose first bytes are not its format's: LibreOffice would import it as plain text."""
    with path.open("rb") as fh:
        head = fh.read(8)
    if not head:
        raise LoadError(str(path), "empty file", LoadErrorKind.EMPTY)
    signatures, what = _MAGIC[path.suffix.lower()]
    if not head.startswith(signatures):
        raise LoadError(str(path), f"not {what} (its first bytes do not match the format)")


def _profile_dir() -> Path:
    """A LibreOffice profile for this process, made on first use and removed at exit."""
    global _profile
    if _profile is None:
        _profile = Path(tempfile.mkdtemp(prefix="lore-soffice-"))
        atexit.register(shutil.rmtree, _profile, True)
    return _profile
