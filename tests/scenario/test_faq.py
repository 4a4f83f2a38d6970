"""faq.csv parsing: columns in English or Chinese, malformed rows reported by line, normalisation."""

from __future__ import annotations

from pathlib import Path

import pytest

from lore.scenario.config import Scenario, ScenarioError, Scenarios
from lore.scenario.faq import faq_chunks, read_faq
from lore.text.normalise import normalise
from tests.scenario.conftest import SAMPLE


@pytest.fixture(scope="module")
def hr() -> Scenario:
    return Scenarios(SAMPLE).get("hr")


def test_normalise_folds_width_case_punctuation_and_whitespace() -> None:
    assert (
        normalise("如何申请年假？", match_key=True)
        == normalise("如何 申请 年假?", match_key=True)
        == normalise("如何申请年假", match_key=True)
    )
    assert normalise("ＨＲ系统怎么用！", match_key=True) == normalise("hr系统怎么用", match_key=True)
    assert normalise("How do I submit an expense claim?", match_key=True) == normalise(
        "  how do i SUBMIT an expense-claim ", match_key=True
    )
    assert normalise("a b", match_key=True) != normalise("ab", match_key=True)  # Latin word breaks are kept


def test_sample_faq_rows_and_problems_by_line(hr: Scenario) -> None:
    rows, problems = read_faq(hr.faq_path, hr)
    assert len(rows) == 9
    assert [(p.line, p.reason.split(":")[0]) for p in problems] == [
        (11, "empty question"),
        (12, "empty answer"),
        (13, "source"),
    ]
    assert "holidays" in problems[2].reason and problems[0].to_json()["file"] == "faq.csv:11"
    hk = next(r for r in rows if r.tenant == "bluefin-hk")
    assert hk.dataset == "hr-faq" and hk.source == "leave"
    pay = next(r for r in rows if r.source == "compensation")
    assert pay.roles == ["manager", "hr"] and pay.dataset == "hr-pay"
    assert all(r.visibility == "internal" for r in rows)


def test_english_columns_duplicates_bad_values_and_quoted_newlines(tmp_path: Path, hr: Scenario) -> None:
    f = tmp_path / "faq.csv"
    f.write_text(
        "question,answer,tenant,roles,visibility\n"
        'What is the wifi password?,"Ask IT.\nIt changes monthly.",,,\n'
        "what is the WIFI password,Duplicate,,,\n"
        'WHAT is the wifi password?,"Ask IT. It changes monthly.",,,\n'
        "Who approves?,Managers.,acme,,\n"
        "Who signs?,Directors.,,admin,\n"
        "Who pays?,Finance.,,,secret\n"
        "Too,many,,,,,\n",
        encoding="utf-8",
    )
    rows, problems = read_faq(f, hr)
    assert [r.question for r in rows] == ["What is the wifi password?"]
    assert rows[0].answer == "Ask IT.\nIt changes monthly."
    assert [(p.line, p.reason) for p in problems] == [
        (4, "conflicting answer: line 2 answers the same question differently"),
        (5, "duplicate question (same as line 2)"),
        (6, "tenant: 'acme' not in the scenario's access.tenants"),
        (7, "roles: admin not in the scenario's access.roles"),
        (8, "visibility: 'secret' is not public, internal or restricted"),
        (9, "7 columns, the header has 5"),
    ]


def test_empty_cells_take_the_sources_metadata_like_its_documents(tmp_path: Path, hr: Scenario) -> None:
    f = tmp_path / "faq.csv"
    f.write_text(
        "question,answer,source,dataset,roles\n"
        "When do pay raises apply?,On 1 April.,compensation,,\n"
        "How many leave days?,Fifteen.,leave,,\n"
        "Who reads the bonus plan?,HR only.,compensation,,hr\n",
        encoding="utf-8",
    )
    pay, leave, bonus = read_faq(f, hr)[0]
    pay_docs = hr.source_metadata("compensation")
    assert (
        (pay.dataset, pay.roles)
        == (pay_docs["dataset_id"], pay_docs["allowed_roles"])
        == ("hr-pay", ["manager", "hr"])
    )
    assert (leave.dataset, leave.roles) == ("hr-policies", [])  # no overrides on the source: the defaults
    assert (bonus.dataset, bonus.roles) == ("hr-pay", ["hr"])  # a filled cell wins


def test_header_errors_name_the_file(tmp_path: Path, hr: Scenario) -> None:
    f = tmp_path / "faq.csv"
    f.write_text("q,a\nx,y\n", encoding="utf-8")
    with pytest.raises(ScenarioError, match=r"faq.csv: header .*question,answer"):
        read_faq(f, hr)
    f.write_text("", encoding="utf-8")
    with pytest.raises(ScenarioError, match="empty FAQ file"):
        read_faq(f, hr)
    f.write_text("问题,答案,colour\nx,y,z\n", encoding="utf-8")
    with pytest.raises(ScenarioError, match="unknown columns: colour"):
        read_faq(f, hr)


def _chunks(rows: list) -> list:
    return faq_chunks(
        rows,
        scenario_id="hr",
        kb_id="k",
        file_name="faq.csv",
        file_sha256="0" * 64,
        embedding_model="m",
        chunk_schema="s",
        seq=3,
    )


def test_gb18030_file_and_chunks(tmp_path: Path, hr: Scenario) -> None:
    f = tmp_path / "faq.csv"
    f.write_bytes("问题,答案\n年假有几天？,十天。\n".encode("gb18030"))
    rows, problems = read_faq(f, hr)
    assert not problems and rows[0].question == "年假有几天？"
    chunks = _chunks(rows)
    c = chunks[0]
    assert (c.source_type, c.text, c.answer, c.parent_text, c.row) == (
        "faq",
        "年假有几天？",
        "十天。",
        "十天。",
        2,
    )
    assert (c.tenant_id, c.dataset_id, c.scenario_id, c.valid_from_seq) == ("bluefin", "hr-policies", "hr", 3)
    again = _chunks(rows)
    assert again[0].chunk_id == c.chunk_id  # stable ids: a re-run is idempotent


def test_the_quality_gate_refuses_conflicting_faq_answers(tmp_path: Path) -> None:
    from lore.scenario.build import build_scenario
    from lore.scenario.config import Scenarios
    from tests.scenario.conftest import copy_scenarios, scenario_lore

    scenarios = copy_scenarios(tmp_path / "scenarios")
    faq = scenarios / "hr" / "faq.csv"
    clean = [
        line
        for line in faq.read_text(encoding="utf-8").splitlines()
        if not line.startswith((",", "How long"))
    ]
    clean = [line for line in clean if "holidays" not in line]
    faq.write_text("\n".join(clean) + "\n", encoding="utf-8")
    lore = scenario_lore(tmp_path / "home", scenarios)
    first = build_scenario(lore, Scenarios(scenarios).get("hr"), activate=True, quality_gate=True)
    assert first.result.version.status.value == "active" and not first.faq_problems
    faq.write_text("\n".join([*clean, "年假有几天?,每年 20 天。,leave,,hr-faq,"]) + "\n", encoding="utf-8")
    second = build_scenario(lore, Scenarios(scenarios).get("hr"), activate=True, quality_gate=True)
    assert second.result.version.status.value == "failed"
    assert any("conflicting answers" in r for r in second.result.gate_reasons)
    assert second.result.quality["faq"] == {"rows": len(clean) - 1, "skipped": 1, "conflicts": 1}
    kb_id = lore.catalog.get_kb("hr").id
    assert lore.catalog.active_version(kb_id).seq == first.result.version.seq
    lore.close()
