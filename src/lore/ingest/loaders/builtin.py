"""Imports every built-in loader module so that their `@register_loader` decorators run."""

from lore.ingest.loaders import docx, html, jsonl, pdf, pptx, table, text  # noqa: F401
