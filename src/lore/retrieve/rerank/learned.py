"""The offline default reranker: a LightGBM lambdarank model over first-stage features (see features.py),
trained by `benchmarks/train_reranker.py` on public train splits and shipped as a small text file."""

from __future__ import annotations

import json
import threading
from collections.abc import Sequence
from dataclasses import replace
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from lore.errors import ConfigError
from lore.retrieve.rerank.base import reorder
from lore.retrieve.rerank.features import FEATURES, candidate_features
from lore.schema import Hit

MODEL_DIR = Path(__file__).parent / "models"
DEFAULT_MODEL = MODEL_DIR / "ltr.txt"


@lru_cache(maxsize=4)
def _load(path: str) -> tuple[Any, dict[str, Any]]:
    import lightgbm

    model, meta_path = Path(path), Path(path).with_suffix(".json")
    if not model.is_file() or not meta_path.is_file():
        raise ConfigError(f"rerank.model: {model} (and its .json) not found")
    meta = json.loads(meta_path.read_text(encoding="utf-8"))
    unknown = [f for f in meta.get("features", []) if f not in FEATURES]
    if not meta.get("features") or unknown:
        raise ConfigError(
            f"rerank.model: {model} was trained on features this version does not compute ({unknown}); "
            "re-run benchmarks/train_reranker.py"
        )
    meta["columns"] = [FEATURES.index(f) for f in meta["features"]]
    return lightgbm.Booster(model_str=model.read_text(encoding="utf-8")), meta


class LearnedReranker:
    """Re-scores candidates with the shipped learning-to-rank model; its score is calibrated to [0, 1]
    (Platt scaling fitted on the training split: the chance the passage is from a relevant document)."""

    name = "ltr"

    def __init__(self, model: Path | None = None) -> None:
        self.booster, meta = _load(str(model or DEFAULT_MODEL))
        self.a, self.b = meta["calibration"]
        self.columns = meta["columns"]  # the model's own features, by name, among those computed
        # Chunk kinds the model saw in training; others (e.g. table rows, FAQ entries when the training
        # sets were prose only) keep their first-stage places and the model orders the rest around them.
        self.kinds = frozenset(meta.get("kinds", ["doc"]))
        self._lock = threading.Lock()  # one predict at a time per booster (LightGBM is not re-entrant here)

    def raw_scores(self, query: str, hits: Sequence[Hit]) -> np.ndarray:
        """The model's raw ranking score of each hit (higher is better)."""
        features = candidate_features(query, hits)[:, self.columns]
        with self._lock:
            return np.asarray(self.booster.predict(features, num_threads=1), dtype=np.float64)

    def rerank(self, query: str, hits: Sequence[Hit]) -> list[Hit]:
        if not hits:
            return []
        raw = self.raw_scores(query, hits)
        unit = 1.0 / (1.0 + np.exp(-(self.a * raw + self.b)))
        known = [i for i, h in enumerate(hits) if h.chunk.source_type in self.kinds]
        if len(known) == len(hits):
            return reorder(hits, raw.tolist(), unit.tolist())
        return _around_fixed(hits, known, raw, unit)


def _around_fixed(hits: Sequence[Hit], known: list[int], raw: np.ndarray, unit: np.ndarray) -> list[Hit]:
    """Hits of unknown kinds stay in their first-stage slots; the known ones, reordered by the model, fill
    the other slots. A fixed hit scores as the reranked hit just above it (the best score if none is), so
    sorting by score keeps it in place."""
    ranked = iter(reorder([hits[i] for i in known], raw[known].tolist(), unit[known].tolist()))
    top = float(unit[known].max()) if known else 1.0
    out: list[Hit] = []
    learned = set(known)
    for i, h in enumerate(hits):
        if i in learned:
            out.append(next(ranked))
        else:
            above = out[-1].rerank_score if out and out[-1].rerank_score is not None else top
            out.append(replace(h, score=above, rerank_score=above))
    return out


def from_settings(settings: Any, **_: Any) -> LearnedReranker:
    """`[rerank] provider = "ltr"`; `model` may name another trained file."""
    return LearnedReranker(Path(settings.model) if settings.model else None)
