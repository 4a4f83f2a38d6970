"""What the catalog tests share: a KB row's fields (no store is opened) and the CLI as a subprocess."""

from __future__ import annotations

import sys

KB = {
    "embedding_provider": "local",
    "embedding_model": "e5",
    "embedding_dim": 8,
    "chunk_schema": "v1",
    "store_backend": "embedded",
}
LORE = [sys.executable, "-c", "from lore.cli.main import main; main()"]
