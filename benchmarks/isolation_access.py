"""Shared-KB and scenario cases of the isolation benchmark, through the real HTTP app (in process).

Shared KB: one KB owned by tenant acme and shared with globex; both tenants' documents use the same
vocabulary and their JSONL records the same `_id`s. Random keys of both tenants (employee, manager, admin,
dataset-limited) search it; a hit is a leak when its chunk fails the caller's grant (checked on the chunk,
independently of the store filter); every key also tries to download every original. Baseline, same run:
the same queries without the tenant filter (the operator's view). BM25 scores of acme's hits are compared
with those of a KB holding acme's documents alone (they must not move when globex's documents are added).

Scenario: a scenario whose access lists allow `restricted` asked by employee and admin keys; an employee's
answer or citations holding a restricted passage is a leak (the scenario must narrow, never widen).
"""

from __future__ import annotations

import json
import random
import time
from pathlib import Path
from typing import Any

from fastapi.testclient import TestClient

from lore.api import create_app
from lore.config import load_settings
from lore.engine import Lore
from lore.retrieve.search import SearchOptions
from lore.scenario.build import build_scenario
from lore.scenario.config import Scenarios
from lore.schema import SearchFilter

TENANTS = ("acme", "globex")
WORDS = ["expense", "travel", "hotel", "leave", "laptop", "badge", "parking", "bonus", "payroll", "vpn"]
KEYS = [("employee", None), ("manager", None), ("admin", None), ("employee", ["ds2"])]


def _docs(folder: Path, tenant: str, rng: random.Random) -> dict[str, dict[str, Any]]:
    meta = {}
    for i in range(24):
        words = rng.sample(WORDS, 4)
        vis = ["public", "internal", "restricted"][i % 3]
        roles = ["manager"] if i % 4 == 0 else []
        name = f"{tenant}_{i}.jsonl"
        (folder / name).write_text(
            json.dumps(
                {
                    "_id": str(i),
                    "title": f"{words[0]} {i}",
                    "text": f"{' '.join(words)} policy number {i} of the company.",
                }
            )
            + "\n",
            encoding="utf-8",
        )
        meta[name] = {
            "tenant_id": tenant,
            "dataset_id": "ds2" if i % 5 == 0 else "main",
            "visibility": vis,
            "allowed_roles": roles,
        }
    return meta


def _allowed(
    chunk: dict[str, Any], meta: dict[str, Any], tenant: str, roles: list[str], datasets: list[str] | None
) -> bool:
    m = meta[chunk["file"]]
    return (
        m["tenant_id"] == tenant
        and (datasets is None or m["dataset_id"] in datasets)
        and (m["visibility"] != "restricted" or "admin" in roles)
        and (not m["allowed_roles"] or bool(set(m["allowed_roles"]) & set(roles)))
    )


