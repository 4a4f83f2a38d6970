"""The offline default reranker: a LightGBM lambdarank model over first-stage features (see features.py),
trained by `benchmarks/train_reranker.py` on public train splits and shipped as a small text file."""

from __future__ import annotations

import json
import threading
from collections.abc import Sequence
from dataclasses import dataclass, replace
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from lore.errors import ConfigError
from lore.lexical import is_chinese
from lore.retrieve.rerank.features import FEATURES, candidate_features, is_question, passage_key
from lore.schema import Hit

MODEL_DIR = Path(__file__).parent / "models"
DEFAULT_MODEL = MODEL_DIR / "ltr.txt"


FUSE_K = 60


@dataclass(frozen=True)
class Guard:
    """How far the model may move the first-stage list, chosen on training data (`ltr.json` "guard"):
    the final rank fuses the model's rank with weight 1 and the first stage's with `blend`
    (1 / (60 + rank) each), then at most `per_parent` chunks of one passage fill the first `depth`
    places (0: no cap), so one passage cannot crowd the other parts of a multi-part question out."""

    blend: float = 0.0
    per_parent: int = 0
    depth: int = 10


def guarded_order(raw: np.ndarray, parents: Sequence[str], guard: Guard) -> list[int]:
    """Indices of the candidates (given in first-stage order) in their final order."""
    n = len(raw)
    model_rank = np.empty(n, dtype=np.float64)
    model_rank[np.argsort(-raw, kind="stable")] = np.arange(1, n + 1)
    fused = 1.0 / (FUSE_K + model_rank) + guard.blend / (FUSE_K + np.arange(1, n + 1))
    order = sorted(range(n), key=lambda i: (-fused[i], i))
    if not guard.per_parent:
        return order
    out: list[int] = []
    taken: dict[str, int] = {}
    while order and len(out) < guard.depth:
        pick = next((i for i in order if taken.get(parents[i], 0) < guard.per_parent), order[0])
        order.remove(pick)
        out.append(pick)
        taken[parents[pick]] = taken.get(parents[pick], 0) + 1
    return out + order


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


@dataclass(frozen=True)
class _Model:
    """One trained file: its booster, calibration, feature columns, chunk kinds and guard."""

    booster: Any
    a: float
    b: float
    columns: list[int]
    kinds: frozenset[str]
    guard: Guard

    @classmethod
    def load(cls, path: Path) -> _Model:
        booster, meta = _load(str(path))
        a, b = meta["calibration"]
        # Chunk kinds the model saw in training; others (e.g. table rows, FAQ entries when the training
        # sets were prose only) keep their first-stage places and the model orders the rest around them.
        kinds = frozenset(meta.get("kinds", ["doc"]))
        return cls(booster, a, b, meta["columns"], kinds, Guard(**meta.get("guard", {})))


def statements_model(model: Path) -> Path:
    """Where the model for statement and key-word queries trained beside `model` lives."""
    return model.with_name(f"{model.stem}_statements.txt")


class LearnedReranker:
    """Re-scores candidates with the shipped learning-to-rank model; its score is calibrated to [0, 1]
    (Platt scaling fitted on the training split: the chance the passage is from a relevant document).
    English statements and key-word queries use the model trained on them when one sits beside it."""

    name = "ltr"

    def __init__(self, model: Path | None = None) -> None:
        path = model or DEFAULT_MODEL
        self.questions = _Model.load(path)
        claims = statements_model(path)
        self.statements = _Model.load(claims) if claims.is_file() else self.questions
        self._lock = threading.Lock()  # one predict at a time per booster (LightGBM is not re-entrant here)

    def model_for(self, query: str) -> _Model:
        """The statements model for an English query that is not a question, else the questions model."""
        return self.questions if is_question(query) or is_chinese(query) else self.statements

    def raw_scores(self, query: str, hits: Sequence[Hit], model: _Model | None = None) -> np.ndarray:
        """Each hit's raw ranking score (higher is better), by `model_for(query)` unless given."""
        model = model or self.model_for(query)
        features = candidate_features(query, hits)[:, model.columns]
        with self._lock:
            return np.asarray(model.booster.predict(features, num_threads=1), dtype=np.float64)

    def rerank(self, query: str, hits: Sequence[Hit]) -> list[Hit]:
        if not hits:
            return []
        model = self.model_for(query)
        raw = self.raw_scores(query, hits, model)
        unit = 1.0 / (1.0 + np.exp(-(model.a * raw + model.b)))
        known = [i for i, h in enumerate(hits) if h.chunk.source_type in model.kinds]
        order = guarded_order(raw[known], [passage_key(hits[i].chunk) for i in known], model.guard)
        # Scores stay monotone in the final order (later stages may sort by them): the k-th place gets
        # the k-th best calibrated score of the reordered hits.
        best: list[float] = sorted(unit[known].tolist(), reverse=True)
        ranked = iter(
            [replace(hits[known[j]], score=s, rerank_score=s) for j, s in zip(order, best, strict=True)]
        )
        out: list[Hit] = []
        learned = set(known)
        for i, h in enumerate(hits):
            if i in learned:
                out.append(next(ranked))
            else:
                # Kinds the model never saw (table rows, FAQ entries when it was trained on prose) keep
                # their first-stage slot and score as the hit above them (the best score at the top).
                above = out[-1].rerank_score if out else (best[0] if best else 1.0)
                assert above is not None  # every hit in `out` was given a rerank score
                out.append(replace(h, score=above, rerank_score=above))
        return out


def from_settings(settings: Any, **_: Any) -> LearnedReranker:
    """`[rerank] provider = "ltr"`; `model` may name another trained file."""
    return LearnedReranker(Path(settings.model) if settings.model else None)
