"""A TypeScript client generated from the OpenAPI document (`openapi-typescript`) type-checks the console's
reads of four replies (knowledge bases, search, versions, me) with `tsc --strict --noEmit`."""

from __future__ import annotations

import copy
import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi import FastAPI

from lore.api import create_app
from lore.config import load_settings
from lore.engine import Lore

TOOLS = {"openapi-typescript": "7.13.0", "typescript": "5.9.3"}
CACHE = Path(os.environ.get("LORE_TS_CACHE", Path.home() / ".cache" / "lore-wire-ts"))
OFFLINE = ("ENOTFOUND", "EAI_AGAIN", "ETIMEDOUT", "ECONNREFUSED", "ECONNRESET", "network")

# What the console (src/lore/web/static) reads of each reply; a field typed `unknown` or missing fails.
CONSOLE_TS = """\
import type { paths } from "./api";

type Ok<Op> = Op extends { responses: { 200: { content: { "application/json": infer T } } } } ? T : never;

export function kbPicker(kbs: Ok<paths["/api/kbs"]["get"]>): string[] {
  return kbs.map((k) => k.name);
}

export function kbInfo(info: Ok<paths["/api/kbs/{kb}"]["get"]>): string {
  const files: number = info.files, chunks: number = info.chunks, model: string = info.embedding_model;
  const active: number | null = info.versioned ? info.active_version ?? null : null;
  return `${files} ${chunks} ${model} ${active ?? "-"}`;
}

export function hitRows(r: Ok<paths["/api/search"]["post"]>): string[] {
  const terms: string[] = r.terms;
  const applied: string = JSON.stringify(r.filter);
  return r.hits.map((h) => {
    const score: number = h.score;
    const dense: number | null = h.dense_score ?? null, denseRank: number | null = h.dense_rank ?? null;
    const bm25: number | null = h.bm25_score ?? null, bm25Rank: number | null = h.bm25_rank ?? null;
    const where: string[] = [h.file, String(h.page ?? ""), String(h.slide ?? ""), h.sheet ?? "",
      String(h.row ?? ""), ...h.heading_path];
    const text: string = h.text;
    return [score, dense, denseRank, bm25, bm25Rank, ...where, text, ...terms, applied].join(" ");
  });
}

export function versionRows(v: Ok<paths["/api/kbs/{kb}/versions"]["get"]>): string[] {
  return v.versions.map((x) => {
    const seq: number = x.seq, active: boolean = x.active, status: string = x.status;
    const files: number[] = [x.files_added, x.files_changed, x.files_removed, x.files_reused];
    const chunks: number[] = [x.chunks_embedded, x.chunks_reused];
    const passed: boolean | null = x.gate_passed ?? null;
    const gate: string = passed === null ? "-" : passed ? "pass" : "FAIL";
    return `${seq} ${active} ${status} ${files.join("/")} ${chunks.join("/")} ${gate}`;
  });
}

export function whoami(me: Ok<paths["/api/me"]["get"]>): string {
  const name: string = me.name, tenant: string = me.tenant, roles: string[] = me.roles;
  const may: boolean = me.actions.includes("build");
  const keyRoles: string[] = me.key_roles;
  return `${name} ${tenant} ${roles.join(", ")} ${may} ${keyRoles.join()}`;
}
"""
TSCONFIG = {
    "compilerOptions": {
        "strict": True,
        "noEmit": True,
        "target": "es2022",
        "module": "es2022",
        "moduleResolution": "bundler",
        "skipLibCheck": True,
    },
    "files": ["console.ts"],
}


@pytest.fixture(scope="module")
def tools() -> Path:
    """openapi-typescript and tsc, installed once into the cache folder with npm."""
    bin_dir = CACHE / "node_modules" / ".bin"
    if all((bin_dir / b).exists() for b in ("openapi-typescript", "tsc")):
        return bin_dir
    npm = shutil.which("npm")
    if npm is None:
        pytest.skip("npm is not installed: the TypeScript client cannot be generated")
    CACHE.mkdir(parents=True, exist_ok=True)
    specs = [f"{name}@{version}" for name, version in TOOLS.items()]
    cmd = [npm, "install", "--no-audit", "--no-fund", "--prefix", str(CACHE), *specs]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=600, check=False)
    if done.returncode != 0:
        if any(word in done.stderr for word in OFFLINE):
            pytest.skip(f"the npm registry is unreachable: {done.stderr.strip()[-300:]}")
        pytest.fail(f"npm install failed: {done.stderr[-2000:]}")
    return bin_dir


@pytest.fixture(scope="module")
def openapi(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    lore = Lore(load_settings(home=tmp_path_factory.mktemp("wire_ts")))
    app: FastAPI = create_app(lore, run_preflight=False)
    yield app.openapi()
    lore.close()


def type_check(tools: Path, doc: dict[str, Any], folder: Path) -> subprocess.CompletedProcess[str]:
    """Generate `api.d.ts` from `doc`, then type-check the console's reads against it."""
    folder.mkdir()
    (folder / "openapi.json").write_text(json.dumps(doc), encoding="utf-8")
    gen = [str(tools / "openapi-typescript"), "openapi.json", "-o", "api.d.ts"]
    made = subprocess.run(gen, cwd=folder, capture_output=True, text=True, timeout=300, check=False)
    assert made.returncode == 0, made.stderr
    (folder / "console.ts").write_text(CONSOLE_TS, encoding="utf-8")
    (folder / "tsconfig.json").write_text(json.dumps(TSCONFIG), encoding="utf-8")
    tsc = [str(tools / "tsc"), "-p", "tsconfig.json"]
    return subprocess.run(tsc, cwd=folder, capture_output=True, text=True, timeout=300, check=False)


def test_console_reads_type_check(tools: Path, openapi: dict[str, Any], tmp_path: Path) -> None:
    done = type_check(tools, openapi, tmp_path / "ok")
    assert done.returncode == 0, done.stdout + done.stderr


def test_a_renamed_or_untyped_field_does_not_type_check(
    tools: Path, openapi: dict[str, Any], tmp_path: Path
) -> None:
    """The check can fail: a version field renamed, and the search hits typed as bare objects."""
    doc = copy.deepcopy(openapi)
    schemas = doc["components"]["schemas"]
    schemas["VersionInfo"]["properties"]["added"] = schemas["VersionInfo"]["properties"].pop("files_added")
    schemas["SearchResult"]["properties"]["hits"]["items"] = {"type": "object", "additionalProperties": True}
    done = type_check(tools, doc, tmp_path / "drift")
    assert done.returncode != 0
    assert "Property 'files_added' does not exist" in done.stdout
    assert "Type 'unknown' is not assignable to type 'number'" in done.stdout  # a hit's score
