"""The service tables on SQLite, PostgreSQL and MariaDB: keys, sessions, messages, feedback, traces."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from sqlalchemy import text

from lore.agent.rewrite import is_follow_up
from lore.catalog import Catalog
from lore.errors import LoreError, NotFoundError
from tests.conftest import migrated


@pytest.fixture()
def cat(db_url: str) -> Iterator[Catalog]:
    with Catalog(migrated(db_url)) as catalog:
        yield catalog


def test_keys_are_stored_hashed_and_revocable(cat: Catalog) -> None:
    key, secret = cat.create_api_key("acme", ["admin", " staff "], ["d1"], name="ci")
    with cat.engine.connect() as conn:
        stored = conn.execute(text("SELECT key_hash, prefix, roles FROM api_keys")).one()
    assert secret not in stored and stored[0] != secret and key.roles == ["admin", "staff"]
    assert cat.authenticate(secret) == key and cat.authenticate(secret + "x") is None
    other, other_secret = cat.create_api_key("acme", [])
    assert cat.revoke_api_key(secret).id == key.id  # by the secret itself
    assert cat.authenticate(secret) is None and cat.authenticate(other_secret) == other
    assert cat.revoke_api_key(other.id).revoked_at is not None
    with pytest.raises(NotFoundError):
        cat.revoke_api_key("missing")
    with pytest.raises(LoreError, match="tenant"):
        cat.create_api_key("", ["x"])
    with pytest.raises(LoreError, match="datasets"):
        cat.create_api_key("acme", ["x"], [" "])


def test_sessions_messages_and_tenant_isolation(cat: Catalog) -> None:
    s = cat.create_session("acme", "hb", title="first question")
    cat.add_message(s.id, "user", "LF-200 的保修期多久？", query="LF-200 的保修期多久？")
    cat.add_message(s.id, "assistant", "24 个月[1]。", trace_id="t1")
    assert [m.role for m in cat.messages(s.id)] == ["user", "assistant"]
    assert [m.content for m in cat.messages(s.id, limit=1)] == ["24 个月[1]。"]
    with pytest.raises(NotFoundError):
        cat.get_session(s.id, "other-tenant")
    assert cat.list_sessions("other-tenant") == [] and cat.list_sessions("acme")[0].id == s.id
    cat.set_session_summary(s.id, "warranty")
    assert cat.get_session(s.id, "acme").summary == "warranty"
    cat.delete_session(s.id, "acme")
    assert cat.messages(s.id) == []


def test_traces_and_feedback(cat: Catalog) -> None:
    end = {"answer": "30 days [1].", "citations": [{"n": 1, "chunk_id": "c1", "file": "faq.csv"}]}
    cat.save_trace(
        id="t1",
        tenant_id="acme",
        key_id=None,
        session_id=None,
        kb="hb",
        kb_version=3,
        transport="sse",
        question="refund?",
        query="refund?",
        status="ok",
        route="retrieval",
        error=None,
        first_token_ms=5.0,
        total_ms=9.0,
        data={"end": end},
    )
    trace = cat.get_trace("t1", "acme")
    assert trace.kb_version == 3 and trace.data["end"]["answer"] == "30 days [1]."
    with pytest.raises(NotFoundError):
        cat.get_trace("t1", "other")
    with pytest.raises(NotFoundError):
        cat.add_feedback(trace_id="t1", tenant_id="other", key_id=None, rating=-1)
    fb = cat.add_feedback(trace_id="t1", tenant_id="acme", key_id=None, rating=-1, note="too vague")
    assert fb.question == "refund?" and fb.citations == [{"chunk_id": "c1", "file": "faq.csv", "n": 1}]
    with pytest.raises(LoreError, match="rating"):
        cat.add_feedback(trace_id="t1", tenant_id="acme", key_id=None, rating=0)
    assert [f.id for f in cat.list_feedback(rating=-1)] == [fb.id] and cat.list_feedback(rating=1) == []


def test_follow_up_rewrite_rules() -> None:
    assert is_follow_up("那可以延长吗？") and is_follow_up("What about LF-300?") and is_follow_up("and it?")
    assert not is_follow_up("What is the refund window for hardware orders?")
