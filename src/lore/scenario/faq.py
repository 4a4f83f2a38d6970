"""`faq.csv`: standard questions and answers, parsed row by row and indexed as `source_type="faq"` chunks.

Columns: `question`/`answer` or `问题`/`答案` (required); `source`, `tenant`, `dataset`, `visibility`,
`roles` (separated by `|` or `;`) and `disabled` (yes/true/1: kept in the file, not indexed) optional.
A malformed row is reported by line number and skipped; the rest ingests.
"""

from __future__ import annotations

import csv
import io
import re
from dataclasses import dataclass, field
from pathlib import Path

from lore.errors import LoadError
from lore.ingest.chunk_factory import ChunkSource, faq_chunk
from lore.ingest.loaders.encoding import read_text
from lore.scenario.config import Scenario, ScenarioError
from lore.schema import VISIBILITIES, Chunk
from lore.text.normalise import normalise

COLUMNS = {
    "question": "question",
    "问题": "question",
    "answer": "answer",
    "答案": "answer",
    "source": "source",
    "来源": "source",
    "tenant": "tenant",
    "租户": "tenant",
    "dataset": "dataset",
    "数据集": "dataset",
    "visibility": "visibility",
    "可见范围": "visibility",
    "roles": "roles",
    "角色": "roles",
    "disabled": "disabled",
    "停用": "disabled",
}
_YES = {"1", "yes", "y", "true", "是", "停用"}
# A cell a spreadsheet would run as a formula (OWASP CSV injection); written with a leading "'".
FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def escape_cell(value: str) -> str:
    """`value` as written to faq.csv: a leading `'` when a spreadsheet would read it as a formula."""
    return "'" + value if value.startswith(FORMULA_START) else value


def unescape_cell(value: str) -> str:
    """A cell of faq.csv as its text: `escape_cell` undone, surrounding spaces removed."""
    value = value.strip()
    return value[1:] if value.startswith("'") and value[1:].startswith(FORMULA_START) else value


@dataclass
class FaqRow:
    """One valid FAQ entry with its metadata resolved against the scenario defaults."""

    line: int
    question: str
    answer: str
    source: str
    tenant: str
    dataset: str
    visibility: str
    roles: list[str] = field(default_factory=list)


@dataclass
class FaqProblem:
    """A skipped row: where it is and why."""

    file: str
    line: int
    reason: str

    def to_json(self) -> dict[str, str]:
        return {"file": f"{self.file}:{self.line}", "status": "faq_row", "reason": self.reason}


@dataclass
class FaqEntry:
    """One record of the file as it stands: its cells by column, and whether it is indexed.

    `status`: ok | duplicate | conflict | invalid | disabled; `row` is the resolved row (None if invalid);
    `clash` lists the lines of the same question (the earlier one is indexed, the later one skipped)."""

    index: int  # position among the file's records (0-based), the handle edits name
    line: int
    cells: dict[str, str]
    status: str
    reason: str = ""
    row: FaqRow | None = None
    clash: list[int] = field(default_factory=list)


def faq_table(path: Path, scenario: Scenario) -> tuple[list[str], list[list[str]], list[FaqEntry]]:
    """(header, raw records, entries): every record with its status; a file without the required columns
    is an error."""
    return parse_faq(_read_text(path), scenario, path)


def parse_faq(text: str, scenario: Scenario, path: Path) -> tuple[list[str], list[list[str]], list[FaqEntry]]:
    """`faq_table` of CSV text (`path` names it in errors)."""
    reader = csv.reader(io.StringIO(text))
    header = next(reader, None)
    if not header:
        raise ScenarioError(
            f"{path.name}: empty FAQ file (expected a header with question,answer or 问题,答案)"
        )
    names = [COLUMNS.get(h.strip().lower()) for h in header]
    unknown = [h for h, n in zip(header, names, strict=True) if n is None and h.strip()]
    if "question" not in names or "answer" not in names or unknown:
        raise ScenarioError(
            f"{path.name}: header {header!r}: needs question,answer (or 问题,答案) columns; "
            f"optional source, tenant, dataset, visibility, roles, disabled"
            + (f"; unknown columns: {', '.join(unknown)}" if unknown else "")
        )
    records: list[list[str]] = []
    entries: list[FaqEntry] = []
    seen: dict[tuple[str, str], FaqEntry] = {}
    line = reader.line_num
    for record in reader:
        start, line = line + 1, reader.line_num
        records.append(record)
        cells = {n: unescape_cell(v) for n, v in zip(names, record, strict=False) if n}
        entry = FaqEntry(len(records) - 1, start, cells, "invalid")
        entries.append(entry)
        if not any(cell.strip() for cell in record):
            entry.status, entry.reason = "blank", "blank line"
            continue
        entry.row, entry.reason = _row(start, record, names, scenario)
        if cells.get("disabled", "").lower() in _YES:  # resolved all the same: who may see it
            entry.status, entry.reason = "disabled", "disabled"
            continue
        if entry.row is None:
            continue
        key = (entry.row.tenant, normalise(entry.row.question, match_key=True))
        first = seen.get(key)
        if first is None:
            seen[key], entry.status = entry, "ok"
            continue
        same = normalise(entry.row.answer, match_key=True) == normalise(
            first.row.answer if first.row else "", match_key=True
        )
        entry.status = "duplicate" if same else "conflict"
        entry.reason = (
            f"duplicate question (same as line {first.line})"
            if same
            else f"conflicting answer: line {first.line} answers the same question differently"
        )
        entry.clash.append(first.line)
        first.clash.append(start)
    return header, records, entries


