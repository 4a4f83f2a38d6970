"""Document loaders, one module per format, found by file suffix."""

from lore.ingest.loaders.base import (
    load_file,
    loader_for,
    reader_version,
    register_loader,
    supported_suffixes,
)

__all__ = ["load_file", "loader_for", "reader_version", "register_loader", "supported_suffixes"]
