"""`lore scenario build`: a scenario's FAQ and documents into its knowledge base, as a versioned build.

Documents come from `data/<source>/…` and carry the source's metadata (tenant, dataset, visibility,
roles, falling back to the scenario defaults); `faq.csv` rows become FAQ chunks with their own
metadata. Malformed FAQ rows are listed in the version's quality report; the rest ingests.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lore.ingest.files import SourceFile
from lore.ingest.pipeline import Progress
from lore.scenario.config import Scenario, ScenarioError
from lore.scenario.faq import FaqProblem, FaqRow, faq_chunks, read_faq
from lore.schema import Chunk

if TYPE_CHECKING:
    from lore.engine import Lore
    from lore.ingest.build import BuildResult

FAQ_FILE = "faq.csv"


@dataclass
class ScenarioBuild:
    """The build result plus the FAQ rows indexed and the rows skipped."""

    result: BuildResult
    faq_rows: int
    faq_problems: list[FaqProblem] = field(default_factory=list)
    metadata_changed: bool = False  # the scenario's chunk metadata changed: every file was re-read


def metadata_fingerprint(scenario: Scenario) -> str:
    """A digest of everything in scenario.toml that ends up in chunk metadata."""
    sources = [(s.id, s.tenant, s.dataset, s.visibility, s.roles) for s in scenario.sources]
    raw = json.dumps(
        [scenario.id, scenario.defaults.model_dump(), sources, scenario.access.model_dump()],
        sort_keys=True,
        default=str,
    )
    return hashlib.sha256(raw.encode()).hexdigest()


def document_metadata(scenario: Scenario, file_name: str) -> dict[str, Any]:
    """Chunk fields for a document catalogued as `data/<source>/…` (unknown source folder -> error)."""
    parts = file_name.split("/")
    source = parts[1] if len(parts) >= 3 and parts[0] == "data" else "general"
    return {"scenario_id": scenario.id, "source": source, **scenario.source_metadata(source)}


def check_sources(scenario: Scenario) -> None:
    """Every folder under `data/` must be a declared source (before any work is done)."""
    if not scenario.data_dir.is_dir():
        return
    for folder in sorted(p for p in scenario.data_dir.iterdir() if p.is_dir() and not p.name.startswith(".")):
        try:
            scenario.source(folder.name)
        except ScenarioError as exc:
            raise ScenarioError(f"{folder}: {exc}") from None


def build_scenario(
    lore: Lore,
    scenario: Scenario,
    *,
    description: str = "",
    activate: bool = False,
    quality_gate: bool = False,
    force: bool = False,
    progress: Progress | None = None,
    files: list[SourceFile] | None = None,
) -> ScenarioBuild:
    """Create the scenario's KB if needed, build a STAGED version from FAQ + documents, maybe activate."""
    check_sources(scenario)
    inputs = scenario_inputs(scenario)
    if not inputs:
        raise ScenarioError(f"{scenario.folder}: nothing to build (no faq.csv and no data/ folder)")
    rows: list[FaqRow] = []
    problems: list[FaqProblem] = []
    if scenario.faq_path.exists():
        rows, problems = read_faq(scenario.faq_path, scenario)
    if scenario.kb_name not in {k.name for k in lore.catalog.list_kbs()}:
        lore.create_kb(
            scenario.kb_name,
            f"scenario {scenario.id}: {scenario.name}",
            owner_tenant=scenario.defaults.tenant,
        )
    kb = lore.catalog.get_kb(scenario.kb_name)
    if kb.owner_tenant is None:  # from before 0005 and empty: the scenario's tenant, as for a new one
        lore.catalog.set_kb_owner(kb.id, scenario.defaults.tenant)
    for tenant in scenario.tenants:  # the tenants the scenario's data is written for read its KB
        lore.catalog.share_kb(kb.id, tenant)
    # Reused files keep the metadata they were indexed with, so a metadata change re-reads them all.
    stamp = f"scenarios/{scenario.id}.json"  # in the shared storage
    fingerprint = metadata_fingerprint(scenario)
    stored = lore.storage.read_bytes(stamp)
    previous = json.loads(stored).get("fingerprint") if stored is not None else None
    changed = previous is not None and previous != fingerprint

    def custom(source: SourceFile, sha256: str, seq: int | None) -> list[Chunk] | None:
        if source.name != FAQ_FILE:
            return None
        return faq_chunks(
            rows,
            scenario_id=scenario.id,
            kb_id=kb.id,
            file_name=source.name,
            file_sha256=sha256,
            embedding_model=lore.embedder(kb).model_id,
            chunk_schema=lore.kb_chunk_params(kb).schema,
            seq=seq,
        )

    result = lore.build(
        scenario.kb_name,
        inputs,
        description=description or f"scenario {scenario.id}",
        activate=activate,
        quality_gate=quality_gate,
        force=force or changed,
        progress=progress,
        files=files,
        chunk_metadata=lambda f: document_metadata(scenario, f.name),
        custom_chunks=custom,
        extra_quality={
            "faq": {
                "rows": len(rows),
                "skipped": len(problems),
                "conflicts": sum(p.reason.startswith("conflicting answer") for p in problems),
            },
            "problems": [p.to_json() for p in problems],
        },
    )
    lore.storage.write_bytes(
        stamp, json.dumps({"fingerprint": fingerprint, "seq": result.version.seq}).encode()
    )
    return ScenarioBuild(result, len(rows), problems, changed)


def scenario_inputs(scenario: Scenario) -> list[Path]:
    """What a build reads: the `data/` folder and `faq.csv`, where they exist."""
    return [p for p in (scenario.data_dir, scenario.faq_path) if p.exists()]
