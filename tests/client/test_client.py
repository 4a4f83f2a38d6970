"""LoreClient and AsyncLoreClient against a real `lore serve` app on a free port (uvicorn in a thread), or
against an external `lore serve` from a client-only install (tests/client/remote.py)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from lore.client import Answer, AsyncLoreClient, LoreAPIError, LoreClient

if TYPE_CHECKING:  # only the client is imported: the module also runs in a client-only install
    from tests.api.conftest import Keys, LiveServer

# the sample handbook (tests.conftest.EXAMPLES, which this module does not import: it loads SQLAlchemy)
EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "handbook"


def test_kbs_search_and_passages_are_typed_and_scoped(live: LiveServer, keys: Keys) -> None:
    with LoreClient(live.url, keys.staff) as c:
        [kb] = c.list_kbs()
        assert kb.name == "hb" and kb.chunks > 0 and kb.active_version is None
        result = c.search("hb", "What is the refund window?", top_k=3)
        assert result.version is None and 1 <= len(result.hits) <= 3
        top = result.hits[0]
        assert top.file and top.text and top.score > 0 and top.chunk_id
        passage = c.get_passage("hb", top.chunk_id)
        assert passage.text == top.text and passage.file == top.file and top.text in passage.parent_text
        document = c.get_document("hb", top.file)
        assert top.text.split()[0] in document.text and document.sections
        # another tenant's document is found by its tenant's key and by no one else's
        assert not any("NG-7731" in h.text for h in c.search("hb", "launch code NG-7731").hits)
    with LoreClient(live.url, keys.tenant_b) as b:
        secret = b.search("hb", "launch code NG-7731", top_k=1).hits[0]
        assert "NG-7731" in secret.text
    with LoreClient(live.url, keys.staff) as c:
        with pytest.raises(LoreAPIError) as exc:
            c.get_passage("hb", secret.chunk_id)
        assert exc.value.status == 404 and "not found" in exc.value.message
        with pytest.raises(LoreAPIError) as exc:
            c.get_document("hb", secret.file)
        assert exc.value.status == 404


def test_errors_carry_the_servers_status_and_message(live: LiveServer, keys: Keys) -> None:
    with LoreClient(live.url, "not-a-key") as c, pytest.raises(LoreAPIError) as exc:
        c.list_kbs()
    assert exc.value.status == 401 and exc.value.message == "invalid or revoked API key"
    with LoreClient(live.url, keys.staff) as c:
        with pytest.raises(LoreAPIError) as exc:
            c.create_kb("nope")
        assert exc.value.status == 403 and "'admin' role" in exc.value.message
        with pytest.raises(LoreAPIError) as exc:
            c.search("no-such-kb", "x")
        assert exc.value.status == 404 and "no-such-kb" in exc.value.message
        with pytest.raises(LoreAPIError) as exc:
            c.search("hb", "x", version=1)
        assert exc.value.status == 403
    with LoreClient("http://127.0.0.1:9", keys.staff, timeout=2) as c, pytest.raises(LoreAPIError) as exc:
        c.list_kbs()
    assert exc.value.status == 0 and "cannot reach" in exc.value.message


def test_ask_streams_events_and_returns_citations_sessions_and_feedback(live: LiveServer, keys: Keys) -> None:
    with LoreClient(live.url, keys.staff) as c:
        events = list(c.ask_stream("What is the refund window?", "hb"))
        kinds = [e.event for e in events]
        assert kinds[0] == "start" and kinds[-1] == "end" and "token" in kinds
        answer = c.ask("What is the refund window?", "hb")
        assert not answer.refused and answer.citations and answer.trace_id
        assert all(f"[{cit.n}]" in answer.answer for cit in answer.citations)
        assert answer.citations[0].file and answer.citations[0].text
        refusal = c.ask("Who won the 1998 World Cup?", "hb")
        assert refusal.refused and not refusal.citations and refusal.route == "refused"
        # a follow-up in the same session, listed and then deleted
        follow = c.ask("And how do I apply for it?", "hb", session_id=answer.session_id)
        assert follow.session_id == answer.session_id
        session = c.session(answer.session_id)
        assert [m["role"] for m in session.messages][:2] == ["user", "assistant"] and len(
            session.messages
        ) == 4
        assert answer.session_id in {s.id for s in c.sessions("hb")}
        fb = c.feedback(answer.trace_id, -1, "too short")
        assert fb["rating"] == -1 and fb["kb"] == "hb"
        c.delete_session(answer.session_id)
        with pytest.raises(LoreAPIError) as exc:
            c.session(answer.session_id)
        assert exc.value.status == 404
    with LoreClient(live.url, keys.tenant_b) as b, pytest.raises(LoreAPIError) as exc:
        b.feedback(answer.trace_id, 1)  # another tenant's answer
    assert exc.value.status == 404


def test_upload_ingest_build_versions_activate_rollback(live: LiveServer, keys: Keys, tmp_path: Path) -> None:
    seen: list[tuple[str, int, int]] = []
    with LoreClient(live.url, keys.admin) as c:
        c.create_kb("client-kb", "made by the client")
        v1 = tmp_path / "v1"
        v1.mkdir()
        (v1 / "leave.md").write_text(
            "# Leave\n\nStaff get 25 days of annual leave a year.\n", encoding="utf-8"
        )
        uploaded = c.upload(
            "client-kb",
            [v1 / "leave.md", EXAMPLES / "travel_policy.docx"],
            progress=lambda *p: seen.append(p),
        )
        assert {u.name for u in uploaded} == {"leave.md", "travel_policy.docx"}
        size = (EXAMPLES / "travel_policy.docx").stat().st_size
        assert ("travel_policy.docx", size, size) in seen
        progress = []
        built = c.build(
            "client-kb", ["leave.md"], description="first", activate=True, progress=progress.append
        )
        assert built.version is not None and built.version.seq == 1 and built.version.active
        assert built.count("ingested") == 1 and any(e.data.get("stage") == "file_done" for e in progress)
        second = c.build("client-kb", ["leave.md", "travel_policy.docx"], description="second")
        assert second.version is not None and second.version.status == "staged"
        c.activate("client-kb", 2, reason="reviewed")
        assert [v.active for v in c.versions("client-kb")] == [False, True]
        assert c.search("client-kb", "annual leave days").version == 2
        back = c.rollback("client-kb", reason="oops")
        assert back.seq == 1 and c.get_kb("client-kb").active_version == 1
        with pytest.raises(LoreAPIError) as exc:
            c.ingest("client-kb", ["leave.md"])
        assert exc.value.status == 409  # a versioned KB changes only through builds
        c.create_kb("client-flat")
        result = c.upload_and_ingest("client-flat", [v1])
        assert result.count("ingested") == 1 and result.files[0].name == "leave.md"
        hit = c.search("client-flat", "annual leave").hits[0]
        assert "25 days" in hit.text
        c.delete_kb("client-flat")
        assert "client-flat" not in {k.name for k in c.list_kbs()}


def test_async_client(live: LiveServer, keys: Keys) -> None:
    async def run() -> tuple[list[str], Answer, int]:
        async with AsyncLoreClient(live.url, keys.staff) as c:
            kbs = [k.name for k in await c.list_kbs()]
            kinds = [e.event async for e in c.ask_stream("年假有几天？", "hb")]
            assert kinds[0] == "start" and kinds[-1] == "end"
            answer = await c.ask("What is the refund window?", "hb")
            hits = (await c.search("hb", "refund window", top_k=2)).hits
            with pytest.raises(LoreAPIError) as exc:
                await c.get_kb("missing")
            assert exc.value.status == 404
            return kbs, answer, len(hits)

    kbs, answer, n = asyncio.run(run())
    assert "hb" in kbs and answer.citations and not answer.refused and n == 2


def test_async_upload_build_and_errors(live: LiveServer, keys: Keys, tmp_path: Path) -> None:
    (tmp_path / "a.md").write_text("# Canteen\n\nThe canteen opens at 11:30 on weekdays.\n", encoding="utf-8")
    sent: list[int] = []
    statuses: list[str] = []

    async def run() -> None:
        async with AsyncLoreClient(live.url, keys.admin) as c:
            await c.create_kb("async-kb")
            uploaded = await c.upload(
                "async-kb", [tmp_path / "a.md"], progress=lambda _n, s, _t: sent.append(s)
            )
            built = await c.build(
                "async-kb",
                [u.name for u in uploaded],
                activate=True,
                progress=lambda e: statuses.append(e.data.get("stage", "")),
            )
            assert built.version is not None and built.version.active and built.count("ingested") == 1
            assert [v.seq for v in await c.versions("async-kb")] == [1]
            answer = await c.ask("When does the canteen open?", "async-kb")
            assert "11:30" in answer.answer and answer.kb_version == 1 and answer.citations[0].file == "a.md"
            with pytest.raises(LoreAPIError) as exc:
                await c.create_kb("async-kb")
            assert exc.value.status in (400, 409) and "async-kb" in exc.value.message
            await c.delete_kb("async-kb")

    asyncio.run(run())
    assert sent[-1] == (tmp_path / "a.md").stat().st_size and "file_done" in statuses


def test_get_document_reads_the_active_version_while_a_newer_one_is_staged(
    live: LiveServer, keys: Keys, tmp_path: Path
) -> None:
    doc = tmp_path / "gate.md"
    with LoreClient(live.url, keys.admin) as c:
        c.create_kb("doc-versions")
        doc.write_text("# Gate\n\nThe north gate closes at 20:00.\n", encoding="utf-8")
        c.upload("doc-versions", [doc])
        c.build("doc-versions", ["gate.md"], activate=True)
        doc.write_text("# Gate\n\nThe north gate now closes at 22:00.\n", encoding="utf-8")
        c.upload("doc-versions", [doc])
        assert c.build("doc-versions", ["gate.md"]).version.status == "staged"  # type: ignore[union-attr]
        active = c.get_document("doc-versions", "gate.md")
        staged = c.get_document("doc-versions", "gate.md", version=2)
        assert active.version == 1 and "20:00" in active.text and "22:00" not in active.text
        assert staged.version == 2 and "22:00" in staged.text
        hit = c.search("doc-versions", "when does the gate close").hits[0]
        assert "20:00" in c.get_passage("doc-versions", hit.chunk_id).text
    with LoreClient(live.url, keys.staff) as s, pytest.raises(LoreAPIError) as exc:
        s.get_document("doc-versions", "gate.md", version=2)
    assert exc.value.status == 403
