"""Readers for legacy Office files, measured on the real fixtures in ../shared/fixtures/more.

For each .doc/.xls/.ppt: seconds per file and how many of the README's phrases the reader's text holds,
for Lore's loader (LibreOffice conversion for .doc/.ppt, xlrd for .xls) and, as baselines in the same
run, antiword, catdoc, catppt, xls2csv (Debian packages, when installed) and LibreOffice for .xls.

    python benchmarks/legacy_formats.py
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from lore.errors import LoadError
from lore.ingest.loaders import load_file
from lore.ingest.loaders.base import LoadOptions
from lore.ingest.loaders.office import convert
from lore.ingest.loaders.table import load_xlsx

MORE = Path(__file__).resolve().parents[2] / "shared" / "fixtures" / "more"
PHRASES = {
    "docling_legacy_sample.doc": ["Enjoy summer warmth", "Calories per portion", "Let’s swim"],
    "poi_61490.doc": ["下面是表格3x3", "章节1的内容，一段话", "居中的大标题", "页脚内容"],
    "wordextractor_test11.doc": [
        "这是一个用来测试nodejs解析Word文档",
        "This is a test for parsing the Word file in node.",
    ],
    "unstructured_tests-example.xls": ["Bagpipes are awesome.", "Question Format Abbreviations"],
    "poi_44235.xls": ["还原利润表", "房地产贷款利息收入", "个人活期存款利息支出"],
    "docling_legacy_sample.ppt": [
        "A merged with B",
        "A rectangle shape with this text inside.",
        "Some notes on the second slide.",
    ],
}


def lore_text(path: Path) -> str:
    return "\n".join(
        " / ".join([*s.heading_path, s.text]) for d in load_file(path, ocr=False) for s in d.sections
    )


def command(*args: str) -> Callable[[Path], str]:
    def run(path: Path) -> str:
        out = subprocess.run([*args, str(path)], capture_output=True, timeout=120, check=False)
        if out.returncode:
            raise RuntimeError(out.stderr.decode("utf-8", "replace").strip()[:80] or f"exit {out.returncode}")
        return out.stdout.decode("utf-8", "replace")

    return run


def libreoffice_xlsx(path: Path) -> str:
    with tempfile.TemporaryDirectory() as tmp:
        xlsx = convert(path, "xlsx", Path(tmp))
        return "\n".join(s.text for d in load_xlsx(xlsx, LoadOptions()) for s in d.sections)


def readers(suffix: str) -> list[tuple[str, Callable[[Path], str]]]:
    found = {name: shutil.which(name) for name in ("antiword", "catdoc", "catppt", "xls2csv")}
    lore = (
        "Lore (LibreOffice -> .docx)"
        if suffix == ".doc"
        else "Lore (LibreOffice -> .pptx)"
        if suffix == ".ppt"
        else "Lore (xlrd)"
    )
    out: list[tuple[str, Callable[[Path], str]]] = [(lore, lore_text)]
    if suffix == ".doc":
        out += [
            (n, command(*a))
            for n, a in (("antiword", ("antiword", "-m", "UTF-8.txt")), ("catdoc", ("catdoc", "-d", "utf-8")))
            if found[n]
        ]
    if suffix == ".ppt" and found["catppt"]:
        out.append(("catppt", command("catppt", "-d", "utf-8")))
    if suffix == ".xls":
        out.append(("LibreOffice -> .xlsx (openpyxl)", libreoffice_xlsx))
        if found["xls2csv"]:
            out.append(("xls2csv", command("xls2csv", "-d", "utf-8")))
    return out


def squash(s: str) -> str:
    """The text without whitespace, lower-cased."""
    return "".join(s.split()).lower()


def main() -> None:
    print("| file | reader | seconds | phrases found | note |")
    print("|---|---|---:|---:|---|")
    for name, phrases in PHRASES.items():
        path = MORE / name
        for reader, fn in readers(path.suffix):
            started = time.perf_counter()
            try:
                text, note = fn(path), ""
            except (LoadError, RuntimeError, subprocess.TimeoutExpired) as exc:
                text, note = "", str(exc)[-80:]
            seconds = time.perf_counter() - started
            hits = sum(squash(p) in squash(text) for p in phrases)
            print(f"| {name} | {reader} | {seconds:.2f} | {hits}/{len(phrases)} | {note} |")


if __name__ == "__main__":
    main()
