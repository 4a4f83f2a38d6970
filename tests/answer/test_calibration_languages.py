"""A KB's calibration chooses one refusal threshold per question language, and reads older records."""

from __future__ import annotations

import json
from pathlib import Path

from lore.answer.calibration import (
    FILE_NAME,
    MIN_LANGUAGE_QUESTIONS,
    calibrate,
    load,
    offtopic_pool,
    save,
)
from lore.answer.evidence import EvidenceModel, question_language

MODEL = EvidenceModel({"base": {"bias": 0.0}}, 0.27, {"zh": 0.35})
EN = [f"What does clause {i} of the travel policy say about hotel rates?" for i in range(10)]
ZH = [f"第{i}条规定的年休假有几天？" for i in range(12)]


def _score(answerable_en: float, answerable_zh: float) -> dict[str, float]:
    """P(answerable) per question: each language's answerable questions score alike; the off-topic pool
    scores 0.1 (English) and 0.5 (Chinese): the two languages separate at different places."""
    scores = {q: 0.1 if question_language(q) == "en" else 0.5 for q in offtopic_pool()}
    return scores | {q: answerable_en for q in EN} | {q: answerable_zh for q in ZH}


def test_each_language_with_enough_questions_gets_its_own_threshold() -> None:
    scores = _score(0.3, 0.8)
    questions = [(q, True) for q in EN + ZH]
    result = calibrate(scores.__getitem__, [], eval_questions=questions, model=MODEL)
    en, zh = result.languages["en"], result.languages["zh"]
    assert en.calibrated and zh.calibrated
    # the lowest threshold above each language's off-topic scores and at most its answerable ones
    assert en.threshold == 0.11 and zh.threshold == 0.51
    assert (en.answerable, zh.answerable) == (len(EN), len(ZH))
    assert en.false_refusal == zh.false_refusal == en.offtopic_answered == zh.offtopic_answered == 0.0
    assert result.threshold == zh.threshold  # the main language: most answerable questions are Chinese
    assert result.false_refusal == result.offtopic_answered == 0.0
    # one threshold for both could not have done it: 0.11 answers every Chinese off-topic question
    assert result.thresholds() == {"en": 0.11, "zh": 0.51}


def test_a_language_with_few_questions_keeps_the_model_default() -> None:
    scores = _score(0.3, 0.8)
    few = ZH[: MIN_LANGUAGE_QUESTIONS - 1]
    result = calibrate(scores.__getitem__, [], eval_questions=[(q, True) for q in EN + few], model=MODEL)
    zh = result.languages["zh"]
    assert not zh.calibrated and zh.threshold == zh.model_threshold == MODEL.language_threshold("zh")
    assert zh.answerable == len(few) and zh.false_refusal == 0.0  # 0.8 >= 0.35
    assert result.languages["en"].calibrated and result.threshold == result.languages["en"].threshold


def test_a_saved_calibration_reads_back_per_language(tmp_path: Path) -> None:
    scores = _score(0.3, 0.8)
    result = calibrate(scores.__getitem__, [], eval_questions=[(q, True) for q in EN + ZH], model=MODEL)
    save(result, tmp_path)
    back = load(tmp_path)
    assert back == result and back.threshold_for("en") == 0.11 and back.threshold_for("zh") == 0.51


def test_an_old_single_threshold_record_applies_to_every_language(tmp_path: Path) -> None:
    old = {
        "threshold": 0.22,
        "model_threshold": 0.27,
        "false_refusal": 0.05,
        "offtopic_answered": 0.02,
        "answerable": 30,
        "offtopic": 116,
        "source": "eval set",
        "version": 3,
        "created": "2026-12-01T10:00:00+00:00",
    }
    (tmp_path / FILE_NAME).write_text(json.dumps(old), encoding="utf-8")
    stored = load(tmp_path)
    assert stored is not None and stored.languages == {} and stored.version == 3
    assert stored.thresholds() == {"en": 0.22, "zh": 0.22}
    assert stored.threshold_for("zh") == stored.threshold_for("en") == 0.22
