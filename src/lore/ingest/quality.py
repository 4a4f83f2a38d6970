"""The quality report of a build and the gate that decides whether it may be activated."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

from lore.config import GateSettings
from lore.ingest.pipeline import IngestReport

_UTF8 = {"utf_8", "utf-8", "ascii", "utf_8_sig", "utf-8-sig"}


def quality_report(report: IngestReport, removed: list[str], gate: GateSettings) -> dict[str, Any]:
    """Counts a reviewer needs before a version goes live; sizes are in chunking's text units."""
    files = report.files
    status = Counter(f.status for f in files)
    units = [u for f in files for u in f.chunk_units]
    hashes = Counter(h for f in files for h in f.chunk_hashes)
    per_source: Counter[str] = Counter()
    for f in files:
        per_source[f.name.split("/", 1)[0] if "/" in f.name else "."] += f.chunks
    return {
        "files": {
            "scanned": len(files),
            "loaded": status["ingested"],
            "reused": status["skipped"],
            "unsupported": status["unsupported"],
            "failed": status["failed"] + status["too_large"],
            "empty": status["empty"],
            "removed": len(removed),
        },
        "problems": [{"file": f.name, "status": f.status, "reason": f.error} for f in files if f.error],
        "per_file": [
            {
                "file": f.name,
                "status": f.status,
                "chunks": f.chunks,
                "ocr_pages": f.ocr_pages,
                "reason": f.error,
            }
            for f in files
        ],
        "ocr": {"files": sum(f.ocr_pages > 0 for f in files), "pages": sum(f.ocr_pages for f in files)},
        "chunks": {
            "new": len(units),
            "reused": sum(f.chunks for f in files if f.status == "skipped"),
            "too_short": sum(u < gate.min_chunk_units for u in units),
            "too_long": sum(u > gate.max_chunk_units for u in units),
            "duplicates": sum(n - 1 for n in hashes.values() if n > 1),
            "per_source": dict(per_source),
        },
        "tables": {"files": sum(f.table_rows > 0 for f in files), "rows": sum(f.table_rows for f in files)},
        "encoding_repairs": [
            {"file": f.name, "encoding": f.encoding}
            for f in files
            if f.encoding and f.encoding.lower().replace("-", "_") not in _UTF8
        ],
    }


def evaluate_gate(q: dict[str, Any], gate: GateSettings) -> tuple[bool, list[str]]:
    """(passed, reasons it failed) against the configured thresholds."""
    reasons = []
    tried = q["files"]["loaded"] + q["files"]["failed"] + q["files"]["empty"]
    if tried and q["files"]["failed"] / tried > gate.max_failed_ratio:
        reasons.append(f"{q['files']['failed']} of {tried} files failed (limit {gate.max_failed_ratio:.0%})")
    indexed = q["files"]["loaded"] + q["files"]["reused"] + q["files"].get("kept", 0)
    if indexed < gate.min_files:
        reasons.append(f"only {indexed} files indexed (minimum {gate.min_files})")
    if unasked := q.get("removed_unasked"):
        names = ", ".join(unasked[:10]) + (f" and {len(unasked) - 10} more" if len(unasked) > 10 else "")
        reasons.append(
            f"{len(unasked)} file(s) would be removed without being asked: {names}; name them to remove "
            "them (API `remove`; CLI `--remove-missing`), or build from all of the knowledge base's files"
        )
    new = q["chunks"]["new"]
    if new and q["chunks"]["duplicates"] / new > gate.max_duplicate_ratio:
        reasons.append(
            f"{q['chunks']['duplicates']} of {new} new chunks are duplicates "
            f"(limit {gate.max_duplicate_ratio:.0%})"
        )
    if new and q["chunks"]["too_short"] / new > gate.max_short_ratio:
        reasons.append(
            f"{q['chunks']['too_short']} of {new} new chunks are shorter than "
            f"{gate.min_chunk_units} units (limit {gate.max_short_ratio:.0%})"
        )
    faq = q.get("faq")
    if faq:
        total = faq["rows"] + faq["skipped"]
        if total and faq["skipped"] / total > gate.max_faq_problem_ratio:
            reasons.append(
                f"{faq['skipped']} of {total} FAQ rows are malformed, empty or duplicated "
                f"(limit {gate.max_faq_problem_ratio:.0%})"
            )
        if faq.get("conflicts", 0) > gate.max_faq_conflicts:
            reasons.append(
                f"{faq['conflicts']} FAQ questions have conflicting answers (limit {gate.max_faq_conflicts})"
            )
    comparison = q.get("comparison") or {}
    unreviewed = q.get("ocr", {}).get("unreviewed_pages", 0)
    if gate.max_unreviewed_ocr_pages is not None and unreviewed > gate.max_unreviewed_ocr_pages:
        reasons.append(
            f"{unreviewed} OCR'd pages are not reviewed (limit {gate.max_unreviewed_ocr_pages}): review them "
            "in the console's chunks view"
        )
    if gate.no_worse_than_active and comparison.get("base"):
        base, cand = comparison["base"]["recall"], comparison["candidate"]["recall"]
        if cand < base - gate.max_recall_drop:
            reasons.append(
                f"Recall@{comparison['k']} on the eval set fell from {base:.3f} (active) to {cand:.3f} "
                f"(allowed drop {gate.max_recall_drop:.3f})"
            )
    return not reasons, reasons


def write_report(folder: Path, q: dict[str, Any]) -> None:
    """Write `quality.json` and `quality.md` into `folder`."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "quality.json").write_text(json.dumps(q, ensure_ascii=False, indent=2), encoding="utf-8")
    lines = [f"# Quality report — version {q.get('seq', '?')}", ""]
    gate = q.get("gate", {})
    if gate:
        lines += [
            f"Gate: **{'passed' if gate['passed'] else 'FAILED'}**",
            *[f"- {r}" for r in gate["reasons"]],
            "",
        ]
    for section in ("files", "ocr", "chunks", "tables", "faq"):
        if section not in q:
            continue
        lines.append(f"## {section}")
        lines += [f"- {k}: {v}" for k, v in q[section].items()]
        lines.append("")
    if q["problems"]:
        lines += [
            "## problems",
            *[f"- `{p['file']}` ({p['status']}): {p['reason']}" for p in q["problems"]],
            "",
        ]
    if q.get("reindexed"):
        lines += [
            "## re-indexed unchanged files",
            *[f"- `{r['file']}`: {r['why']}" for r in q["reindexed"]],
            "",
        ]
    if q.get("comparison"):
        c = q["comparison"]
        base = c["base"] or {"recall": float("nan"), "mrr": float("nan"), "ndcg": float("nan")}
        lines += [
            f"## eval set ({c['questions']} questions, k={c['k']})",
            "| | active | candidate |",
            "|---|---|---|",
            f"| Recall@{c['k']} | {base['recall']:.3f} | {c['candidate']['recall']:.3f} |",
            f"| MRR@{c['k']} | {base['mrr']:.3f} | {c['candidate']['mrr']:.3f} |",
            f"| nDCG@{c['k']} | {base.get('ndcg', float('nan')):.3f} | "
            f"{c['candidate'].get('ndcg', float('nan')):.3f} |",
            "",
        ]
    if q["encoding_repairs"]:
        lines += [
            "## encoding repairs",
            *[f"- `{e['file']}`: read as {e['encoding']}" for e in q["encoding_repairs"]],
        ]
    (folder / "quality.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
