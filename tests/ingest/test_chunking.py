"""Parent/child chunking with CJK punctuation; table rows stay whole with their headers."""

from lore.ingest.chunking import Chunker, ChunkParams
from lore.schema import Section
from lore.text.units import stable_id, text_units


def test_text_units_count_cjk_as_one_and_latin_as_a_third() -> None:
    assert text_units("报销材料") == 4
    assert text_units("abcdef") == 2


def test_children_fit_their_size_and_split_at_sentence_ends() -> None:
    text = "".join(f"第{i}条：员工报销须在三十天内提交发票原件和审批单。" for i in range(60))
    pieces = list(
        Chunker(ChunkParams(child_size=80, child_overlap=10, parent_size=400)).split([Section(text)])
    )
    assert len(pieces) > 10
    assert all(text_units(p.text) <= 80 for p in pieces)
    assert all(p.text.endswith("。") for p in pieces[:-1])  # CJK full stop kept at the end
    assert all(p.text in p.parent_text for p in pieces)
    assert len({p.parent_key for p in pieces}) > 1


def test_short_section_is_one_child_equal_to_its_parent() -> None:
    section = Section("Refunds within 30 days.", heading_path=["Returns"], page=2)
    [piece] = list(Chunker(ChunkParams()).split([section]))
    assert piece.text == piece.parent_text == "Refunds within 30 days."
    assert piece.section.page == 2


def test_table_row_is_never_split_from_its_headers() -> None:
    row = Section(
        "SKU: RB-200; Model: LF-200 Picker; 保修期 (months): 24",
        sheet="Robots",
        row=3,
        kind="table_row",
        header="SKU | Model | 保修期 (months)",
    )
    [piece] = list(Chunker(ChunkParams(child_size=50)).split([row]))
    assert piece.text == row.text


def test_very_long_row_pieces_keep_where_they_came_from() -> None:
    row = Section("detail: " + "很长的描述。" * 400, sheet="Issues", row=7, kind="table_row")
    pieces = list(Chunker(ChunkParams(parent_size=300)).split([row]))
    assert len(pieces) > 1 and all(p.text.startswith("[Issues row 7] ") for p in pieces)


def test_stable_ids_are_deterministic() -> None:
    assert stable_id("kb", "a.md", 1) == stable_id("kb", "a.md", 1) != stable_id("kb", "a.md", 2)
    assert len(stable_id("x")) == 32
