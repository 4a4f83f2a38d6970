"""The answer generator is chosen like every other backend: `[answer] generator` is a name checked against
the `lore.generators` entry points when a generator is made, so an installed plug-in package's generator
is listed by `lore plugins` and used, and an uninstalled name says which ones are installed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from lore.answer.generators.base import GENERATORS
from lore.cli.main import app as cli
from lore.config import load_settings
from lore.engine import Lore
from lore.errors import ConfigError
from tests.plugin_dist import install_plugin

PLUGIN = '''
"""A toy generator: repeats the question, then names its endpoint settings."""


class EchoGenerator:
    name = "echo"

    def __init__(self, model="", base_url="", timeout_s=0.0):
        self.model, self.base_url, self.timeout_s = model, base_url, timeout_s

    def stream(self, question, passages):
        yield f"{question} ({self.model} at {self.base_url or '-'})"
'''


@pytest.fixture
def echo_installed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    site = tmp_path / "site"
    site.mkdir()
    install_plugin(
        site, "lore-echo", "lore_echo", PLUGIN, "[lore.generators]\necho = lore_echo:EchoGenerator\n"
    )
    monkeypatch.syspath_prepend(str(site))
    GENERATORS.refresh()
    yield
    monkeypatch.undo()
    GENERATORS.refresh()
    GENERATORS._factories.pop("echo", None)


def test_a_plugin_generator_is_listed_and_used_by_name(echo_installed: None, tmp_path: Path) -> None:
    rows = json.loads(CliRunner().invoke(cli, ["plugins", "--json"]).output)
    generators = {r["name"]: r["distribution"] for r in rows if r["kind"] == "generators"}
    assert generators == {"extractive": "lore-kb", "openai": "lore-kb", "echo": "lore-echo"}

    settings = load_settings(home=tmp_path / "home", answer={"generator": "echo", "llm_model": "m1"})
    lore = Lore(settings)
    try:
        generator = lore.generator("any kb: a plug-in is not tied to one")
        assert generator.name == "echo"
        assert "".join(generator.stream("hello?", [])) == "hello? (m1 at -)"
    finally:
        lore.close()


def test_an_uninstalled_generator_name_lists_the_installed_ones(tmp_path: Path) -> None:
    settings = load_settings(home=tmp_path / "home", answer={"generator": "gpt"})  # a plain name: loads
    lore = Lore(settings)
    try:
        with pytest.raises(
            ConfigError, match=r"answer.generator: unknown 'gpt' \(known: extractive, openai\)"
        ):
            lore.generator("hb")
    finally:
        lore.close()


def test_openai_without_an_endpoint_still_says_what_it_needs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("LORE_LLM_BASE_URL", raising=False)
    lore = Lore(load_settings(home=tmp_path / "home", answer={"generator": "openai"}))
    try:
        with pytest.raises(ConfigError, match="needs answer.llm_base_url and answer.llm_model"):
            lore.generator("hb")
    finally:
        lore.close()
