"""Pictures belong to their page: a Markdown or HTML page's image links to files of the same ingest are
read into the page (OCR, SVG words) and found and cited as that page; links outside the batch, to another
owner's file or over the network are never followed, and no image syntax is indexed."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from PIL import Image, ImageDraw, ImageFont

from lore.config import load_settings
from lore.engine import Lore
from lore.ingest import pictures as pictures_module
from lore.ingest.files import SourceFile, discover
from lore.ingest.loaders import load_file
from lore.ingest.loaders.limits import FileLimits
from lore.ingest.pictures import BatchPictures
from lore.schema import LoadedDocument


def picture(path: Path, words: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    image = Image.new("RGB", (1000, 160), "white")
    ImageDraw.Draw(image).text((20, 50), words, font=ImageFont.load_default(size=44), fill="black")
    image.save(path)
    return path


@pytest.fixture
def site(tmp_path: Path) -> Path:
    """A handbook page linking a picture by site-root path, one relative, one outside, one remote."""
    root = tmp_path / "handbook"
    picture(root / "images" / "supplies.png", "Stapler Highlighter Sticky notes")
    (root / "images" / "flow.svg").write_text(
        '<svg xmlns="http://www.w3.org/2000/svg"><text>Manager approves within 3 days</text></svg>',
        encoding="utf-8",
    )
    picture(tmp_path / "outside" / "secret.png", "Outside secret words")
    (root / "pages").mkdir()
    (root / "pages" / "office.md").write_text(
        "# Office supplies\n\nOrder only from the approved list:\n\n"
        "![Approved Office Supplies List](/images/supplies.png)\n\n"
        '![Approval flow](../images/flow.svg "the flow")\n\n'
        "![Secret](../../outside/secret.png) ![Logo](https://example.com/logo.png)\n",
        encoding="utf-8",
    )
    (root / "pages" / "travel.html").write_text(
        "<html><body><h1>Travel</h1><p>Before you book:</p>"
        '<img src="/images/flow.svg" alt="How approval works"><p>Book through the portal.</p></body></html>',
        encoding="utf-8",
    )
    return root


def test_a_page_holds_the_text_of_the_pictures_of_its_batch_and_only_those(site: Path) -> None:
    files = discover([site])
    pictures = BatchPictures(files)
    page = site / "pages" / "office.md"
    (doc,) = load_file(page, pictures=pictures)
    text = "\n".join(s.text for s in doc.sections)
    assert "[Picture: Approved Office Supplies List]\nStapler Highlighter Sticky notes" in text
    assert "[Picture: Approval flow]\nManager approves within 3 days" in text
    # Outside the batch and over the network: the alt text only, never the file, never the syntax.
    assert "Secret" in text and "Outside secret" not in text and "Logo" in text
    assert "![" not in text and "](" not in text and "example.com" not in text
    (html,) = load_file(site / "pages" / "travel.html", pictures=pictures)
    assert "[Picture: How approval works]\nManager approves within 3 days" in html.sections[0].text


def test_a_picture_of_another_owner_in_a_shared_kb_is_not_read_into_a_page(site: Path) -> None:
    files = discover([site])
    owner = {f.name: ("tenant-b" if "supplies" in f.name else "default") for f in files}
    pictures = BatchPictures(files, lambda f: owner[f.name])
    (doc,) = load_file(site / "pages" / "office.md", pictures=pictures)
    text = "\n".join(s.text for s in doc.sections)
    assert "Stapler" not in text and "Approved Office Supplies List" in text
    assert "Manager approves" in text  # the drawing is the page owner's own


def test_a_page_reads_no_more_pictures_than_its_budget(site: Path) -> None:
    limits = load_settings(home=site.parent / "home", ingest={"max_page_pictures": 1}).ingest
    (doc,) = load_file(
        site / "pages" / "office.md",
        pictures=BatchPictures(discover([site])),
        limits=FileLimits.from_settings(limits),
    )
    text = "\n".join(s.text for s in doc.sections)
    assert text.count("[Picture:") == 1 and "Approval flow" in text


@pytest.fixture
def lore(tmp_path: Path) -> Iterator[Lore]:
    lore = Lore(load_settings(home=tmp_path / "home"))
    yield lore
    lore.close()


def test_a_question_on_a_picture_finds_and_cites_its_page(lore: Lore, site: Path) -> None:
    lore.create_kb("hb")
    report = lore.ingest("hb", [site])
    assert {f.name: f.status for f in report.files}["handbook/pages/office.md"] == "ingested"
    hits = lore.search("hb", "Is a highlighter on the approved supplies list?", lore.search_options(3))
    top = hits[0].chunk
    assert top.file_path.endswith("office.md") and "Highlighter" in top.text, [
        h.chunk.file_path for h in hits
    ]
    assert "![" not in top.text


def test_source_files_outside_the_batch_are_unknown(tmp_path: Path) -> None:
    shown = picture(tmp_path / "a" / "x.png", "Words")
    batch = BatchPictures([SourceFile(shown, "a/x.png")])
    page = tmp_path / "a" / "p.md"
    page.write_text("![x](x.png)", encoding="utf-8")
    assert batch.text(page, "x.png") is None  # the page itself is not of the batch: no owner to compare
    assert batch.text(page, "data:image/png;base64,AAAA") is None


def test_a_picture_shown_by_two_pages_and_ingested_on_its_own_is_read_once(
    site: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (site / "pages" / "again.md").write_text("![Supplies](/images/supplies.png)\n", encoding="utf-8")
    files = discover([site])
    reads: list[Path] = []

    def counting(path: Path, **options: Any) -> list[LoadedDocument]:
        reads.append(path.resolve())
        return load_file(path, **options)

    monkeypatch.setattr(pictures_module, "load_file", counting)
    batch = BatchPictures(files)
    for f in files:
        batch.load(f.path)
    picture = (site / "images" / "supplies.png").resolve()
    assert reads.count(picture) == 1 and len(reads) == len(files)
