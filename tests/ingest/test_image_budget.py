"""Issue 34 finding 6: a 30000x30000 PNG (a few hundred bytes on disk) was decoded (484 -> 2,198 MB RSS)
before the pixel limit refused it. Its dimensions are now read from the header: the file is refused with
a reason naming them and the limit, and the process's peak memory stays where it was."""

from __future__ import annotations

import json
import struct
import subprocess
import sys
import zlib
from pathlib import Path

import docx

from lore.ingest.loaders.ocr import MAX_IMAGE_PIXELS

SIDE = 30000  # 900 M pixels: 900 MB decoded as grey, 2.7 GB as RGB


def _chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


def huge_png(width: int = SIDE, height: int = SIDE, colour: int = 0) -> bytes:
    """A valid PNG header for `width`x`height` 8-bit pixels (0: grey, 2: RGB) with one row of zeros."""
    row = zlib.compress(b"\0" * (width * (3 if colour == 2 else 1) + 1), 9)
    header = struct.pack(">IIBBBBB", width, height, 8, colour, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + _chunk(b"IHDR", header) + _chunk(b"IDAT", row) + _chunk(b"IEND", b"")


# Runs in a fresh interpreter: its peak RSS (ru_maxrss) is what loading the file cost, nothing else.
PROBE = """
import json, resource, sys
from pathlib import Path
from lore.errors import LoadError
from lore.ingest.loaders.base import load_file

before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
out = {}
try:
    docs = load_file(Path(sys.argv[1]))
    out["warnings"] = [w for d in docs for w in d.warnings]
except LoadError as exc:
    out["reason"], out["kind"] = exc.reason, str(exc.kind)
out["grew_mb"] = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
print(json.dumps(out))
"""


def probe(path: Path) -> dict:
    done = subprocess.run(
        [sys.executable, "-c", PROBE, str(path)], capture_output=True, text=True, timeout=300, check=True
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_a_huge_png_file_is_refused_from_its_header(tmp_path: Path) -> None:
    for colour in (0, 2):  # grey (the decoder would allocate 900 MB) and RGB (over MuPDF's own cap)
        path = tmp_path / f"huge{colour}.png"
        path.write_bytes(huge_png(colour=colour))
        assert path.stat().st_size < 200_000  # cheap to send
        out = probe(path)
        assert out["grew_mb"] < 100, out  # decoding the grey one first took 900 MB and more
        assert out["reason"] == f"image of {SIDE}x{SIDE} pixels is over the {MAX_IMAGE_PIXELS:,}-pixel limit"
        assert out["kind"] == "too_large", out


def test_a_huge_picture_inside_a_docx_is_skipped_with_a_warning(tmp_path: Path) -> None:
    picture = tmp_path / "huge.png"
    picture.write_bytes(huge_png())
    document = docx.Document()
    document.add_paragraph("Warehouse floor plan, see the picture below.")
    document.add_picture(str(picture))
    path = tmp_path / "plan.docx"
    document.save(str(path))
    out = probe(path)
    assert any(f"{SIDE}x{SIDE} pixels is over the" in w for w in out["warnings"]), out
    assert out["grew_mb"] < 100, out
