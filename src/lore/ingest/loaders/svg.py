"""SVG drawings read for their text: `<title>`, `<desc>` and every `<text>` (with its `<tspan>`s) in
document order, parsed without entities, DTDs or network access."""

from __future__ import annotations

from pathlib import Path

from lxml import etree

from lore.errors import LoadError, LoadErrorKind
from lore.ingest.loaders.base import LoadOptions
from lore.schema import LoadedDocument, Section

_TEXT_TAGS = {"title", "desc", "text"}
_PARSER = etree.XMLParser(resolve_entities=False, no_network=True, load_dtd=False, huge_tree=False)


def svg_text(data: bytes) -> str:
    """The drawing's words, one line per `<title>`, `<desc>` or `<text>`; ValueError for invalid XML."""
    try:
        root = etree.fromstring(data, _PARSER)
    except etree.XMLSyntaxError as exc:
        raise ValueError("not a valid SVG (XML) file") from exc
    if root is None or etree.QName(root).localname != "svg":
        raise ValueError("not an SVG drawing (no <svg> root)")
    lines: list[str] = []
    for node in root.iter():
        if not isinstance(node.tag, str) or etree.QName(node).localname not in _TEXT_TAGS:
            continue
        line = " ".join("".join(node.itertext()).split())
        if line and (not lines or lines[-1] != line):
            lines.append(line)
    return "\n".join(lines)


def load_svg(path: Path, options: LoadOptions) -> list[LoadedDocument]:
    """The drawing's text as one section (no OCR: the words are in the file)."""
    try:
        text = svg_text(path.read_bytes())
    except ValueError as exc:
        raise LoadError(str(path), str(exc)) from exc
    if not text.strip():
        raise LoadError(str(path), "SVG drawing without text", LoadErrorKind.NO_TEXT)
    return [LoadedDocument(path=str(path), sections=[Section(text=text)])]
