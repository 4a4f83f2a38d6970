"""The grant only narrows, the policy decides every action, and README's table is the policy's."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from lore.errors import ConflictError, ForbiddenError, NotFoundError
from lore.grant import Grant, ScopeError
from lore.policy import Action, Kind, Resource, absent, check, decide
from lore.policy_table import policy_table

README = Path(__file__).resolve().parents[2] / "README.md"


def test_readme_policy_table_is_generated_from_the_policy() -> None:
    text = README.read_text(encoding="utf-8")
    block = re.search(r"<!-- policy-table -->\n(.*?)\n<!-- /policy-table -->", text, re.DOTALL)
    assert block, "README lost its policy table markers"
    assert block.group(1) == policy_table(), "README's table differs: run `python -m lore.policy_table`"


def test_a_scenario_narrows_a_key_never_widens_it() -> None:
    employee = Grant.of_key("k", "acme", ["employee"], None)
    scenario = Grant(
        "acme",
        ("hr", "pay"),
        ("public", "internal", "restricted"),
        ("employee", "manager"),
        scenario="hr",
        time_travel=True,
    )
    narrowed = employee.narrow(scenario)
    assert narrowed.visibility == ("public", "internal") and narrowed.roles == ("employee",)
    assert narrowed.datasets == ("hr", "pay") and narrowed.scenario == "hr" and not narrowed.time_travel
    limited = Grant.of_key("k", "acme", ["admin"], ["pay", "ops"]).narrow(scenario)
    assert limited.datasets == ("pay",) and "restricted" in limited.visibility
    with pytest.raises(ScopeError):
        employee.narrow(Grant("bluefin"))
    assert employee.covers(Grant("acme", None, ("public",), ())) and not employee.covers(scenario)


def test_foreign_is_absent_and_refusals_raise_the_right_error() -> None:
    admin = Grant.of_key("k", "acme", ["admin"], None)
    foreign = Resource(Kind.KB, "kb", frozenset({"bluefin"}), frozenset({"bluefin"}))
    assert decide(admin, Action.DELETE, foreign).reason == absent(Resource(Kind.KB, "kb"))
    with pytest.raises(NotFoundError):
        check(admin, Action.READ, foreign)
    shared = Resource(Kind.KB, "kb", frozenset({"acme", "bluefin"}), frozenset({"acme", "bluefin"}))
    with pytest.raises(ForbiddenError):
        check(admin, Action.ACTIVATE, shared)
    with pytest.raises(ConflictError):
        check(
            admin, Action.WRITE_FILE, Resource(Kind.FILE, "f", frozenset({"bluefin"}), frozenset({"bluefin"}))
        )
    operator = Grant("acme")  # the local CLI: no key
    assert decide(operator, Action.MANAGE_KEYS, Resource(Kind.KEY)).allowed


def test_every_action_has_a_decision_for_every_kind() -> None:
    grant = Grant.of_key("k", "acme", ["admin"], None)
    for action in Action:
        for kind in Kind:
            d = decide(grant, action, Resource(kind, "x", frozenset({"acme"}), frozenset({"acme"})))
            assert d.allowed or d.status in (403, 404, 409)


def test_a_kb_without_owner_is_absent_to_every_key() -> None:
    """A KB from before 0005 without content has no owner (`kb_resource` gives it no tenant): every key, a
    platform admin's too, gets the 404 of an unknown KB for every action; only the local operator acts."""
    nobodys = Resource(Kind.KB, "old")
    for roles in (["employee"], ["admin"], ["admin", "platform-admin"]):
        key = Grant.of_key("k", "acme", roles, None)
        for action in Action:
            if action in (Action.MANAGE_KEYS, Action.AUDIT, Action.REVIEW, Action.WRITE_FILE):
                continue  # tenant-wide, or about one file (decided after the KB's own 404)
            d = decide(key, action, nobodys)
            assert (d.allowed, d.status) == (False, 404), (roles, action, d)
    operator = Grant("acme")
    assert all(decide(operator, a, nobodys).allowed for a in (Action.READ, Action.DELETE, Action.SHARE))
