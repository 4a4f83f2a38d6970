"""The service resolves a scenario's scope once (`api.scenarios.key_scope`); the check `scenario_ask`
makes of a scope handed in by name would change nothing in it, so the service skips it."""

from __future__ import annotations

import pytest

from lore.app.scenarios import key_scope
from lore.grant import Grant
from lore.scenario.config import Scenarios
from lore.scenario.scope import check_scope
from tests.conftest import REPO


@pytest.mark.parametrize(
    ("caller", "version"),
    [
        (Grant("bluefin", roles=("employee",)), None),
        (Grant("bluefin", datasets=("hr-faq", "other"), visibility=("public",), roles=("hr", "admin")), None),
        (Grant("bluefin-hk", visibility=("public", "internal", "restricted"), time_travel=True), None),
        (Grant("bluefin-hk", visibility=("public", "internal", "restricted"), time_travel=True), 3),
    ],
)
def test_the_key_scope_is_already_checked(caller: Grant, version: int | None) -> None:
    sc = Scenarios(REPO / "examples" / "scenarios").get("hr")
    scope = key_scope(sc, caller, version)
    assert check_scope(scope, sc).at_version(version) == scope
