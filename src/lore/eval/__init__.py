"""Evaluation: BEIR-format datasets and ranking metrics."""
