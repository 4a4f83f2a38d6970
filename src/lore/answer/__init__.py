"""Answers: context building, evidence judgement, generation, citations, verification."""