def run_shared(work: Path, queries: int, seed: int) -> dict[str, Any]:
    """Random scoped searches and downloads on a shared KB; leaks, baseline and BM25 score stability."""
    rng = random.Random(seed)
    lore = Lore(load_settings(home=work / "shared_home", api={"rate_limit_per_minute": 0}))
    meta: dict[str, dict[str, Any]] = {}
    for kb, tenants in (("shared", TENANTS), ("alone", ("acme",))):
        record = lore.create_kb(kb, owner_tenant="acme")
        folder = lore.settings.home / "uploads" / kb
        folder.mkdir(parents=True)
        for t in tenants:
            if t != "acme":
                lore.catalog.share_kb(record.id, t)
            m = _docs(folder, t, random.Random(f"{seed}{t}"))
            meta.update(m)
            lore.ingest(kb, [folder / n for n in m], chunk_metadata=lambda s, m=m: m[s.name])
    keys = {
        (t, r, tuple(d or ())): (lore.catalog.create_api_key(t, [r], d)[1], [r], d)
        for t in TENANTS
        for r, d in KEYS
    }
    out = {
        "queries": 0,
        "hits": 0,
        "leaks": 0,
        "downloads": 0,
        "download_leaks": 0,
        "baseline_cross_tenant": 0,
        "bm25_compared": 0,
        "bm25_moved": 0,
    }
    t0 = time.perf_counter()
    with TestClient(create_app(lore, run_preflight=False)) as client:
        for _ in range(queries):
            (tenant, _, _), (secret, roles, datasets) = rng.choice(list(keys.items()))
            q = " ".join(rng.sample(WORDS, 2))
            mode = rng.choice(["dense", "bm25", "hybrid"])
            r = client.post(
                "/api/search",
                headers={"Authorization": f"Bearer {secret}"},
                json={"kb": "shared", "query": q, "top_k": 20, "mode": mode},
            )
            hits = r.json()["hits"]
            out["queries"] += 1
            out["hits"] += len(hits)
            out["leaks"] += sum(not _allowed(h, meta, tenant, roles, datasets) for h in hits)
        for (tenant, _, _), (secret, roles, datasets) in keys.items():
            for name in meta:
                if not name.startswith(TENANTS):
                    continue
                r = client.get(f"/api/kbs/shared/files/{name}", headers={"Authorization": f"Bearer {secret}"})
                out["downloads"] += 1
                out["download_leaks"] += r.status_code == 200 and not _allowed(
                    {"file": name}, meta, tenant, roles, datasets
                )
    elapsed = time.perf_counter() - t0
    for _ in range(200):  # baseline: the operator's unfiltered view crosses tenants
        hits = lore.search("shared", " ".join(rng.sample(WORDS, 2)), SearchOptions(top_k=20))
        out["baseline_cross_tenant"] += sum(h.chunk.tenant_id != "acme" for h in hits)
    flt = SearchFilter(tenant_ids=["acme"], visibility=["public", "internal", "restricted"])
    for word in WORDS:
        opts = SearchOptions(mode="bm25", top_k=50, filter=flt)
        alone = {h.chunk.file_path: h.bm25_score for h in lore.search("alone", word, opts)}
        shared = {h.chunk.file_path: h.bm25_score for h in lore.search("shared", word, opts)}
        out["bm25_compared"] += len(alone)
        out["bm25_moved"] += sum(shared.get(f) != s for f, s in alone.items())
    out["ms_per_request"] = round(elapsed * 1000 / (out["queries"] + out["downloads"]), 1)
    lore.close()
    return out


def run_scenario(work: Path, scenarios: Path, asks: int, seed: int) -> dict[str, Any]:
    """Employee and admin keys ask a scenario that allows restricted chunks; employees must never get them."""
    rng = random.Random(seed)
    root = work / "scenarios"
    folder = root / "acc"
    (folder / "data" / "board").mkdir(parents=True)
    (folder / "scenario.toml").write_text(
        'id = "acc"\nname = "Access"\ndomain = "hr"\ndescription = "bench"\nsupport_contact = "desk"\n'
        'assistant_name = "bot"\n[defaults]\ntenant = "acme"\ndataset = "main"\nvisibility = "internal"\n'
        '[access]\ntenants = ["acme"]\ndatasets = ["main"]\nroles = ["employee", "admin"]\n'
        'default_roles = ["employee"]\nvisibility = ["public", "internal", "restricted"]\n'
        '[[sources]]\nid = "board"\nlabel = "Board"\npatterns = ["board"]\nvisibility = "restricted"\n',
        encoding="utf-8",
    )
    for i, word in enumerate(WORDS):
        (folder / "data" / "board" / f"{word}.md").write_text(
            f"# Board {word}\n\nThe board decided the {word} budget code is SECRET{i}X.\n", encoding="utf-8"
        )
    lore = Lore(
        load_settings(
            home=work / "scn_home", api={"rate_limit_per_minute": 0}, scenario={"scenarios_dir": root}
        )
    )
    build_scenario(lore, Scenarios(root).get("acc"), activate=True)
    employee = lore.catalog.create_api_key("acme", ["employee"])[1]
    admin = lore.catalog.create_api_key("acme", ["admin"])[1]
    out = {"asks": 0, "employee_leaks": 0, "admin_answers_with_restricted": 0}
    with TestClient(create_app(lore, run_preflight=False)) as client:
        for i in range(asks):
            word = rng.choice(WORDS)
            secret = admin if i % 2 else employee
            r = client.post(
                "/api/ask",
                headers={"Authorization": f"Bearer {secret}"},
                json={
                    "scenario": "acc",
                    "question": f"What budget code did the board decide for {word}?",
                    "new_session": False,
                },
            )
            out["asks"] += 1
            found = "SECRET" in r.text
            if secret == employee:
                out["employee_leaks"] += found
            else:
                out["admin_answers_with_restricted"] += found
    lore.close()
    return out
