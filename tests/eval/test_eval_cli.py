"""`lore eval` on the sample handbook: retrieval and answer figures, Markdown/JSON output, and thresholds
that turn the exit code into a CI failure."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from lore.cli.main import app
from tests.conftest import EXAMPLES

runner = CliRunner()
QUESTIONS = [
    {
        "question": "How many days per week can I work remotely?",
        "files": ["handbook/employee_handbook.md"],
        "contains": ["2 days"],
    },
    {"question": "What is the refund window?", "files": ["handbook/faq.csv"], "contains": ["30 days"]},
    {"question": "一线城市出差住宿每晚最多多少钱？", "files": ["handbook/travel_policy.docx"]},
    {"question": "How do I book the company yacht?", "files": ["handbook/yacht.md"]},  # not in the KB
    {"question": "Who won the 1998 World Cup?", "refuse": True},
]


@pytest.fixture()
def kb(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    monkeypatch.setenv("LORE_HOME", str(tmp_path / "home"))
    docs = tmp_path / "handbook"
    docs.mkdir()
    for name in ("employee_handbook.md", "faq.csv", "travel_policy.docx"):
        shutil.copy(EXAMPLES / name, docs / name)
    assert runner.invoke(app, ["kb", "create", "hb"]).exit_code == 0
    assert runner.invoke(app, ["ingest", str(docs), "--kb", "hb"]).exit_code == 0
    evals = tmp_path / "eval.jsonl"
    evals.write_text("\n".join(json.dumps(q, ensure_ascii=False) for q in QUESTIONS) + "\n", encoding="utf-8")
    return evals


def test_retrieval_and_answer_figures(kb: Path) -> None:
    result = runner.invoke(app, ["eval", "--kb", "hb", "--set", str(kb), "--answers", "--json"])
    assert result.exit_code == 0, result.output
    out = json.loads(result.output)
    r, a = out["retrieval"], out["answers"]
    assert (out["k"], out["questions"], r["questions"]) == (5, 5, 4)
    assert r["recall"] == pytest.approx(0.75) and r["missed"] == ["How do I book the company yacht?"]
    assert 0.5 <= r["mrr"] <= 0.75 and 0.5 <= r["ndcg"] <= 0.75
    assert r["latency_ms"]["p95"] >= r["latency_ms"]["p50"] > 0
    assert a["off_topic"] == 1 and a["refusal"] == 1.0  # the World Cup question is refused
    assert a["answerable"] == 4 and a["contains"] == 1.0  # both answers hold their phrases
    assert a["cited"] >= 0.5 and a["cites_expected_file"] >= 0.5
    assert out["thresholds"] == {"set": {}, "failed": []}


def test_thresholds_fail_the_exit_code_and_markdown_names_them(kb: Path) -> None:
    ok = runner.invoke(app, ["eval", "--kb", "hb", "--set", str(kb), "--min-recall", "0.7", "--markdown"])
    assert ok.exit_code == 0, ok.output
    assert "| Recall@5 | 0.750 |" in ok.output and "Thresholds: **passed**" in ok.output
    assert "- How do I book the company yacht?" in ok.output  # listed under "not found"

    bad = runner.invoke(
        app,
        [
            "eval",
            "--kb",
            "hb",
            "--set",
            str(kb),
            "-k",
            "1",
            "--min-recall",
            "0.9",
            "--min-refusal",
            "0.5",
            "--markdown",
        ],
    )
    assert bad.exit_code == 1, bad.output
    assert "Recall@1 is 0." in bad.output and "below the minimum 0.900" in bad.output
    assert "off-topic questions refused: not measured" in bad.output  # --answers was not given


def test_bad_eval_sets_and_kbs_are_clear_errors(kb: Path, tmp_path: Path) -> None:
    broken = tmp_path / "broken.jsonl"
    broken.write_text('{"question": "no target"}\n', encoding="utf-8")
    result = runner.invoke(app, ["eval", "--kb", "hb", "--set", str(broken)])
    assert result.exit_code == 2 and '"refuse": true' in result.output
    result = runner.invoke(app, ["eval", "--kb", "nope", "--set", str(kb)])
    assert result.exit_code == 2 and "nope" in result.output
