"""Ranking metrics against hand-computed values."""

import math

import pytest

from lore.eval.metrics import mrr_at_k, ndcg_at_k, percentile, recall_at_k, unique_in_order


def test_ndcg_hand_computed() -> None:
    rel = {"d1": 1, "d3": 1}
    expected = (1 / math.log2(3)) / (1 + 1 / math.log2(3))  # hit at rank 2 only
    assert ndcg_at_k(["d2", "d1", "d9"], {"d1": 1, "d4": 1}, 10) == pytest.approx(expected)
    assert ndcg_at_k(["d1", "d3"], rel, 10) == pytest.approx(1.0)
    assert ndcg_at_k(["x"], rel, 10) == 0.0


def test_recall_and_mrr() -> None:
    rel = {"a": 1, "b": 1}
    assert recall_at_k(["a", "x", "b"], rel, 2) == 0.5
    assert recall_at_k(["a", "x", "b"], rel, 3) == 1.0
    assert mrr_at_k(["x", "y", "b"], rel, 10) == pytest.approx(1 / 3)
    assert mrr_at_k(["x", "y", "b"], rel, 2) == 0.0


def test_percentile_and_unique() -> None:
    assert percentile([1, 2, 3, 4], 50) == 2.5
    assert percentile([], 95) == 0.0
    assert unique_in_order(["a", "b", "a", "c", "b"]) == ["a", "b", "c"]
