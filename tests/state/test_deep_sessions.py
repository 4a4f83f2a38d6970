"""Deep-mode conversation state in Redis: a session started on one replica continues on another."""

from __future__ import annotations

from pathlib import Path

from lore.agent.sessions import RedisSessionSaver
from lore.engine import Lore
from tests.conftest import EXAMPLES
from tests.state.conftest import settings_for


def _deep(lore: Lore, question: str, session: str) -> dict:
    events = list(lore.ask("hb", question, mode="deep", session_id=session))
    assert events[-1].type == "end", events[-1].data
    return events[-1].data


def test_a_session_continues_on_another_replica(redis_only: str, tmp_path: Path) -> None:
    catalog, store = f"sqlite:///{tmp_path / 'catalog.db'}", {"uri": str(tmp_path / "store")}
    a = Lore(settings_for(redis_only, home=tmp_path / "a", catalog_url=catalog, store=store))
    b = Lore(settings_for(redis_only, home=tmp_path / "b", catalog_url=catalog, store=store))
    a.create_kb("hb")
    a.ingest("hb", [EXAMPLES])
    assert isinstance(a.deep_sessions, RedisSessionSaver)
    _deep(a, "LF-200和LF-500的载重分别是多少？", "s1")
    second = _deep(b, "How many days of annual leave?", "s1")
    # Replica B read the first turn that replica A answered: the session history holds both turns.
    graph_history = b.deep_graph.get_state({"configurable": {"thread_id": "s1"}}).values["history"]
    assert [m["content"] for m in graph_history if m["role"] == "user"] == [
        "LF-200和LF-500的载重分别是多少？",
        "How many days of annual leave?",
    ]
    assert second["answer"]
    a.deep_sessions.delete_thread("s1")
    assert b.deep_graph.get_state({"configurable": {"thread_id": "s1"}}).values == {}
    a.close()
    b.close()
