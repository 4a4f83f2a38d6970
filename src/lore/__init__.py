"""Lore: enterprise knowledge-base question answering, offline by default."""

__version__ = "0.1.0"
