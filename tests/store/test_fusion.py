"""Rank fusion functions."""

import pytest

from lore.store.fusion import rrf


def test_rrf_matches_the_formula() -> None:
    fused = dict(rrf([["a", "b", "c"], ["c", "a"]], k=60))
    assert fused["a"] == pytest.approx(1 / 61 + 1 / 62)
    assert fused["c"] == pytest.approx(1 / 63 + 1 / 61)
    assert fused["b"] == pytest.approx(1 / 62)


def test_rrf_rewards_agreement_and_breaks_ties_by_first_seen() -> None:
    order = [key for key, _ in rrf([["x", "a"], ["y", "a"]], k=60)]
    assert order[0] == "a"  # in both lists
    assert order[1:] == ["x", "y"]  # equal scores: first seen first