def read_faq(path: Path, scenario: Scenario) -> tuple[list[FaqRow], list[FaqProblem]]:
    """Valid rows and the problems of the others (disabled and blank rows are neither); a file without
    the required columns is an error."""
    _, _, entries = faq_table(path, scenario)
    rows = [e.row for e in entries if e.status == "ok" and e.row is not None]
    problems = [
        FaqProblem(path.name, e.line, e.reason)
        for e in entries
        if e.status in ("invalid", "duplicate", "conflict")
    ]
    return rows, problems


def _row(line: int, record: list[str], names: list[str | None], sc: Scenario) -> tuple[FaqRow | None, str]:
    if len(record) != len(names):
        return None, f"{len(record)} columns, the header has {len(names)}"
    cells = {n: unescape_cell(v) for n, v in zip(names, record, strict=True) if n}
    if not cells.get("question"):
        return None, "empty question"
    if not cells.get("answer"):
        return None, "empty answer"
    if not normalise(cells["question"], match_key=True):
        return None, "the question has no words"
    source = cells.get("source") or "general"
    if cells.get("source") and source not in {s.id for s in sc.sources}:
        return None, f"source: unknown {source!r} (valid: {', '.join(s.id for s in sc.sources)})"
    base = sc.source_metadata(source)  # a cell left empty takes the source's value, as its documents do
    tenant = cells.get("tenant") or base["tenant_id"]
    if sc.access.tenants and tenant not in sc.access.tenants:
        return None, f"tenant: {tenant!r} not in the scenario's access.tenants"
    dataset = cells.get("dataset") or base["dataset_id"]
    if sc.access.datasets and dataset not in sc.access.datasets:
        return None, f"dataset: {dataset!r} not in the scenario's access.datasets"
    visibility = cells.get("visibility") or base["visibility"]
    if visibility not in VISIBILITIES:
        return None, f"visibility: {visibility!r} is not public, internal or restricted"
    roles = (
        [r.strip() for r in re.split(r"[|;]", cells["roles"]) if r.strip()]
        if cells.get("roles")
        else base["allowed_roles"]
    )
    if sc.access.roles and (bad := [r for r in roles if r not in sc.access.roles]):
        return None, f"roles: {', '.join(bad)} not in the scenario's access.roles"
    return FaqRow(line, cells["question"], cells["answer"], source, tenant, dataset, visibility, roles), ""


def _read_text(path: Path) -> str:
    try:
        return read_text(path)[0]  # the loaders' decoding: BOMs, GB18030, detection
    except LoadError as exc:
        raise ScenarioError(f"{path.name}: {exc.reason}") from None


def faq_chunks(
    rows: list[FaqRow],
    *,
    scenario_id: str,
    kb_id: str,
    file_name: str,
    file_sha256: str,
    embedding_model: str,
    chunk_schema: str,
    seq: int | None,
) -> list[Chunk]:
    """One chunk per row: the question is what is searched; the answer is the passage a generator or
    a citation shows (`parent_text`) and the direct answer (`answer`)."""
    src = ChunkSource(kb_id, file_name, file_sha256, chunk_schema, embedding_model, seq)
    return [
        faq_chunk(
            src,
            i,
            r.question,
            r.answer,
            tenant_id=r.tenant,
            dataset_id=r.dataset,
            source=r.source,
            visibility=r.visibility,
            allowed_roles=r.roles,
            scenario_id=scenario_id,
            row=r.line,
        )
        for i, r in enumerate(rows)
    ]
