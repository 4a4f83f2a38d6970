"""Eval sets saved from the console, per knowledge base, in the catalog (every replica sees them); a
KB's old `eval_sets/<kb>/<name>.jsonl` files are imported on first use."""

from __future__ import annotations

import logging
import os
import re
from datetime import UTC, datetime
from pathlib import Path

from lore.catalog.console import EvalSet
from lore.catalog.legacy import KbRows

__all__ = ["EvalSet", "EvalSets"]

log = logging.getLogger("lore.eval")
NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")  # a saved set's name, as the API takes it


def _legacy_set(path: Path) -> tuple[str, str, datetime]:
    """(name, lines, saved at) of an old `<name>.jsonl` file."""
    return path.stem, path.read_text(encoding="utf-8"), datetime.fromtimestamp(os.stat(path).st_mtime, UTC)


class EvalSets(KbRows):
    """The saved eval sets of one knowledge base (the old folder's files at `legacy` imported once)."""

    def legacy_files(self) -> list[Path]:
        """Each old `<name>.jsonl` still in the folder whose name the API would take."""
        if self.legacy is None or not self.legacy.is_dir():
            return []
        files = []
        for path in sorted(self.legacy.glob("*.jsonl")):
            if NAME.fullmatch(path.stem):
                files.append(path)
            else:
                log.warning("%s: not imported (an eval set's name is 1-64 letters, digits, '_' or '-')", path)
        return files

    def load_legacy(self, path: Path) -> tuple[str, str, datetime]:
        return _legacy_set(path)

    def store_legacy(self, data: tuple[str, str, datetime]) -> int:
        name, body, at = data
        saved = self.catalog.save_eval_set(self.kb.id, name, body, by="", replace=False, at=at)
        return int(saved is not None)

    def list(self) -> list[EvalSet]:
        """The saved sets by name, with how many questions each has."""
        self.import_legacy()
        return self.catalog.list_eval_sets(self.kb.id)

    def body(self, name: str) -> str | None:
        """A saved set's JSONL lines, or None if there is none of that name."""
        self.import_legacy()
        return self.catalog.eval_set_body(self.kb.id, name)

    def save(self, name: str, body: str, by: str) -> EvalSet:
        """Keep `body` under `name` (replacing a set of that name)."""
        self.import_legacy()
        saved = self.catalog.save_eval_set(self.kb.id, name, body, by=by)
        assert saved is not None
        return saved
