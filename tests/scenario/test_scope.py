"""Scopes only narrow: every attempt to widen one through a request parameter is a ScopeError."""

from __future__ import annotations

import pytest

from lore.scenario.config import Scenarios
from lore.scenario.scope import Scope, ScopeError, check_scope, scenario_scope
from lore.schema import SearchFilter
from tests.scenario.conftest import SAMPLE

GRANT = Scope("acme", ("policies", "faq"), ("public", "internal"), ("employee",), None, 2)


def test_filter_sets_every_scoped_field() -> None:
    f = GRANT.to_filter()
    assert (f.tenant_ids, f.dataset_ids, f.visibility, f.roles) == (
        ["acme"],
        ["policies", "faq"],
        ["public", "internal"],
        ["employee"],
    )
    assert Scope("acme").to_filter().roles == []  # no roles: only chunks open to every role, never "any role"


@pytest.mark.parametrize(
    "request_filter",
    [
        SearchFilter(tenant_ids=["globex"]),
        SearchFilter(tenant_ids=["acme", "globex"]),
        SearchFilter(dataset_ids=["payroll"]),
        SearchFilter(visibility=["restricted"]),
        SearchFilter(roles=["admin"]),
        SearchFilter(roles=["employee", "hr"]),
        SearchFilter(roles="employee"),
    ],
)
def test_request_filter_cannot_widen(request_filter: SearchFilter) -> None:
    with pytest.raises(ScopeError, match="outside the caller's scope|a list is required"):
        GRANT.bound(request_filter)


def test_request_filter_narrows() -> None:
    f = GRANT.bound(
        SearchFilter(
            tenant_ids=["acme"],
            dataset_ids=["faq"],
            visibility=["public"],
            roles=[],
            sources=["leave"],
            source_types=["doc"],
            document_ids=["d1"],
        )
    )
    assert (f.tenant_ids, f.dataset_ids, f.visibility, f.roles) == (["acme"], ["faq"], ["public"], [])
    assert (f.sources, f.source_types, f.document_ids) == (["leave"], ["doc"], ["d1"])
    open_request = GRANT.bound(SearchFilter())  # nothing asked: the whole scope, never unrestricted
    assert open_request.tenant_ids == ["acme"] and open_request.roles == ["employee"]


def test_another_version_needs_time_travel() -> None:
    with pytest.raises(ScopeError, match="version 1: the caller may not read another version"):
        GRANT.at_version(1)
    assert GRANT.at_version(2) == GRANT and GRANT.at_version(None) is GRANT
    traveller = Scope("acme", time_travel=True)
    assert traveller.at_version(1).version == 1
    with pytest.raises(ScopeError, match="tenant is required"):
        Scope("")
    with pytest.raises(ScopeError, match="visibility"):
        Scope("acme", visibility=("secret",))


def test_scenario_scope_checks_the_access_lists() -> None:
    hr = Scenarios(SAMPLE).get("hr")
    s = scenario_scope(hr)
    assert (s.tenant, s.roles, s.scenario) == ("bluefin", ("employee",), "hr")
    assert s.visibility == ("public", "internal") and "hr-pay" in s.datasets
    assert scenario_scope(hr, tenant="bluefin-hk", roles=["manager"]).roles == ("manager",)
    for kwargs, message in (
        ({"tenant": "globex"}, "not a tenant"),
        ({"roles": ["admin"]}, "not roles"),
        ({"datasets": ["secret"]}, "not datasets"),
    ):
        with pytest.raises(ScopeError, match=message):
            scenario_scope(hr, **kwargs)
    with pytest.raises(ScopeError, match="not a tenant"):
        check_scope(Scope("globex", scenario="hr"), hr)
    with pytest.raises(ScopeError, match="for scenario 'other'"):
        check_scope(Scope("bluefin", scenario="other"), hr)


def test_a_handed_in_scope_is_bounded_by_the_scenario() -> None:
    hr = Scenarios(SAMPLE).get("hr")
    with pytest.raises(ScopeError, match=r"visibility \['restricted'\]: not allowed in scenario 'hr'"):
        check_scope(Scope("bluefin", None, ("public", "internal", "restricted"), ("employee",), "hr"), hr)
    open_datasets = check_scope(Scope("bluefin", None, roles=("employee",)), hr)
    assert (
        open_datasets.datasets == tuple(hr.datasets) and open_datasets.scenario == "hr"
    )  # not the whole tenant
    assert check_scope(Scope("bluefin", ("hr-faq",), roles=("employee",)), hr).datasets == ("hr-faq",)
