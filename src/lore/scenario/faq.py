"""`faq.csv`: standard questions and answers, parsed row by row and indexed as `source_type="faq"` chunks.

Columns: `question`/`answer` or `问题`/`答案` (required); `source`, `tenant`, `dataset`, `visibility`,
`roles` (separated by `|` or `;`) optional. A malformed row is reported by line number and skipped;
the rest ingests.
"""

from __future__ import annotations

import csv
import io
import re
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path

from lore.errors import LoadError
from lore.ingest.loaders.encoding import read_text
from lore.lexical import CJK
from lore.scenario.config import Scenario, ScenarioError
from lore.schema import VISIBILITIES, Chunk
from lore.text.units import stable_id

_COLUMNS = {
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
}
_CJK_SPACE = re.compile(rf"(?<=[{CJK}]) | (?=[{CJK}])")


def normalise(text: str) -> str:
    """The exact-match key: NFKC width folding, case folding, punctuation dropped, whitespace collapsed."""
    text = unicodedata.normalize("NFKC", text).casefold()
    text = "".join(" " if unicodedata.category(ch)[0] in "PSZC" else ch for ch in text)
    return _CJK_SPACE.sub("", " ".join(text.split()))


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

    def to_json(self) -> dict:
        return {"file": f"{self.file}:{self.line}", "status": "faq_row", "reason": self.reason}


def read_faq(path: Path, scenario: Scenario) -> tuple[list[FaqRow], list[FaqProblem]]:
    """Valid rows and the problems of the others; a file without the required columns is an error."""
    text = _read_text(path)
    reader = csv.reader(io.StringIO(text))
    header = next(reader, None)
    if not header:
        raise ScenarioError(f"{path}: empty FAQ file (expected a header with question,answer or 问题,答案)")
    names = [_COLUMNS.get(h.strip().lower()) for h in header]
    unknown = [h for h, n in zip(header, names, strict=True) if n is None and h.strip()]
    if "question" not in names or "answer" not in names or unknown:
        raise ScenarioError(
            f"{path}: header {header!r}: needs question,answer (or 问题,答案) columns; "
            f"optional source, tenant, dataset, visibility, roles"
            + (f"; unknown columns: {', '.join(unknown)}" if unknown else "")
        )
    rows, problems = [], []
    seen: dict[tuple[str, str], tuple[int, str]] = {}
    line = reader.line_num
    for record in reader:
        start, line = line + 1, reader.line_num
        if not any(cell.strip() for cell in record):
            continue
        row, reason = _row(start, record, names, scenario)
        if row is not None:
            key = (row.tenant, normalise(row.question))
            if key in seen:
                first, answer = seen[key]
                row, reason = (
                    None,
                    (
                        f"duplicate question (same as line {first})"
                        if normalise(row.answer) == answer
                        else f"conflicting answer: line {first} answers the same question differently"
                    ),
                )
            else:
                seen[key] = (start, normalise(row.answer))
        if row is None:
            problems.append(FaqProblem(path.name, start, reason))
        else:
            rows.append(row)
    return rows, problems


def _row(line: int, record: list[str], names: list[str | None], sc: Scenario) -> tuple[FaqRow | None, str]:
    if len(record) != len(names):
        return None, f"{len(record)} columns, the header has {len(names)}"
    cells = {n: v.strip() for n, v in zip(names, record, strict=True) if n}
    if not cells.get("question"):
        return None, "empty question"
    if not cells.get("answer"):
        return None, "empty answer"
    if not normalise(cells["question"]):
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
        raise ScenarioError(f"{path}: {exc.reason}") from None


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
    chunks = []
    for i, r in enumerate(rows):
        key = normalise(r.question)
        chunk_id = stable_id(
            kb_id,
            file_name,
            "faq",
            r.tenant,
            r.dataset,
            key,
            r.answer,
            r.source,
            r.visibility,
            *r.roles,
            *([f"v{seq}"] if seq else []),
        )
        chunks.append(
            Chunk(
                chunk_id=chunk_id,
                text=r.question,
                parent_id=chunk_id,
                parent_text=r.answer,
                kb_id=kb_id,
                document_id="faq_" + stable_id(kb_id, r.tenant, key)[:16],
                file_path=file_name,
                file_sha256=file_sha256,
                chunk_index=i,
                chunk_schema=chunk_schema,
                embedding_model=embedding_model,
                source_type="faq",
                scenario_id=scenario_id,
                source=r.source,
                tenant_id=r.tenant,
                dataset_id=r.dataset,
                visibility=r.visibility,
                allowed_roles=list(r.roles),
                row=r.line,
                valid_from_seq=seq or 1,
                answer=r.answer,
            )
        )
    return chunks
