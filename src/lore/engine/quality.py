"""Quality figures of KB versions: refusal-threshold calibration, version diffs and the searches eval
figures are taken with."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Sequence
from functools import cached_property
from pathlib import Path
from typing import Any

from lore.answer import calibration
from lore.answer.calibration import Calibration
from lore.answer.evidence import question_language
from lore.catalog import KnowledgeBase
from lore.engine.wiring import Wiring
from lore.errors import LoreError
from lore.eval.compare import EvalQuestion, compare_scores, diff_manifests, load_eval_set, score
from lore.schema import Hit
from lore.state.cache import LocalCache
from lore.storage.layout import reports_key

CALIBRATION_TTL_S = 30.0  # how soon another replica's recalibration is seen (a new version is a new key)


class Quality(Wiring):
    """Calibration, diffs and eval searches over a KB's versions."""

    @cached_property
    def _thresholds(self) -> LocalCache:
        """(language -> threshold or None, expiry) per calibration key: an ask neither reads nor fetches the
        file each time."""
        return LocalCache("calibration", 256)

    def calibrate(
        self, name: str, *, version: int | None = None, eval_questions: Sequence[tuple[str, bool]] = ()
    ) -> Calibration:
        """Fit the KB version's refusal threshold (active version unless `version`) and store it
        beside the version's quality report; see `lore.answer.calibration`."""
        kb = self.catalog.get_kb(name)
        opts = self.scoped(kb, self.search_options(), version)
        seq = opts.filter.version_seq
        chunk_ids = [cid for f in self.catalog.list_files(kb.id) for cid in self.catalog.file_chunk_ids(f.id)]
        chunks = [
            c
            for c in self.store(kb).get(chunk_ids)
            if seq is None or (c.valid_from_seq <= seq and (c.valid_to_seq == 0 or c.valid_to_seq > seq))
        ]
        score = calibration.scorer(self.retriever(kb), opts, self.settings.answer)
        result = calibration.calibrate(score, chunks, eval_questions=eval_questions, version=seq)
        key = reports_key(kb, seq)
        calibration.save(result, self.storage.path(key))
        self.storage.publish(f"{key}/{calibration.FILE_NAME}")
        self._thresholds.set(key, (result.thresholds(), time.monotonic() + CALIBRATION_TTL_S))
        return result

    def evidence_threshold(self, kb: KnowledgeBase, seq: int | None, question: str) -> float | None:
        """The refusal threshold for `question` on a KB version: pinned in config, else its calibration's
        for the question's language, else None (the evidence model's default for that language)."""
        pinned = self.settings.answer.evidence_threshold
        if pinned is not None:
            return pinned
        thresholds = self._calibrated(kb, seq)
        return thresholds.get(question_language(question)) if thresholds else None

    def _calibrated(self, kb: KnowledgeBase, seq: int | None) -> dict[str, float] | None:
        """The KB version's calibrated thresholds by question language, or None if it has none."""
        key = reports_key(kb, seq)
        found: tuple[dict[str, float] | None, float] | None = self._thresholds.get(key)
        if found is not None and found[1] > time.monotonic():
            return found[0]
        with contextlib.suppress(LoreError):  # a bucket: refresh the copy; unreachable: the last one serves
            self.storage.fetch(f"{key}/{calibration.FILE_NAME}")
        stored = calibration.load(self.storage.path(key))
        thresholds = stored.thresholds() if stored else None
        self._thresholds.set(key, (thresholds, time.monotonic() + CALIBRATION_TTL_S))
        return thresholds

    def diff(self, name: str, base: int, candidate: int, eval_set: Path | None = None) -> dict[str, Any]:
        """Files added/changed/removed from version `base` to `candidate`, and, with an eval set (given
        or configured), Recall@k and MRR of both versions side by side."""
        kb = self.catalog.get_kb(name)
        for seq in (base, candidate):
            self.catalog.get_version(kb.id, seq)
        out: dict[str, Any] = {
            "kb": name,
            "base": base,
            "candidate": candidate,
            "files": diff_manifests(
                self.catalog.version_manifest(kb.id, base), self.catalog.version_manifest(kb.id, candidate)
            ),
        }
        path = eval_set or self.settings.gate.eval_set
        if path is not None:
            out["retrieval"] = self._compare(name, base, candidate, load_eval_set(path))
        return out

    def _compare(
        self, name: str, base: int | None, candidate: int, questions: list[EvalQuestion]
    ) -> dict[str, Any]:
        k = self.settings.gate.eval_k
        prev = score(self.eval_search(name, k, base), questions, k) if base is not None else None
        return compare_scores(prev, score(self.eval_search(name, k, candidate), questions, k), questions, k)

    def eval_search(self, name: str, k: int, version: int | None = None) -> Callable[[str], list[Hit]]:
        """The search eval figures are taken with (gate, diff, `lore eval`): the configured retrieval,
        top `k`, bounded to `version` (default: the active one)."""
        kb = self.catalog.get_kb(name)
        retriever = self.retriever(kb)
        scoped = self.scoped(kb, self.search_options(k), version)
        return lambda q: retriever.search(q, scoped)
