"""scenario.toml validation: every bad field is named together with the file."""

from __future__ import annotations

from pathlib import Path

import pytest

from lore.errors import NotFoundError
from lore.scenario.config import ScenarioError, Scenarios, load_scenario
from tests.scenario.conftest import SAMPLE

GOOD = """id = "{id}"
name = "Test"
support_contact = "help@example.com"
"""


def write(tmp_path: Path, body: str, folder: str = "demo") -> Path:
    d = tmp_path / folder
    d.mkdir(parents=True, exist_ok=True)
    (d / "scenario.toml").write_text(body, encoding="utf-8")
    return d


def test_sample_scenario_loads() -> None:
    sc = Scenarios(SAMPLE).get("hr")
    assert sc.kb_name == "hr" and [s.id for s in sc.sources] == [
        "leave",
        "expense",
        "onboarding",
        "compensation",
    ]
    assert sc.tenants == ["bluefin", "bluefin-hk"] and "hr-pay" in sc.datasets
    assert sc.prompt_variables()["assistant_name"] == "小鳍"
    assert sc.source("compensation").roles == ["manager", "hr"]


def test_minimal_scenario_and_defaults(tmp_path: Path) -> None:
    sc = load_scenario(write(tmp_path, GOOD.format(id="demo")))
    assert (
        sc.kb_name == "demo"
        and sc.defaults.tenant == "default"
        and sc.access.visibility == ["public", "internal"]
    )


@pytest.mark.parametrize(
    ("extra", "field"),
    [
        ('[defaults]\nvisibility = "secret"\n', "defaults.visibility"),
        ('colour = "blue"\n', "colour"),
        ('[[sources]]\nid = "Bad Id"\n', "sources.0.id"),
        ('[[sources]]\nid = "a"\npatterns = ["re:(unclosed"]\n', "sources.0.patterns"),
        ('[routing]\ngreeting = ["re:[z-a]"]\n', "routing.greeting"),
        ('[routing]\nhandoff = [""]\n', "routing.handoff"),
        ('[risk]\nweather = ["rain"]\n', "risk.weather"),
        ('[[sources]]\nid = "a"\n[[sources]]\nid = "a"\n', "duplicate id a"),
        ('[access]\nroles = ["employee"]\ndefault_roles = ["admin"]\n', "access.default_roles"),
        ('[access]\ntenants = ["t1"]\n', "tenants of defaults/sources: default not in access.tenants"),
        ('[profiles.poetic]\nsystem = "Rhyme."\n', "profiles: unknown profile poetic"),
        ('[profiles.facts]\nuser_template = "Q: {question}"\n', "profiles.facts.user_template"),
        ('[profiles.facts]\ntone = "warm"\n', "profiles.facts.tone"),
    ],
)
def test_bad_field_is_named_with_the_file(tmp_path: Path, extra: str, field: str) -> None:
    folder = write(tmp_path, GOOD.format(id="demo") + extra)
    with pytest.raises(ScenarioError) as err:
        load_scenario(folder)
    assert str(folder / "scenario.toml") in str(err.value) and field in str(err.value)


def test_missing_required_fields(tmp_path: Path) -> None:
    with pytest.raises(ScenarioError, match=r"support_contact: Field required"):
        load_scenario(write(tmp_path, 'id = "demo"\nname = "x"\n'))


def test_id_must_match_folder_and_toml_must_parse(tmp_path: Path) -> None:
    with pytest.raises(ScenarioError, match="differs from the folder name"):
        load_scenario(write(tmp_path, GOOD.format(id="other")))
    with pytest.raises(ScenarioError, match="not valid TOML"):
        load_scenario(write(tmp_path, "id = = 1", folder="broken"))
    with pytest.raises(ScenarioError, match="no scenario.toml"):
        load_scenario(tmp_path / "nowhere")


def test_unknown_scenario_and_unknown_source(tmp_path: Path) -> None:
    write(tmp_path, GOOD.format(id="demo"))
    found = Scenarios(tmp_path)
    assert found.ids() == ["demo"]
    with pytest.raises(NotFoundError, match=r"unknown scenario 'nope'.*known: demo"):
        found.get("nope")
    with pytest.raises(NotFoundError):
        found.get("../demo")
    with pytest.raises(ScenarioError, match=r"unknown source 'x'"):
        found.get("demo").source("x")
